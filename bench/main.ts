/**
 * `npm run bench [-- --json] [-- --only env,engine] [-- --rounds 3]` (`-- --help` lists the suites): throughput figures with stable
 * JSON keys (`--rounds`: PyTorch anchor runs the engine's ratios are the median over).
 * Speed is reported as ratios against a reference measured in the same run where one exists (the
 * PyTorch anchor for the engine); absolute figures depend on the machine.
 */
import { Command, InvalidArgumentError, Option } from "commander";
import { benchEnv } from "./env.ts";

const figures: Record<string, number | null> = {};
let rounds = 3;
const suites: Record<string, () => Promise<Record<string, number | null>>> = {
  env: benchEnv,
  engine: async () => (await import("./engine.ts")).benchEngine({ rounds }),
  rl: async () => (await import("./rl.ts")).benchRl(),
  eval: async () => (await import("./eval.ts")).benchEval(),
  // After eval and rl: their episodes/s against the PyTorch agent-loop reference.
  loop: async () => (await import("./agent-loop.ts")).benchAgentLoop(figures),
  "agent-server": async () => (await import("./agent-server.ts")).benchAgentServer(),
  // Bounded loopback load, good and hostile, on serve and the gateway (10 s warm-up + 10 s each).
  soak: async () => (await import("./soak.ts")).benchSoak(),
  "agent-eval": async () => (await import("./agent-eval.ts")).benchAgentEval(),
  // Hugging Face checkpoints (Qwen3 ~28M, SmolLM2-135M shape) against transformers.
  hf: async () => (await import("./hf.ts")).benchHf(),
  // LoRA GRPO and SFT steps against TRL (minutes of Python training): only with --only trl.
  trl: async () => (await import("./trl.ts")).benchTrl(),
};
/** Suites left out of a run without --only (too slow for the default set). */
const OPT_IN = new Set(["trl"]);

function positiveInteger(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1)
    throw new InvalidArgumentError(`must be a positive integer, got "${value}"`);
  return n;
}

function suiteList(value: string): string[] {
  const names = value.split(",");
  const unknown = names.filter((name) => !suites[name]);
  if (unknown.length > 0) {
    throw new InvalidArgumentError(
      `unknown suite "${unknown.join(", ")}"; valid: ${Object.keys(suites).join(", ")}`,
    );
  }
  return names;
}

// The same command-line library as `agentrl`: --help, and a bad flag or value as one line with
// exit code 2 (node:util's parseArgs threw a stack trace at `--help`).
const program = new Command()
  .name("npm run bench --")
  .description(
    "Throughput figures with stable JSON keys; speed as ratios against a reference measured in the same run.",
  )
  .addOption(new Option("--json", "print the figures as one JSON object").default(false))
  .addOption(
    new Option(
      "--only <suites>",
      `comma-separated suites to run: ${Object.keys(suites).join(", ")} (without it: all but ${[...OPT_IN].join(", ")})`,
    ).argParser(suiteList),
  )
  .addOption(
    new Option("--rounds <n>", "PyTorch anchor runs the engine's ratios are the median over")
      .default(3)
      .argParser(positiveInteger),
  )
  .allowExcessArguments(false)
  .configureOutput({ outputError: (message, write) => write(message.replace(/^error: /, "bench: ")) })
  .exitOverride((error) => {
    process.exit(error.exitCode === 0 ? 0 : 2);
  });
program.parse();
const values = program.opts<{ json: boolean; only?: string[]; rounds: number }>();
rounds = values.rounds;
const selected = values.only ?? Object.keys(suites).filter((name) => !OPT_IN.has(name));
for (const name of selected) {
  if (!values.json) process.stderr.write(`bench: ${name}…\n`);
  Object.assign(figures, await suites[name]());
}
if (values.json) {
  console.log(JSON.stringify(figures));
} else {
  for (const [key, value] of Object.entries(figures)) {
    console.log(`${key.padEnd(28)} ${value === null ? "n/a" : Number(value.toPrecision(4))}`);
  }
}
