/**
 * Runs the bench's PyTorch references (bench/torch/*.py) when PyTorch is installed. The
 * interpreter is `AGENTRL_BENCH_PYTHON` if set, else `python3` on the PATH; without PyTorch the
 * reference figures are null and the bench says once how to install it.
 */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);

/** The folder of the reference scripts. */
export const TORCH_REFERENCES = fileURLToPath(new URL("./torch/", import.meta.url));

export const TORCH_INSTALL_HINT =
  "bench: PyTorch is not installed, so the reference figures are null. Install it with " +
  "`apt-get install python3-torch libopenblas0-pthread` (Debian) or " +
  "`pip install torch --index-url https://download.pytorch.org/whl/cpu`, " +
  "or point AGENTRL_BENCH_PYTHON at a Python that has it.";

export function benchPython(): string {
  return process.env.AGENTRL_BENCH_PYTHON || "python3";
}

/** The oldest PyTorch the references run on (bench/torch/torch_compat.py: before 2.0 without SDPA). */
export const TORCH_MINIMUM = [1, 13] as const;

/**
 * Why a PyTorch version cannot run the references, or null when it can: "2.3.1+cpu" and
 * "1.13.0a0+git" can, "1.12.1" cannot (the same rule as torch_compat.py's `require_torch`).
 */
export function torchVersionProblem(version: string): string | null {
  const [major, minor] = version
    .split("+")[0]
    .split(".")
    .map((part) => Number.parseInt(part.replace(/\D.*$/, ""), 10) || 0);
  const [wantMajor, wantMinor] = TORCH_MINIMUM;
  if (major > wantMajor || (major === wantMajor && (minor ?? 0) >= wantMinor)) return null;
  return (
    `bench: PyTorch ${version} is too old for the reference figures (null): they need PyTorch >= ` +
    `${wantMajor}.${wantMinor}. Upgrade it (\`pip install torch --index-url https://download.pytorch.org/whl/cpu\`) ` +
    "or point AGENTRL_BENCH_PYTHON at a Python that has a newer one."
  );
}

let available: Promise<boolean> | undefined;

/** Whether the interpreter imports a recent enough torch (asked once per process; the hint is printed once). */
export function torchAvailable(): Promise<boolean> {
  available ??= run(benchPython(), ["-c", "import torch; print(torch.__version__)"]).then(
    ({ stdout }) => {
      const problem = torchVersionProblem(stdout.trim());
      if (problem) process.stderr.write(`${problem}\n`);
      return problem === null;
    },
    () => {
      process.stderr.write(`${TORCH_INSTALL_HINT}\n`);
      return false;
    },
  );
  return available;
}

/**
 * Runs `bench/torch/<script>` with `args` and returns its stdout. Two BLAS threads: on two cores
 * one torch thread with a two-thread OpenBLAS was PyTorch's fastest setting.
 */
export async function runTorchReference(
  script: string,
  args: string[],
  timeoutMinutes: number,
): Promise<string> {
  const { stdout } = await run(benchPython(), ["-W", "ignore", `${TORCH_REFERENCES}${script}`, ...args], {
    env: { ...process.env, OPENBLAS_NUM_THREADS: "2" },
    timeout: timeoutMinutes * 60 * 1000,
    maxBuffer: 64 * 2 ** 20,
  });
  return stdout;
}
