/**
 * `npm run bench [-- --json] [-- --only env,engine] [-- --rounds 3]`: throughput figures with stable
 * JSON keys (`--rounds`: PyTorch anchor runs the engine's ratios are the median over).
 * Speed is reported as ratios against a reference measured in the same run where one exists (the
 * PyTorch anchor for the engine); absolute figures depend on the machine.
 */
import { parseArgs } from "node:util";
import { benchEnv } from "./env.ts";

const { values } = parseArgs({
  options: {
    json: { type: "boolean", default: false },
    only: { type: "string" },
    rounds: { type: "string", default: "3" },
  },
});
const rounds = Number(values.rounds);
if (!Number.isInteger(rounds) || rounds < 1) {
  console.error(`bench: --rounds must be a positive integer, got "${values.rounds}"`);
  process.exit(2);
}
const figures: Record<string, number | null> = {};
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
};
const selected = values.only ? values.only.split(",") : Object.keys(suites);
for (const name of selected) {
  if (!suites[name]) {
    console.error(`bench: unknown suite "${name}"; valid: ${Object.keys(suites).join(", ")}`);
    process.exit(2);
  }
}
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
