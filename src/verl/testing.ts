/**
 * Test helpers for verl's side without verl or a GPU: the Python driver that runs agentrl's agent
 * loop inside the verl double's AgentLoopWorker (testdata/drive_agent_loop.py, testdata/verl-double),
 * and the fake vLLM OpenAI server (testdata/fake_vllm.py). Python is `python3` (or
 * $AGENTRL_TEST_PYTHON); the double and the fake need the standard library only.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";

export const PYTHON = process.env.AGENTRL_TEST_PYTHON ?? "python3";
export const DOUBLE = resolve(import.meta.dirname, "testdata/verl-double");
/** The agent loop's folder ($AGENTRL_TEST_LOOP_DIR runs the tests against another copy, e.g. an old one). */
export const LOOP_DIR = process.env.AGENTRL_TEST_LOOP_DIR ?? resolve(import.meta.dirname, "python");
const DRIVER = resolve(import.meta.dirname, "testdata/drive_agent_loop.py");
const FAKE_VLLM = resolve(import.meta.dirname, "testdata/fake_vllm.py");

/** The verl versions the double reproduces (verl-double/verl/__init__.py). */
export const DOUBLE_VERSIONS = ["0.7.0", "0.7.1", "0.8.0", "0.9.0", "main"] as const;
export type DoubleVersion = (typeof DOUBLE_VERSIONS)[number];

export interface PythonOutput {
  prompt_ids: number[];
  response_ids: number[];
  response_mask: number[];
  response_logprobs: number[] | null;
  multi_modal_data: Record<string, unknown> | null;
  reward_score: number;
  num_turns: number;
  metrics: { generate_sequences: number; tool_calls: number };
  extra_fields: {
    turn_scores: number[];
    turn_spans: [number, number][];
    outcome_terms: Record<string, number | null> | null;
    turn_terms: Record<string, unknown> | null;
    agentrl_episode_id: string;
    agentrl_correct: boolean;
    agentrl_end_reason: string;
    agentrl_error: string | null;
    agentrl_failure_class: string;
    agentrl_failure_code: string;
    agentrl_prefix_breaks: number;
    agentrl_truncated: boolean;
    reward_extra_info: Record<string, number | string>;
  };
}

export interface DriverResult {
  outputs: PythonOutput[];
  acquired: number;
  released: number;
  batch: {
    size: number;
    non_tensor_keys: string[];
    reward_extra_keys: string[] | null;
    rm_scores: number[][] | null;
    response_mask: number[][];
    advantages?: number[][];
  };
}

function runPython(
  args: string[],
  input: string,
  env: Record<string, string>,
): Promise<{ stdout: string; stderr: string }> {
  return new Promise((done, fail) => {
    const child = spawn(PYTHON, args, {
      env: { ...process.env, PYTHONDONTWRITEBYTECODE: "1", ...env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
    });
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    child.on("error", (error: NodeJS.ErrnoException) =>
      fail(
        error.code === "ENOENT"
          ? new Error(`${PYTHON} not found: these tests run Python (python3), or set AGENTRL_TEST_PYTHON`)
          : error,
      ),
    );
    child.on("close", (code) => {
      if (code !== 0) return fail(new Error(`python exited ${code}:\n${stderr}`));
      done({ stdout, stderr });
    });
    child.stdin.end(input);
  });
}

/** Runs the driver under the double of `version` (loop folder first on the path, as the job's PYTHONPATH). */
export async function runDriver(
  input: unknown,
  options: {
    version?: DoubleVersion;
    transformers?: 4 | 5;
    loopDir?: string;
    env?: Record<string, string>;
  } = {},
): Promise<DriverResult> {
  const { stdout } = await runPython([DRIVER], JSON.stringify(input), {
    PYTHONPATH: `${DOUBLE}:${options.loopDir ?? LOOP_DIR}`,
    VERL_DOUBLE_VERSION: options.version ?? "0.7.1",
    ...(options.transformers ? { VERL_DOUBLE_TRANSFORMERS: String(options.transformers) } : {}),
    ...options.env,
  });
  // The last line: the job's estimator logs each step's metrics on stdout before it.
  return JSON.parse(stdout.trim().split("\n").at(-1) ?? "null");
}

/** Runs a Python snippet with the double and the loop folder on the path. */
export async function runWithDouble(
  code: string,
  input: unknown,
  options: { version?: DoubleVersion; loopDir?: string; env?: Record<string, string> } = {},
): Promise<string> {
  const { stdout } = await runPython(["-c", code], JSON.stringify(input), {
    PYTHONPATH: `${DOUBLE}:${options.loopDir ?? LOOP_DIR}`,
    VERL_DOUBLE_VERSION: options.version ?? "0.7.1",
    ...options.env,
  });
  return stdout;
}

export interface FakeVllmSpec {
  model?: string;
  /** vLLM version: token ids only from 0.10.2. */
  version?: string;
  /** question → the answer the fake gives on even seeds. */
  answers?: Record<string, string>;
  /** Questions answered 503. */
  fail?: string[];
  /** The loopback address it listens on (default 127.0.0.1). */
  host?: string;
}

/** Starts the fake vLLM server with `vllm serve` flags; `address` is "<host>:port". */
export async function startFakeVllm(
  specPath: string,
  flags: readonly string[] = [],
): Promise<{ address: string; close(): void }> {
  const child = spawn(PYTHON, [FAKE_VLLM, specPath, ...flags], { stdio: ["ignore", "pipe", "pipe"] });
  const port = await new Promise<number>((done, fail) => {
    let text = "";
    let stderr = "";
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    child.stdout.on("data", (chunk) => {
      text += chunk;
      const match = /port (\d+)/.exec(text);
      if (match) done(Number(match[1]));
    });
    child.on("error", fail);
    child.on("close", (code) => fail(new Error(`fake vLLM exited ${code}: ${stderr}`)));
  });
  const { host } = JSON.parse(readFileSync(specPath, "utf8")) as FakeVllmSpec;
  return { address: `${host ?? "127.0.0.1"}:${port}`, close: () => child.kill() };
}
