/**
 * What `verl init` writes for each verl version and choice: the vLLM tool flags, the estimator and
 * its setup hook, the per-version pins checked by the preflight, the prompt-length check with the
 * tool schemas, and the README's run ids.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { promisify } from "node:util";
import { register as registerVerl } from "../cli/commands/verl.ts";
import { runCli } from "../cli/testing.ts";
import { DEFAULT_SYSTEM_PROMPT } from "../policy/openai/messages.ts";
import { toolSpec, worldTools } from "../tools/index.ts";
import type { Task } from "../types/task.ts";
import { generateWorld } from "../world/index.ts";
import { type VerlInitOptions, verlInit } from "./init.ts";
import { estimatePromptTokens } from "./prompt-length.ts";
import { PYTHON } from "./testing.ts";
import { VERL_VERSIONS } from "./versions.ts";

const run = promisify(execFile);
const root = mkdtempSync(join(tmpdir(), "agentrl-verl-init-"));
after(() => rmSync(root, { recursive: true, force: true }));

const tasks: Task[] = [
  { id: "a", question: "Who founded Mipa?", answer: "Ona", family: "lookup" },
  { id: "b", question: "When was Ona born?", answer: "1901", family: "lookup" },
];
const tools = worldTools(generateWorld(0)).map(toolSpec);
let jobs = 0;

function init(options: Partial<VerlInitOptions> = {}) {
  const out = join(root, `job-${jobs++}`);
  verlInit({
    train: tasks.slice(0, 1),
    val: tasks.slice(1),
    verifier: "world",
    tasksSource: "world",
    model: "Qwen/Qwen3-4B",
    out,
    verlVersion: "0.7",
    mode: "agent",
    promptTools: tools,
    ...options,
  });
  return {
    out,
    script: readFileSync(join(out, "run_grpo.sh"), "utf8"),
    readme: readFileSync(join(out, "README.md"), "utf8"),
  };
}

test("agent mode: vLLM gets the tool flags (verl builds its flags from engine_kwargs.vllm); the parser is a flag", () => {
  const { script } = init();
  assert.ok(script.includes("+actor_rollout_ref.rollout.engine_kwargs.vllm.enable_auto_tool_choice=True"));
  assert.ok(script.includes("+actor_rollout_ref.rollout.engine_kwargs.vllm.tool_call_parser=hermes"));
  assert.match(init({ toolCallParser: "llama3_json" }).script, /vllm\.tool_call_parser=llama3_json \\/);
  assert.throws(
    () => init({ toolCallParser: "hermes; rm -rf /" }),
    /tool call parser must be a vLLM parser name/,
  );
  // Tool mode runs verl's own tool_agent, which parses tool calls itself from token ids.
  const tool = init({ mode: "tool", verlVersion: "0.8", tools, promptTools: undefined });
  assert.ok(!tool.script.includes("enable_auto_tool_choice"));
});

test("the estimator: agentrl's MT-GRPO by default, GRPO on request, registered by the Ray worker setup hook", () => {
  const { script, out } = init();
  assert.match(script, /algorithm\.adv_estimator=agentrl_mt_grpo \\/);
  assert.match(
    script,
    /\+ray_kwargs\.ray_init\.runtime_env\.worker_process_setup_hook=agentrl_adv_estimator\.install/,
  );
  // Ray's runtime_env takes string env_vars only: each value is quoted for Hydra.
  const envVars = script.split("\n").filter((line) => line.includes("runtime_env.env_vars."));
  assert.equal(envVars.length, 4);
  for (const line of envVars) assert.match(line, /="'[^']+'" \\$/, line);
  assert.match(script, /AGENTRL_MAX_INFRA_FAILURE_RATE="\$\{AGENTRL_MAX_INFRA_FAILURE_RATE:-0\.2\}"/);
  assert.ok(readFileSync(join(out, "agentrl_adv_estimator.py"), "utf8").includes("def install()"));
  const grpoJob = init({ estimator: "grpo", maxInfraFailureRate: 0.05 }).script;
  assert.match(grpoJob, /algorithm\.adv_estimator=agentrl_grpo \\/);
  assert.match(grpoJob, /AGENTRL_MAX_INFRA_FAILURE_RATE:-0\.05\}/);
  const tool = init({ mode: "tool", verlVersion: "0.8", tools });
  assert.match(tool.script, /algorithm\.adv_estimator=grpo \\/);
  assert.ok(!tool.script.includes("worker_process_setup_hook"));
  assert.throws(
    () => init({ mode: "tool", verlVersion: "0.8", tools, estimator: "mt-grpo" }),
    /--estimator applies to agent mode/,
  );
  assert.throws(() => init({ maxInfraFailureRate: 2 }), /threshold must lie in \[0, 1\], got 2/);
});

test("each verl version: its pins in the launch script and README, its trainer switch, a script bash accepts", async () => {
  const expected = {
    "0.7": { vllm: ">=0.10.2,<=0.12.0", transformers: 4, v1: false },
    "0.8": { vllm: ">=0.10.2,<=0.12.0", transformers: 4, v1: false },
    "0.9": { vllm: ">=0.18.0", transformers: 5, v1: true },
    main: { vllm: ">=0.18.0", transformers: 5, v1: true },
  } as const;
  for (const version of VERL_VERSIONS) {
    const { script, readme, out } = init({ verlVersion: version });
    const want = expected[version];
    assert.ok(script.includes(`--vllm '${want.vllm}' --transformers-major ${want.transformers}`), version);
    assert.ok(readme.includes(`\`vllm${want.vllm}\``), version);
    assert.equal(script.includes("trainer.use_v1=False"), want.v1, version);
    assert.ok(readme.includes("runs/verl-validation-step0 runs/verl-validation-step<N>"), version);
    assert.ok(!readme.includes("verl-val-step"), version);
    await run("bash", ["-n", join(out, "run_grpo.sh")]);
  }
});

test("the preflight refuses a vLLM without token ids and a transformers of the wrong major; accepts the pinned set", async () => {
  const { out } = init({ verlVersion: "0.7" });
  const site = (name: string, versions: Record<string, string>) => {
    const dir = join(root, name);
    for (const [pkg, version] of Object.entries(versions)) {
      const info = join(dir, `${pkg}-${version}.dist-info`);
      mkdirSync(info, { recursive: true });
      writeFileSync(join(info, "METADATA"), `Metadata-Version: 2.1\nName: ${pkg}\nVersion: ${version}\n`);
    }
    return dir;
  };
  const preflight = (dir: string) =>
    run(
      PYTHON,
      [
        join(out, "agentrl_preflight.py"),
        "--verl",
        ">=0.7.0,<0.8",
        "--vllm",
        ">=0.10.2,<=0.12.0",
        "--transformers-major",
        "4",
      ],
      { env: { ...process.env, PYTHONPATH: dir, PYTHONNOUSERSITE: "1" } },
    );
  await preflight(site("good", { verl: "0.7.1", vllm: "0.11.0", transformers: "4.57.1" }));
  await assert.rejects(
    preflight(site("old-vllm", { verl: "0.7.1", vllm: "0.9.2", transformers: "4.57.1" })),
    /vllm 0\.9\.2 is installed; the job needs vllm>=0\.10\.2,<=0\.12\.0/,
  );
  await assert.rejects(
    preflight(site("tf5", { verl: "0.7.1", vllm: "0.12.0", transformers: "5.6.1" })),
    /transformers 5\.6\.1 is installed; this verl\/vLLM pair runs on transformers 4\.x/,
  );
});

test("prompt length with the tool schemas is checked at init: verl would raise mid-training", () => {
  // The question alone fits in 700 tokens; with the world's tool schemas the prompt may not.
  const long: Task = { id: "long", question: "Which of these? ".repeat(60), answer: "x", family: "lookup" };
  const withTools = estimatePromptTokens(DEFAULT_SYSTEM_PROMPT, long.question, tools);
  const without = estimatePromptTokens(DEFAULT_SYSTEM_PROMPT, long.question, []);
  assert.ok(without <= 700 && withTools > 700, `${without} / ${withTools} tokens`);
  assert.throws(
    () => init({ train: [long], val: tasks, maxPromptLength: 700 }),
    new RegExp(
      `task long's prompt may take up to ${withTools} tokens with the 2 tool schemas.*Give --max-prompt-length \\d+`,
    ),
  );
  init({ train: [long], val: tasks, maxPromptLength: 1024 });
  // The estimate errs long: more than the characters' count over 4.
  const chars = DEFAULT_SYSTEM_PROMPT.length + long.question.length;
  assert.ok(without > chars / 4);
});

test("verl init CLI: --estimator, --tool-call-parser and --max-infra-failure-rate reach the job; bad values name the valid ones", async () => {
  const file = join(root, "math.jsonl");
  writeFileSync(
    file,
    `${JSON.stringify({ id: "m1", question: "What is 2+2?", answer: "4" })}\n${JSON.stringify({ id: "m2", question: "What is 3*3?", answer: "9" })}\n`,
  );
  const cli = (args: string[]) =>
    runCli(registerVerl, [
      "verl",
      "init",
      "--tasks",
      file,
      "--verifier",
      "math",
      "--model",
      "m",
      "--no-doctor",
      ...args,
    ]);
  await assert.rejects(
    cli(["--out", join(root, "cli-bad"), "--estimator", "ppo"]),
    /--estimator must be one of mt-grpo, grpo/,
  );
  const out = join(root, "cli-math");
  await cli([
    "--out",
    out,
    "--estimator",
    "grpo",
    "--tool-call-parser",
    "qwen3_coder",
    "--max-infra-failure-rate",
    "0.1",
  ]);
  const script = readFileSync(join(out, "run_grpo.sh"), "utf8");
  assert.match(script, /algorithm\.adv_estimator=agentrl_grpo \\/);
  assert.match(script, /vllm\.tool_call_parser=qwen3_coder \\/);
  assert.match(script, /AGENTRL_MAX_INFRA_FAILURE_RATE:-0\.1\}/);
});
