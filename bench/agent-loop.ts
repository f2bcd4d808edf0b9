/**
 * The whole loop against the PyTorch agent-loop reference (`../shared/anchors/agent-loop-reference/`,
 * Debian's python3-torch): its pass@k evaluation (`evalpk.py`) and GRPO step (`grpo.py`, 16 tasks ×
 * groups of 8) run right after our `eval` and `rl` suites, and the ratios are ours divided by its.
 * Its world is simpler than ours (exact-name search, four families, episodes up to 128 tokens;
 * ours run to 256), so the ratios compare loops, not identical work.
 *
 * The reference needs a trained base for realistic episodes: the first run pretrains one with its
 * own `pretrain.py 1200 2e-3 64` (about 7 minutes on this machine) and keeps it in
 * `.agentrl/bench/agent-loop-base.pt`; later runs reuse it. Null figures without PyTorch.
 */
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);
const REFERENCE = fileURLToPath(new URL("../../shared/anchors/agent-loop-reference/", import.meta.url));
const PYTHON = "/usr/bin/python3";
const CACHE = ".agentrl/bench";
const BASE = join(CACHE, "agent-loop-base");

async function python(args: string[], cwd: string): Promise<string> {
  const { stdout } = await run(PYTHON, args, {
    cwd,
    env: { ...process.env, OPENBLAS_NUM_THREADS: "2" },
    timeout: 30 * 60 * 1000,
    maxBuffer: 64 * 2 ** 20,
  });
  return stdout;
}

async function torchAvailable(): Promise<boolean> {
  if (!existsSync(PYTHON) || !existsSync(join(REFERENCE, "common.py"))) return false;
  try {
    await run(PYTHON, ["-c", "import torch"]);
    return true;
  } catch {
    return false;
  }
}

/** Reference episodes per second in evaluation and in GRPO steps (steps after the first). */
export async function referenceLoop(): Promise<{ eval: number; rl: number } | null> {
  if (!(await torchAvailable())) return null;
  mkdirSync(CACHE, { recursive: true });
  const base = `${join(process.cwd(), BASE)}.pt`;
  if (!existsSync(base)) {
    process.stderr.write("bench: pretraining the agent-loop reference's base once (about 7 min)…\n");
    await python(
      [join(REFERENCE, "pretrain.py"), "1200", "2e-3", "64", join(process.cwd(), BASE), "1200"],
      REFERENCE,
    );
  }
  const scratch = mkdtempSync(join(tmpdir(), "agentrl-bench-loop-"));
  try {
    const out = join(scratch, "pk.json");
    await python([join(REFERENCE, "evalpk.py"), base, "32", "8", out], REFERENCE);
    const meta = JSON.parse(readFileSync(out, "utf8"))._meta as { eps_per_s: number };
    const grpo = await python(
      [
        join(REFERENCE, "grpo.py"),
        "--init",
        base,
        "--out",
        join(scratch, "grpo"),
        "--steps",
        "4",
        "--save_every",
        "100",
      ],
      REFERENCE,
    );
    const steps = grpo
      .trim()
      .split("\n")
      .filter((line) => line.startsWith("{"))
      // Python's json writes NaN for a family absent from a step.
      .map((line) => JSON.parse(line.replaceAll(/\bNaN\b/g, "null")) as { step: number; step_s: number });
    const timed = steps.filter((step) => step.step > 1);
    const seconds = timed.reduce((sum, step) => sum + step.step_s, 0);
    return { eval: meta.eps_per_s, rl: (timed.length * 16 * 8) / seconds };
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
