/**
 * `agentrl verify`: our answer verifiers as a service.
 *
 *   agentrl verify serve --verifier math --port 8301 --token s3cret
 *   agentrl verify serve --verifier world                      → the embedded world's answer check
 *   agentrl verify serve --verifier em --tasks qa.jsonl        → requests may name a task_id
 *
 * POST /verify { answer, task | task_id | ground_truth, verifier? } → { correct, score, verifier,
 * task_id } (src/verify/serve.ts). Binds 127.0.0.1 by default; the token may also come from
 * AGENTRL_VERIFY_TOKEN. verl's `compute_score` from `agentrl verl init --mode tool` calls it.
 */
import type { Command } from "commander";
import { readTaskFile } from "../../tasks/index.ts";
import { SERVED_VERIFIERS, type ServedVerifierName, serveVerify } from "../../verify/serve.ts";
import { addServerOptions, parseChoice, serverOptions } from "./options.ts";

export function register(program: Command): void {
  const verify = program.command("verify").description("score answers with agentrl's verifiers");
  const serve = verify
    .command("serve")
    .description("serve the verifiers over HTTP (POST /verify), for verl's compute_score");
  addServerOptions(serve, { port: 8301, tokenEnv: "AGENTRL_VERIFY_TOKEN" })
    .requiredOption("--verifier <name>", `default verifier (${SERVED_VERIFIERS.join(", ")})`)
    .option("--tasks <file>", "task file whose tasks requests may name by task_id")
    .action(
      async (options: {
        verifier: string;
        tasks?: string;
        host: string;
        port: string;
        token?: string;
        insecure?: boolean;
        allowHost?: string[];
      }) => {
        const verifier = parseChoice<ServedVerifierName>("--verifier", options.verifier, SERVED_VERIFIERS);
        const listen = serverOptions(options, "AGENTRL_VERIFY_TOKEN");
        const token = listen.token;
        const tasks = options.tasks ? await readTaskFile(options.tasks) : undefined;
        const running = await serveVerify({ verifier, ...listen, ...(tasks ? { tasks } : {}) });
        console.error(
          `agentrl verify: ${verifier} at ${running.url}/verify${tasks ? ` (${tasks.length} tasks)` : ""}${token ? " (bearer token required)" : ""}`,
        );
        await new Promise<void>((resolve) => {
          const stop = () => void running.close().then(resolve);
          process.once("SIGINT", stop);
          process.once("SIGTERM", stop);
        });
      },
    );
}
