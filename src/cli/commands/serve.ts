/**
 * `agentrl serve`: an OpenAI-compatible chat-completions endpoint over a checkpoint or a scripted
 * policy, so any OpenAI client (and `--policy openai:<url>#<model>` here) can use our models.
 */
import { basename, resolve } from "node:path";
import type { Command } from "commander";
import { resolvePolicy } from "../../policy/resolve.ts";
import { SCRIPTED_POLICY_NAMES } from "../../policy/scripted/index.ts";
import { SERVE_DEFAULTS, startChatServer } from "../../serve/server.ts";
import { worldTaskResolver } from "../../serve/world-tasks.ts";
import { addServerOptions, parseNumber, serverOptions } from "./options.ts";

export function register(program: Command): void {
  const command = program
    .command("serve")
    .description(
      "serve a text-protocol policy (checkpoint directory or scripted name) or a Hugging Face " +
        "checkpoint (hf:<folder>, its own chat template) as an OpenAI-compatible " +
        "chat-completions API: POST /v1/chat/completions, GET /v1/models",
    );
  addServerOptions(command, {
    host: SERVE_DEFAULTS.host,
    port: SERVE_DEFAULTS.port,
    tokenEnv: "AGENTRL_SERVE_TOKEN",
  })
    .requiredOption(
      "--policy <policy>",
      `checkpoint directory, hf:<folder> (a Hugging Face checkpoint) or scripted policy (${SCRIPTED_POLICY_NAMES.join(", ")})`,
    )
    .option("--model-name <name>", "model name clients send (default: the checkpoint folder or policy name)")
    .option("--temperature <t>", "temperature when a request omits it", String(SERVE_DEFAULTS.temperature))
    .option("--top-p <p>", "top_p when a request omits it", String(SERVE_DEFAULTS.topP))
    .option("--max-tokens <n>", "max_tokens when a request omits it", String(SERVE_DEFAULTS.maxTokens))
    .option(
      "--max-batch <n>",
      "most contexts decoded together across concurrent requests",
      String(SERVE_DEFAULTS.maxBatch),
    )
    .option("--max-n <n>", "largest n (samples per request)", String(SERVE_DEFAULTS.maxN))
    .option("--json", "print {url, model, policy} as JSON once listening")
    .action(async (options) => {
      const listen = serverOptions(options, "AGENTRL_SERVE_TOKEN");
      const spec: string = options.policy;
      const model =
        options.modelName ?? (SCRIPTED_POLICY_NAMES.includes(spec as never) ? spec : basename(resolve(spec)));
      const server = await startChatServer({
        loadPolicy: (sampling) => resolvePolicy(spec, sampling),
        model,
        ...listen,
        defaults: {
          temperature: parseNumber("--temperature", options.temperature, { min: 0, max: 2 }),
          topP: parseNumber("--top-p", options.topP, { min: 0, max: 1 }),
          maxTokens: parseNumber("--max-tokens", options.maxTokens, { integer: true, min: 1 }),
        },
        maxBatch: parseNumber("--max-batch", options.maxBatch, { integer: true, min: 1 }),
        maxN: parseNumber("--max-n", options.maxN, { integer: true, min: 1 }),
        resolveTask: worldTaskResolver(),
      });
      if (options.json) console.log(JSON.stringify({ url: server.url, model, policy: spec }));
      else {
        console.error(
          `serving ${spec} as model "${model}" at ${server.url}${listen.token ? " (bearer token required)" : ""}`,
        );
        console.error("Ctrl-C to stop");
      }
      await new Promise<void>((done) => {
        const stop = () => {
          process.off("SIGINT", stop);
          process.off("SIGTERM", stop);
          void server.close().then(done);
        };
        process.on("SIGINT", stop);
        process.on("SIGTERM", stop);
      });
    });
}
