/**
 * `agentrl verl init` / `verl import` / `verify serve`, checked by readers independent of the
 * writers: DuckDB reads the parquet back against verl's RL schema, Debian's python3 runs the job's
 * Python files against our live services, and a verl-format dump of an in-process eval imports to
 * the same pass@k.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { promisify } from "node:util";
import { DuckDBInstance } from "@duckdb/node-api";
import { register as registerVerl } from "../cli/commands/verl.ts";
import { runCli } from "../cli/testing.ts";
import { rolloutTasks } from "../env/task-set.ts";
import { evaluate } from "../eval/run-eval.ts";
import { serveHttp } from "../mcp/index.ts";
import { DEFAULT_SYSTEM_PROMPT } from "../policy/openai/messages.ts";
import { scriptedPolicy } from "../policy/scripted/index.ts";
import { openRunDirectory } from "../store/index.ts";
import { toolSpec, worldTools } from "../tools/index.ts";
import type { Task } from "../types/task.ts";
import { serveVerify } from "../verify/serve.ts";
import { generateWorld } from "../world/index.ts";
import { parseEpisodeRequest } from "./agent-server-request.ts";
import { importVerlDumps, taskMatcher } from "./import.ts";
import { verlInit } from "./init.ts";

const run = promisify(execFile);
const root = mkdtempSync(join(tmpdir(), "agentrl-verl-"));
after(() => rmSync(root, { recursive: true, force: true }));

async function duck(sql: string): Promise<Record<string, unknown>[]> {
  const instance = await DuckDBInstance.create(":memory:");
  const connection = await instance.connect();
  try {
    return (await connection.runAndReadAll(sql)).getRowObjectsJson() as Record<string, unknown>[];
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

/** Tasks whose fields differ from row to row (as a struct column, each would gain the others' as nulls). */
const fileTasks: Task[] = [
  { id: "t1", question: "What is 6 * 7?", answer: "42", family: "arith" },
  { id: "t2", question: "Capital of France?", answer: "Paris", aliases: ["paris"], family: "geo" },
  {
    id: "t3",
    question: "Largest planet?",
    answer: "Jupiter",
    family: "astro",
    metadata: { source: "quiz", level: 2 },
  },
  { id: "t4", question: "2 + 2?", answer: "4", family: "arith", systemPrompt: "Answer with a number." },
];

test("verl init: the parquet reads back (DuckDB) in verl's RL schema, tasks exactly as written", async () => {
  const out = join(root, "job-agent");
  verlInit({
    train: fileTasks.slice(0, 3),
    val: fileTasks.slice(3),
    verifier: "em",
    tasksSource: "quiz.jsonl",
    model: "Qwen/Qwen3-4B",
    out,
    verlVersion: "0.7",
    mode: "agent",
  });
  const file = join(out, "data", "train.parquet");
  const types = Object.fromEntries(
    (await duck(`DESCRIBE SELECT * FROM read_parquet('${file}')`)).map((row) => [
      row.column_name,
      row.column_type,
    ]),
  );
  assert.deepEqual(types, {
    data_source: "VARCHAR",
    agent_name: "VARCHAR",
    prompt: 'STRUCT("role" VARCHAR, "content" VARCHAR)[]',
    ability: "VARCHAR",
    reward_model: "STRUCT(style VARCHAR, ground_truth VARCHAR)",
    extra_info:
      'STRUCT(split VARCHAR, "index" BIGINT, agentrl STRUCT(task_id VARCHAR, task VARCHAR, verifier VARCHAR))',
  });
  const rows = await duck(`SELECT * FROM read_parquet('${file}')`);
  assert.equal(rows.length, 3);
  rows.forEach((row, i) => {
    const task = fileTasks[i];
    assert.equal(row.agent_name, "agentrl_agent");
    assert.equal(row.data_source, `agentrl/${task.family}`);
    assert.deepEqual(row.prompt, [
      { role: "system", content: DEFAULT_SYSTEM_PROMPT },
      { role: "user", content: task.question },
    ]);
    assert.deepEqual(row.reward_model, { style: "rule", ground_truth: task.answer });
    const extra = row.extra_info as { split: string; index: string; agentrl: Record<string, string> };
    assert.equal(extra.split, "train");
    assert.equal(Number(extra.index), i);
    assert.equal(extra.agentrl.task_id, task.id);
    assert.equal(extra.agentrl.verifier, "em");
    // No field of another task appears, not even as null.
    assert.deepEqual(JSON.parse(extra.agentrl.task), task);
  });
  const [val] = await duck(`SELECT prompt FROM read_parquet('${join(out, "data", "val.parquet")}')`);
  assert.deepEqual((val.prompt as { content: string }[])[0].content, "Answer with a number.");
  const script = readFileSync(join(out, "run_grpo.sh"), "utf8");
  for (const override of [
    "algorithm.adv_estimator=agentrl_mt_grpo",
    "+actor_rollout_ref.rollout.engine_kwargs.vllm.enable_auto_tool_choice=True",
    "+actor_rollout_ref.rollout.engine_kwargs.vllm.tool_call_parser=hermes",
    "actor_rollout_ref.actor.clip_ratio_low=0.2",
    "actor_rollout_ref.actor.clip_ratio_high=0.28",
    "actor_rollout_ref.actor.loss_agg_mode=token-mean",
    "actor_rollout_ref.actor.use_kl_loss=False",
    "actor_rollout_ref.rollout.n=8",
    "actor_rollout_ref.rollout.calculate_log_probs=True",
    "actor_rollout_ref.rollout.val_kwargs.n=16",
    "actor_rollout_ref.rollout.agent.default_agent_loop=agentrl_agent",
    'trainer.validation_data_dir="$OUT/validation"',
  ])
    assert.ok(script.includes(override), override);
  assert.match(
    readFileSync(join(out, "agentrl_agent_loop.yaml"), "utf8"),
    /_target_: agentrl_agent_loop\.AgentrlAgentLoop/,
  );
  assert.throws(() => verlInit({ ...baseOptions(), mode: "agent", out }), /exists and is not empty/);
  await run("bash", ["-n", join(out, "run_grpo.sh")]);
});

function baseOptions() {
  return {
    train: fileTasks.slice(0, 3),
    val: fileTasks.slice(3),
    verifier: "em",
    tasksSource: "quiz.jsonl",
    model: "m",
    verlVersion: "0.8" as const,
    mode: "tool" as const,
  };
}

test("tool mode: python3 runs the job's function tools against agentrl mcp serve and its reward against verify serve", async () => {
  const world = generateWorld(0);
  const tools = worldTools(world);
  const mcp = await serveHttp(tools, { port: 0 });
  const verify = await serveVerify({ verifier: "em", port: 0, token: "s3cret", log: () => {} });
  try {
    const out = join(root, "job-tool");
    verlInit({
      ...baseOptions(),
      out,
      tools: tools.map(toolSpec),
    });
    const [row] = await duck(`SELECT agent_name FROM read_parquet('${join(out, "data", "train.parquet")}')`);
    assert.equal(row.agent_name, "tool_agent");
    assert.match(readFileSync(join(out, "run_grpo.sh"), "utf8"), /reward\.custom_reward_function\.path=/);
    const entity = world.entities[0];
    const script = `
import json, sys
sys.path.insert(0, ${JSON.stringify(out)})
import agentrl_tools, agentrl_reward
print(json.dumps({
  "names": [s["function"]["name"] for s in agentrl_tools.TOOL_SCHEMAS],
  "search": agentrl_tools.call_mcp_tool("search", {"query": ${JSON.stringify(entity.name)}}),
  "bad": agentrl_tools.call_mcp_tool("nope", {}),
  "right": agentrl_reward.score_sync("<tool_call>x</tool_call>user\\n<tool_response>Paris?</tool_response>\\nassistant\\nParis", "Paris", {"agentrl": {"task_id": "t2", "task": ${JSON.stringify(JSON.stringify(fileTasks[1]))}}}),
  "wrong": agentrl_reward.score_sync("Lyon", "Paris", {"agentrl": {"task_id": "t2"}}),
}))`;
    const { stdout } = await run("python3", ["-c", script], {
      env: {
        ...process.env,
        PYTHONDONTWRITEBYTECODE: "1",
        AGENTRL_MCP_URL: mcp.url,
        AGENTRL_VERIFY_SERVER: verify.url,
        AGENTRL_VERIFY_TOKEN: "s3cret",
      },
    });
    const result = JSON.parse(stdout);
    assert.deepEqual(result.names, ["search", "calc"]);
    assert.ok(result.search.includes(entity.name), result.search);
    assert.match(result.bad, /nope/);
    assert.deepEqual(result.right, { score: 1, acc: 1, agentrl_task_id: "t2" });
    assert.deepEqual(result.wrong, { score: 0, acc: 0, agentrl_task_id: "t2" });
  } finally {
    await mcp.close();
    await verify.close();
  }
});

test("verify serve: token, field errors naming valid values, verdicts", async () => {
  const verify = await serveVerify({
    verifier: "math",
    port: 0,
    token: "t",
    tasks: fileTasks,
    log: () => {},
  });
  const post = (body: unknown, token = "t") =>
    fetch(`${verify.url}/verify`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: JSON.stringify(body),
    });
  try {
    assert.equal((await post({ answer: "42", task_id: "t1" }, "wrong")).status, 401);
    assert.deepEqual(await (await post({ answer: "\\boxed{42}", task_id: "t1" })).json(), {
      correct: true,
      score: 1,
      verifier: "math",
      task_id: "t1",
    });
    assert.equal((await (await post({ answer: "41", ground_truth: "42" })).json()).correct, false);
    const bad = await post({ answer: "x", task_id: "t1", verifier: "magic" });
    assert.equal(bad.status, 400);
    assert.match(
      (await bad.json()).error.message,
      /verifier must be one of math, choice, em, f1, code, world/,
    );
    const unknown = await post({ answer: "x", task_id: "t9" });
    assert.match((await unknown.json()).error.message, /task_id "t9" is not in the server's task set/);
  } finally {
    await verify.close();
  }
});

/** verl's decoded prompt of a task (skip_special_tokens drops the chat markers, keeps role names). */
function verlInput(task: Task): string {
  return `system\n${DEFAULT_SYSTEM_PROMPT}\nuser\n${task.question}\nassistant\n`;
}

/** The estimates of a curve (its bootstrap intervals depend on curve options). */
function passAtK(curve: readonly { k: number; passAtK: number }[]) {
  return curve.map((point) => [point.k, point.passAtK]);
}

test("verl import: a verl-format dump of an in-process eval gives the same pass@k", async () => {
  const n = 6;
  const evaluated = await evaluate({
    policy: scriptedPolicy("vague"),
    tasks: { type: "world", split: "test", count: 12, seed: 5 },
    n,
    runsRoot: root,
    runId: "in-process",
    curves: { bootstrap: false },
  });
  const total = evaluated.totals;
  assert.ok(total.correct > 0 && total.correct < total.samples, "a mixed run, so pass@k is not trivial");
  const store = openRunDirectory(evaluated.directory!, { readOnly: true });
  const tasks = store.getState<Task[]>("in-process", "eval/tasks")!;
  const samples = store.trajectories("in-process");
  store.close();
  // verl repeats each prompt n times, interleaved (repeat(interleave=True)), one line per sample.
  const dump = join(root, "validation");
  mkdirSync(dump);
  const lines = (withTaskId: boolean) =>
    tasks.flatMap((task) =>
      samples
        .filter((t) => t.taskId === task.id)
        .map((t) =>
          JSON.stringify({
            input: verlInput(task),
            output: t.turns.map((turn) => turn.text).join("\n"),
            gts: task.answer,
            score: t.correct ? 1 : 0,
            step: 0,
            reward: t.correct ? 1 : 0,
            ...(withTaskId ? { acc: t.correct ? 1 : 0, agentrl_task_id: task.id } : {}),
          }),
        ),
    );
  writeFileSync(join(dump, "0.jsonl"), `${lines(true).join("\n")}\n`);
  writeFileSync(join(dump, "20.jsonl"), `${lines(false).join("\n")}\n`);
  const imported = await importVerlDumps({ path: dump, runsRoot: join(root, "imported"), tasks });
  assert.deepEqual(
    imported.map((r) => [r.step, r.n, r.tasks, r.dropped]),
    [
      [0, n, 12, 0],
      [20, n, 12, 0],
    ],
  );
  for (const r of imported) {
    assert.deepEqual(r.result.counts, evaluated.counts, `step ${r.step}: per-task counts`);
    assert.deepEqual(
      passAtK(r.result.curves.overall),
      passAtK(evaluated.curves.overall),
      `step ${r.step}: pass@k`,
    );
  }
  // Without tasks, samples group by their prompt text: the same per-prompt counts and pass@k.
  const [byInput] = await importVerlDumps({ path: join(dump, "20.jsonl"), runsRoot: join(root, "by-input") });
  assert.deepEqual(
    byInput.result.counts.map((c) => [c.n, c.c]),
    evaluated.counts.map((c) => [c.n, c.c]),
  );
  assert.deepEqual(passAtK(byInput.result.curves.overall), passAtK(evaluated.curves.overall));

  // The CLI: errors name the field; steps select files.
  writeFileSync(join(root, "bad.jsonl"), '{"input": "q", "output": "a", "score": "high"}\n');
  await assert.rejects(
    runCli(registerVerl, ["verl", "import", join(root, "bad.jsonl"), "--runs", join(root, "x")]),
    /bad\.jsonl:1: "score" must be a finite number/,
  );
  const cli = await runCli(registerVerl, [
    "verl",
    "import",
    dump,
    "--step",
    "20",
    "--runs",
    join(root, "cli"),
    "--prefix",
    "val",
    "--json",
  ]);
  const [row] = JSON.parse(cli.out.join("\n"));
  assert.equal(row.step, 20);
  assert.ok(row.directory.startsWith(join(root, "cli")), row.directory);
  // --out, the old name of --runs, works for one release with a note; both at once is an error
  const old = await runCli(registerVerl, [
    "verl",
    "import",
    dump,
    "--step",
    "20",
    "--out",
    join(root, "old"),
    "--json",
  ]);
  assert.ok(JSON.parse(old.out.join("\n"))[0].directory.startsWith(join(root, "old")));
  assert.match(old.err.join("\n"), /--out is now --runs/);
  await assert.rejects(
    runCli(registerVerl, ["verl", "import", dump, "--out", join(root, "a"), "--runs", join(root, "b")]),
    /--out is the old name of --runs/,
  );
  assert.equal(row.metrics["eval/pass@1"], evaluated.metrics["eval/pass@1"]);
});

test("verl import matches prompts to tasks: longest question, ground truth among equal questions", () => {
  const tasks: Task[] = [
    { id: "a", question: "population of mipa?", answer: "10", family: "f" },
    { id: "b", question: "population of mipa?", answer: "20", family: "f" },
    { id: "c", question: "the total population of mipa?", answer: "30", family: "f" },
  ];
  const match = taskMatcher(tasks);
  const line = (input: string, gts: string) => ({ input, output: "", gts, score: 0, step: 0 });
  assert.equal(match(line("user\nwhat is the total population of mipa?\nassistant\n", "30")).id, "c");
  assert.equal(match(line("user\npopulation of mipa?\n", "20")).id, "b");
  assert.equal(match(line("user\npopulation of mipa? ", "10")).id, "a");
  // Same question, an answer neither task has: indistinguishable, grouped by the prompt text.
  assert.match(match(line("user\npopulation of mipa?  ", "99")).id, /^verl\/[0-9a-f]{16}$/);
  assert.equal(match({ ...line("anything", "x"), agentrl_task_id: "b" }).id, "b");
});

test("verl init CLI: a task file needs --verifier; bad choices name the valid ones", async () => {
  const file = join(root, "quiz.jsonl");
  writeFileSync(file, `${fileTasks.map((task) => JSON.stringify(task)).join("\n")}\n`);
  const cli = (args: string[]) => runCli(registerVerl, ["verl", "init", "--model", "m", ...args]);
  await assert.rejects(cli(["--tasks", file, "--out", join(root, "c1")]), /a task file needs --verifier/);
  await assert.rejects(
    cli(["--tasks", file, "--verifier", "em", "--verl-version", "0.6", "--out", join(root, "c2")]),
    /--verl-version must be one of 0\.7, 0\.8, 0\.9, main/,
  );
  const summary = JSON.parse(
    (
      await cli([
        "--tasks",
        file,
        "--verifier",
        "em",
        "--val-fraction",
        "0.5",
        "--out",
        join(root, "c3"),
        "--json",
      ])
    ).out.join("\n"),
  );
  assert.equal(summary.train + summary.val, fileTasks.length);
  assert.ok(summary.val >= 1);
  // --seed, the old name of --task-seed, still draws the same split (with a note)
  const split = async (flag: string, out: string) =>
    JSON.parse(
      (
        await cli([
          "--tasks",
          file,
          "--verifier",
          "em",
          "--val-fraction",
          "0.5",
          flag,
          "7",
          "--out",
          join(root, out),
          "--json",
        ])
      ).out.join("\n"),
    );
  const renamed = await split("--task-seed", "c4");
  assert.deepEqual(await split("--seed", "c5"), { ...renamed, out: join(root, "c5") });
  assert.match(
    readFileSync(join(root, "c3", "start_agentrl.sh"), "utf8"),
    /agent-server --port 8300 "\$\{ALLOW\[@\]\}" --verifier em /,
  );
});

test("agent mode: rows read back by DuckDB become agent-server requests the server accepts, with the task intact", async () => {
  const out = join(root, "job-world");
  const val = rolloutTasks({ split: "test", count: 10, seed: 2 });
  verlInit({
    train: rolloutTasks({ split: "train", count: 10, seed: 2 }),
    val,
    verifier: "world",
    tasksSource: "world",
    model: "m",
    out,
    verlVersion: "0.7",
    mode: "agent",
  });
  const rows = await duck(`SELECT * FROM read_parquet('${join(out, "data", "val.parquet")}')`);
  // DuckDB's JSON gives BIGINT as a string; pandas gives verl an int.
  for (const row of rows) {
    const extra = row.extra_info as { index: string | number };
    extra.index = Number(extra.index);
  }
  const input = join(root, "world-rows.json");
  writeFileSync(input, JSON.stringify(rows));
  // The job's own copy of the agent loop, over the agent-server helper's stub of verl's interface.
  const script = `
import json, sys, types
sys.path[:0] = [${JSON.stringify(join(import.meta.dirname, "testdata", "verl-double"))}, ${JSON.stringify(out)}]
from agentrl_agent_loop import AgentrlAgentLoop
loop = types.SimpleNamespace(rollout_model=None, response_length=512)
rows = json.load(open(${JSON.stringify(input)}))
kwargs = lambda r: {"raw_prompt": r["prompt"], "extra_info": r["extra_info"], "reward_model": r["reward_model"], "agent_name": r["agent_name"]}
print(json.dumps([AgentrlAgentLoop._request_body(loop, {"temperature": 1.0, "top_p": 1.0, "logprobs": True}, kwargs(r), "http://127.0.0.1:9/v1") for r in rows]))`;
  const { stdout } = await run("python3", ["-c", script], {
    env: { ...process.env, PYTHONDONTWRITEBYTECODE: "1" },
  });
  const bodies = JSON.parse(stdout) as unknown[];
  assert.equal(bodies.length, val.length);
  bodies.forEach((body, i) => {
    const request = parseEpisodeRequest(body);
    assert.deepEqual(request.task, val[i]);
    assert.equal(request.ground_truth, val[i].answer);
    assert.equal(request.index, i);
  });
});

test("verl import leaves samples that failed outside the policy out of pass@k", async () => {
  const dump = join(root, "dump-infra");
  mkdirSync(dump);
  const line = (task: string, correct: boolean, infra: boolean) =>
    JSON.stringify({
      input: `user\n${task}\nassistant\n`,
      output: correct ? "4" : "no",
      gts: "4",
      score: correct ? 1 : 0,
      step: 3,
      acc: correct ? 1 : 0,
      agentrl_task_id: task,
      agentrl_infra: infra ? 1 : 0,
    });
  // Task a: 2 real samples (1 correct) and 1 infra failure; task b: 3 real samples.
  const lines = [
    line("a", true, false),
    line("a", false, true),
    line("a", false, false),
    line("b", true, false),
    line("b", true, false),
    line("b", false, false),
  ];
  writeFileSync(join(dump, "3.jsonl"), `${lines.join("\n")}\n`);
  const [run] = await importVerlDumps({ path: dump, runsRoot: join(root, "runs-infra") });
  assert.deepEqual([run.tasks, run.n, run.dropped, run.infra], [2, 2, 1, 1]);
  // pass@1 over a's [1, 0] and b's first two [1, 1]: 3/4 (the infra sample would have made a's 1/3).
  assert.equal(run.result.metrics["eval/pass@1"], 0.75);
});
