/**
 * The whole loop against a PyTorch reference (bench/torch/agent_loop_reference.py): its pass@k
 * evaluation and its GRPO steps (16 tasks × groups of 8) run right after our `eval` and `rl`
 * suites, and the ratios are ours divided by its. Its world is simpler than ours (exact-name
 * search, four families, episodes up to 128 tokens; ours run to 256), so the ratios compare
 * loops, not identical work.
 *
 * The reference needs a trained base for realistic episodes: the first run pretrains one (1200
 * steps, about 20 minutes of CPU on two cores) and keeps it in `.agentrl/bench/`; later runs reuse
 * it. Null figures without PyTorch (torch-reference.ts says how to install it).
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { runTorchReference, torchAvailable } from "./torch-reference.ts";

const SCRIPT = "agent_loop_reference.py";
const BASE = resolve(".agentrl/bench/agent-loop-reference-base.pt");
/** GRPO steps timed after the first (which warms up): each 16 tasks × 8 episodes. */
const GRPO_STEPS = 4;
const EPISODES_PER_STEP = 16 * 8;

/** Reference episodes per second in evaluation and in GRPO steps (steps after the first). */
export async function referenceLoop(): Promise<{ eval: number; rl: number } | null> {
  if (!(await torchAvailable())) return null;
  if (!existsSync(BASE)) {
    mkdirSync(join(BASE, ".."), { recursive: true });
    process.stderr.write(
      "bench: pretraining the agent-loop reference's base once (about 20 min on 2 cores)…\n",
    );
    await runTorchReference(SCRIPT, ["pretrain", "--steps", "1200", "--out", BASE], 90);
  }
  const scratch = mkdtempSync(join(tmpdir(), "agentrl-bench-loop-"));
  try {
    const out = join(scratch, "eval.json");
    await runTorchReference(
      SCRIPT,
      ["eval", "--checkpoint", BASE, "--tasks", "32", "--samples", "8", "--out", out],
      30,
    );
    const evaluation = JSON.parse(readFileSync(out, "utf8")) as { episodes_per_s: number };
    const stdout = await runTorchReference(
      SCRIPT,
      ["grpo", "--checkpoint", BASE, "--steps", String(GRPO_STEPS)],
      30,
    );
    const steps = stdout
      .trim()
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line) as { step: number; seconds: number });
    const timed = steps.filter((step) => step.step > 1);
    const seconds = timed.reduce((sum, step) => sum + step.seconds, 0);
    return { eval: evaluation.episodes_per_s, rl: (timed.length * EPISODES_PER_STEP) / seconds };
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** Ratios of our eval and RL episodes/s (figures of the suites run before) to the reference's. */
export async function benchAgentLoop(
  figures: Record<string, number | null>,
): Promise<Record<string, number | null>> {
  const reference = await referenceLoop();
  const ratio = (ours: number | null | undefined, theirs: number | undefined) =>
    ours && theirs ? ours / theirs : null;
  return {
    agent_loop_eval_episodes_per_s: reference?.eval ?? null,
    agent_loop_rl_episodes_per_s: reference?.rl ?? null,
    eval_vs_agent_loop: ratio(figures.eval_episodes_per_s, reference?.eval),
    rl_vs_agent_loop: ratio(figures.rl_episodes_per_s, reference?.rl),
  };
}
