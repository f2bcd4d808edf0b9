/**
 * `agentrl verl init`'s job, end to end without verl or a GPU, for every verl version it writes:
 *
 *   verl init (CLI) → data/val.parquet (read back by DuckDB, repeated n times as verl's validation
 *   does) → the job's own agentrl_agent_loop.py inside the verl double's AgentLoopWorker (two
 *   workers, the job's YAML as the registry) → agent-server → fake vLLM, started with the flags
 *   verl builds from the job's `engine_kwargs.vllm` → AgentLoopOutput batch (DataProto.concat) →
 *   the job's estimator through compute_advantage → verl's validation dump → `verl import`.
 *
 * And the two ways the old job could not train: vLLM without the tool flags (400 on every request)
 * and vLLM older than 0.10.2 (no token ids): the loop raises instead of training on empty samples.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { DuckDBInstance } from "@duckdb/node-api";
import { register as registerVerl } from "../cli/commands/verl.ts";
import { runCli } from "../cli/testing.ts";
import type { Task } from "../types/task.ts";
import { type AgentServer, startAgentServer } from "./agent-server.ts";
import { importVerlDumps } from "./import.ts";
import { type DoubleVersion, type FakeVllmSpec, runDriver, startFakeVllm } from "./testing.ts";
import type { VerlVersion } from "./versions.ts";

const root = mkdtempSync(join(tmpdir(), "agentrl-verl-e2e-"));
let agentServer: AgentServer;
before(async () => {
  agentServer = await startAgentServer({
    port: 0,
    budgets: { maxTurns: 4 },
    // The fake vLLM servers listen on loopback ports chosen per test, as start_agentrl.sh allows.
    upstreamAllow: ["http://127.0.0.1:*"],
    log: () => {},
  });
});
after(async () => {
  await agentServer.close();
  rmSync(root, { recursive: true, force: true });
});

async function parquetRows(file: string): Promise<Record<string, unknown>[]> {
  const instance = await DuckDBInstance.create(":memory:");
  const connection = await instance.connect();
  try {
    const rows = (
      await connection.runAndReadAll(`SELECT * FROM read_parquet('${file}')`)
    ).getRowObjectsJson();
    // DuckDB's JSON gives BIGINT as a string; pandas gives verl an int.
    for (const row of rows as { extra_info: { index: string | number } }[])
      row.extra_info.index = Number(row.extra_info.index);
    return rows as Record<string, unknown>[];
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

/** The Hydra overrides of run_grpo.sh, key → value as written. */
function overrides(script: string): Map<string, string> {
  const found = new Map<string, string>();
  for (const line of script.split("\n")) {
    const match = /^\s+\+{0,2}([A-Za-z0-9_.]+)=(.*?)\s*\\?$/.exec(line);
    if (match) found.set(match[1], match[2].replace(/^"|"$/g, ""));
  }
  return found;
}

/**
 * The `vllm serve` flags verl adds from `actor_rollout_ref.rollout.engine_kwargs.vllm`: every
 * key as `--key` (True: the bare flag, False/None: nothing, else the value), verl's
 * `build_cli_args_from_config` (workers/rollout/vllm_rollout/utils.py v0.7.1:256-290) over the
 * values Hydra parsed.
 */
function vllmServeFlags(found: Map<string, string>): string[] {
  const prefix = "actor_rollout_ref.rollout.engine_kwargs.vllm.";
  const flags: string[] = [];
  for (const [key, value] of found) {
    if (!key.startsWith(prefix)) continue;
    const name = `--${key.slice(prefix.length)}`;
    if (value === "True" || value === "true") flags.push(name);
    else if (value !== "False" && value !== "false" && value !== "null") flags.push(name, value);
  }
  return flags;
}

interface Job {
  out: string;
  script: string;
  yaml: string;
  rows: Record<string, unknown>[];
  tasks: Task[];
}

const jobs = new Map<string, Promise<Job>>();

/** The job of a verl version, written once (0.7.0 and 0.7.1 run the same job). */
function jobFor(verlVersion: VerlVersion): Promise<Job> {
  let job = jobs.get(verlVersion);
  if (!job) {
    job = writeJob(`job-${verlVersion}`, verlVersion);
    jobs.set(verlVersion, job);
  }
  return job;
}

async function writeJob(name: string, verlVersion: VerlVersion): Promise<Job> {
  const out = join(root, name);
  await runCli(registerVerl, [
    "verl",
    "init",
    "--tasks",
    "world",
    "--train-count",
    "4",
    "--val-count",
    "2",
    "--group-size",
    "2",
    "--val-n",
    "2",
    "--model",
    "Qwen/Qwen3-4B",
    "--verl-version",
    verlVersion,
    "--out",
    out,
  ]);
  const rows = await parquetRows(join(out, "data", "val.parquet"));
  const tasks = rows.map(
    (row) => JSON.parse((row.extra_info as { agentrl: { task: string } }).agentrl.task) as Task,
  );
  return {
    out,
    script: readFileSync(join(out, "run_grpo.sh"), "utf8"),
    yaml: join(out, "agentrl_agent_loop.yaml"),
    rows,
    tasks,
  };
}

async function fakeVllm(job: Job, spec: FakeVllmSpec, flags: string[]) {
  const path = join(job.out, `fake-vllm-${spec.version}-${flags.length}.json`);
  writeFileSync(
    path,
    JSON.stringify({
      model: "Qwen/Qwen3-4B",
      answers: Object.fromEntries(job.tasks.map((task) => [task.question, task.answer])),
      ...spec,
    }),
  );
  return startFakeVllm(path, flags);
}

/** verl's validation batch: each row val_kwargs.n times, interleaved, one uid per prompt. */
function validationRows(job: Job, n: number) {
  return job.rows.flatMap((row, i) => Array.from({ length: n }, () => ({ ...row, uid: `prompt-${i}` })));
}

const VERSIONS: [VerlVersion, DoubleVersion, string][] = [
  ["0.7", "0.7.0", "0.11.0"],
  ["0.7", "0.7.1", "0.12.0"],
  ["0.8", "0.8.0", "0.10.2"],
  ["0.9", "0.9.0", "0.18.0"],
  ["main", "main", "0.19.1"],
];

for (const [verlVersion, doubleVersion, vllmVersion] of VERSIONS) {
  test(`verl ${doubleVersion} (job ${verlVersion}, vLLM ${vllmVersion}): parquet → loop → agent-server → vLLM → batch → advantages → dump → verl import`, async () => {
    const job = await jobFor(verlVersion);
    const found = overrides(job.script);
    const n = Number(found.get("actor_rollout_ref.rollout.val_kwargs.n"));
    assert.equal(n, 2);
    const vllm = await fakeVllm(job, { version: vllmVersion }, vllmServeFlags(found));
    try {
      const rows = validationRows(job, n);
      const result = await runDriver(
        {
          agent_loop_config_path: job.yaml,
          // verl interpolates rollout.prompt_length/response_length from data.max_*_length.
          rollout: {
            prompt_length: Number(found.get("data.max_prompt_length")),
            response_length: Number(found.get("data.max_response_length")),
          },
          server_addresses: [vllm.address],
          sampling_params: { temperature: 1.0, top_p: 1.0, top_k: -1, logprobs: true },
          rows,
          workers: 2,
          estimator: { name: found.get("algorithm.adv_estimator") },
          dump: { path: join(job.out, `outputs-${doubleVersion}`, "validation"), step: 0 },
        },
        {
          version: doubleVersion,
          // The job's own copies of the loop and the estimator (run_grpo.sh puts the folder on PYTHONPATH).
          loopDir: job.out,
          env: {
            AGENTRL_AGENT_SERVER: agentServer.url,
            AGENTRL_STEP_METRICS: join(job.out, `steps-${doubleVersion}.jsonl`),
          },
        },
      );
      assert.equal(result.batch.size, rows.length);
      assert.equal(result.acquired, rows.length, "each sample was assigned a rollout server by verl");
      for (const [i, output] of result.outputs.entries()) {
        const where = `${doubleVersion} sample ${i}`;
        assert.equal(
          output.extra_fields.agentrl_failure_class,
          "",
          `${where}: ${output.extra_fields.agentrl_error}`,
        );
        assert.ok(output.extra_fields.turn_spans.length >= 2, `${where}: a tool call, then the answer`);
        assert.ok(output.response_mask.includes(0) && output.response_mask.includes(1), where);
        assert.equal(output.reward_score, output.extra_fields.agentrl_correct ? 1 : 0, where);
      }
      const rewards = result.outputs.map((output) => output.reward_score);
      assert.deepEqual(
        [...new Set(rewards)].sort(),
        [0, 1],
        "mixed rewards within groups (the fake answers right every other time)",
      );
      assert.ok(
        result.batch.advantages?.some((row) => row.some((value) => value !== 0)),
        "the job's estimator gave a learning signal",
      );
      const steps = readFileSync(join(job.out, `steps-${doubleVersion}.jsonl`), "utf8")
        .trim()
        .split("\n");
      assert.equal(JSON.parse(steps[0])["agentrl/failure_rate/infra"], 0);

      const [run] = await importVerlDumps({
        path: join(job.out, `outputs-${doubleVersion}`, "validation"),
        tasks: job.tasks,
        runsRoot: join(job.out, `runs-${doubleVersion}`),
      });
      assert.equal(run.directory.endsWith("verl-validation-step0"), true, run.directory);
      assert.deepEqual([run.tasks, run.n, run.dropped], [job.tasks.length, n, 0]);
      const correct = result.outputs.filter((output) => output.extra_fields.agentrl_correct).length;
      assert.equal(run.result.metrics["eval/pass@1"], correct / rows.length);
    } finally {
      vllm.close();
    }
  });
}

test("vLLM started without the tool flags (the old job) or older than 0.10.2 (no token ids): the loop raises, nothing trains", async () => {
  const job = await jobFor("0.7");
  const drive = (address: string) =>
    runDriver(
      {
        agent_loop_config_path: job.yaml,
        rollout: { prompt_length: 2048, response_length: 8192 },
        server_addresses: [address],
        sampling_params: { temperature: 1.0, logprobs: true },
        rows: validationRows(job, 1).slice(0, 2),
      },
      { loopDir: job.out, env: { AGENTRL_AGENT_SERVER: agentServer.url } },
    );
  const noFlags = await fakeVllm(job, { version: "0.11.0" }, []);
  try {
    await assert.rejects(
      drive(noFlags.address),
      /InfraFailure: .*\(upstream-4xx\): .*"auto" tool choice requires --enable-auto-tool-choice/,
    );
  } finally {
    noFlags.close();
  }
  const old = await fakeVllm(job, { version: "0.9.2" }, vllmServeFlags(overrides(job.script)));
  try {
    await assert.rejects(drive(old.address), /InfraFailure: .*\(no-token-ids\)/);
  } finally {
    old.close();
  }
});
