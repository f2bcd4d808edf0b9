/**
 * The dashboard's server without a browser: unreadable files are listed with their error, unknown
 * runs and episodes are 404s, bad filters 400s, tool-status and injected filters read the stored
 * JSON, reading writes nothing to any store, a token is enforced (bearer or the cookie set by
 * `/?token=`), a loopback server refuses foreign Host headers, and a non-loopback host needs a token.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { EpisodeView, TokenCell } from "./episode-view.ts";
import { runKey } from "./run-catalog.ts";
import type { RunDetail, StoreRow } from "./run-rows.ts";
import { type Dashboard, startDashboard } from "./server.ts";
import { createTestRuns, type TestRuns } from "./test-runs.ts";
import type { TrajectorySummary } from "./trajectory-query.ts";

let runs: TestRuns;
let dashboard: Dashboard;

before(async () => {
  runs = createTestRuns();
  dashboard = await startDashboard({ runs: runs.root, port: 0 });
});

after(async () => {
  await dashboard?.close();
  runs?.close();
});

type Page = { total: number; rows: TrajectorySummary[] };

const rl = () => encodeURIComponent(runKey("rl-test/store.sqlite", runs.rlRunId));

async function getJson<T = { error: string }>(
  path: string,
  init: RequestInit = {},
): Promise<{ status: number; body: T }> {
  const response = await fetch(`${dashboard.url}${path}`, { ...init, redirect: "manual" });
  const text = await response.text();
  return { status: response.status, body: (text.startsWith("{") ? JSON.parse(text) : { error: text }) as T };
}

/** sha256 of every store file's bytes (database and WAL): what a write would change. */
function storeDigest(): string {
  const hash = createHash("sha256");
  for (const file of [
    "rl-test/store.sqlite",
    "rl-test/store.sqlite-wal",
    "corrupt.sqlite",
    "other/foreign.sqlite",
  ]) {
    const path = join(runs.root, file);
    hash.update(file).update(existsSync(path) ? readFileSync(path) : Buffer.alloc(0));
  }
  return hash.digest("hex");
}

test("the listing names unreadable files with their error and still lists every run", async () => {
  const { status, body } = await getJson<{ stores: StoreRow[] }>("/api/runs");
  assert.equal(status, 200);
  const byFile = Object.fromEntries(body.stores.map((store) => [store.file, store]));
  assert.match(byFile["corrupt.sqlite"].error ?? "", /not a database/);
  assert.match(byFile["other/foreign.sqlite"].error ?? "", /not an agentrl store/);
  assert.equal(byFile["rl-test/store.sqlite"].error, null);
  assert.deepEqual(
    byFile["rl-test/store.sqlite"].runs.map((run) => [run.id, run.kind, run.status, run.parentId]),
    [
      ["rl-test", "rl", "running", null],
      ["eval-child", "eval", "completed", "rl-test"],
    ],
  );
  assert.equal(byFile["rl-test/store.sqlite"].runs[0].report, "rl-test/report.html");
});

test("unknown runs, episodes, pages and reports are 404s; bad filters are 400s naming the value", async () => {
  assert.equal((await getJson("/api/run?run=nope")).status, 404);
  assert.equal((await getJson("/api/run")).status, 404);
  assert.equal(
    (await getJson(`/api/run?run=${encodeURIComponent("../../etc/passwd.sqlite::x")}`)).status,
    404,
  );
  assert.equal((await getJson(`/api/episode?run=${rl()}&seq=999`)).status, 404);
  assert.equal((await getJson(`/api/episode?run=${rl()}&seq=abc`)).status, 404);
  assert.equal((await getJson("/api/nothing")).status, 404);
  assert.equal((await getJson("/app/..%2F..%2Fserver.ts")).status, 404);
  assert.equal((await getJson("/reports/..%2F..%2Fetc%2Fpasswd")).status, 404);
  const bad = await getJson(`/api/trajectories?run=${rl()}&tool=broken`);
  assert.equal(bad.status, 400);
  assert.match(bad.body.error, /tool must be one of ok, error, empty, timeout, corrupted; got "broken"/);
  assert.equal((await getJson(`/api/trajectories?run=${rl()}&limit=0`)).status, 400);
});

test("trajectory filters: tool status and injected noise from the stored JSON, end reason, step", async () => {
  const seqs = async (query: string) =>
    (await getJson<Page>(`/api/trajectories?run=${rl()}&${query}`)).body.rows.map((row) => row.seq);
  assert.deepEqual(await seqs(""), [1, 2, 3]);
  assert.deepEqual(await seqs("tool=timeout"), [1, 2]);
  assert.deepEqual(await seqs("injected=true&correct=false"), [2]);
  assert.deepEqual(await seqs("end=format-error"), [3]);
  assert.deepEqual(await seqs("step=2"), [3]);
  assert.deepEqual(await seqs("family=arithmetic&correct=true"), [1]);
  const first = (await getJson<Page>(`/api/trajectories?run=${rl()}&limit=1`)).body;
  assert.equal(first.total, 3);
  assert.equal(first.rows[0].toolStatuses, "ok timeout* empty corrupted* error ok");
});

test("the episode API has one cell per token in flattened order, and the task's other episodes", async () => {
  const { body } = await getJson<EpisodeView & { others: unknown[] }>(`/api/episode?run=${rl()}&seq=1`);
  const cells = [
    ...body.prompt.tokens,
    ...body.turns.flatMap((turn): TokenCell[] => [...turn.tokens, ...(turn.observation?.tokens ?? [])]),
  ];
  assert.equal(cells.length, body.tokenCount);
  assert.equal(cells.at(-1)?.logprob, "-Infinity", "-Infinity survives JSON as its spelling");
  assert.deepEqual(body.others, [{ seq: 2, correct: false, step: 1, group: 2 }]);
  const eval1 = encodeURIComponent(runKey("rl-test/store.sqlite", runs.evalRunId));
  const detail = (await getJson<RunDetail>(`/api/run?run=${eval1}`)).body;
  assert.deepEqual(
    detail.passAtK.map((point) => [point.series, point.k, point.value]),
    [
      ["eval", 1, 0.2],
      ["eval", 2, 0.3],
      ["eval", 4, 0.45],
      ["eval/lookup", 1, 0.5],
      ["eval/lookup", 2, 0.7],
      ["eval/lookup", 4, 0.8],
    ],
  );
  assert.deepEqual(
    detail.passHatK.map((point) => [point.series, point.k, point.value]),
    [
      ["eval", 1, 0.2],
      ["eval", 2, 0.1],
      ["eval", 4, 0.05],
      ["eval/lookup", 1, 0.5],
      ["eval/lookup", 2, 0.3],
      ["eval/lookup", 4, 0.2],
    ],
    "pass^k from the eval/pass^<k> metrics, apart from pass@k",
  );
});

test("reading every page and API writes nothing to any store", async () => {
  runs.rlStore.database.connection.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  const before = storeDigest();
  for (const path of [
    "/api/runs",
    `/api/run?run=${rl()}`,
    `/api/metrics?run=${rl()}&key=loss/policy`,
    `/api/trajectories?run=${rl()}&tool=ok`,
    `/api/episode?run=${rl()}&seq=1`,
    `/api/episode?run=${rl()}&seq=2`,
    "/",
    "/app/main.ts",
  ]) {
    assert.equal((await getJson(path)).status, 200, path);
  }
  assert.equal(storeDigest(), before);
});

test("a token is required when set: bearer header, or the cookie that /?token= sets", async () => {
  const token = "s3cret-token-for-tests";
  const guarded = await startDashboard({ runs: runs.root, port: 0, token });
  try {
    const denied = await fetch(`${guarded.url}/api/runs`);
    assert.equal(denied.status, 401);
    assert.equal(
      (await fetch(`${guarded.url}/api/runs`, { headers: { authorization: "Bearer wrong-token" } })).status,
      401,
    );
    assert.equal(
      (await fetch(`${guarded.url}/api/runs`, { headers: { authorization: `Bearer ${token}` } })).status,
      200,
    );
    const opened = await fetch(`${guarded.url}/?token=${token}`, { redirect: "manual" });
    assert.equal(opened.status, 303);
    assert.equal(opened.headers.get("location"), "/");
    const cookie = (opened.headers.get("set-cookie") ?? "").split(";")[0];
    assert.match(opened.headers.get("set-cookie") ?? "", /HttpOnly; SameSite=Strict/);
    assert.equal((await fetch(`${guarded.url}/api/runs`, { headers: { cookie } })).status, 200);
    assert.equal((await fetch(`${guarded.url}/?token=wrong-token-x`, { redirect: "manual" })).status, 401);
  } finally {
    await guarded.close();
  }
  await assert.rejects(
    startDashboard({ runs: runs.root, host: "0.0.0.0", port: 0 }),
    /refusing to listen on 0\.0\.0\.0 without a token/,
  );
  await assert.rejects(startDashboard({ runs: runs.root, port: 0, token: "short" }), /at least 8 characters/);
});

test("a loopback dashboard answers only requests addressed to a loopback name (no DNS rebinding)", async () => {
  const status = (host: string) =>
    new Promise<number>((resolve, reject) => {
      const url = new URL(`${dashboard.url}/api/runs`);
      const req = request(
        { hostname: url.hostname, port: url.port, path: url.pathname, headers: { host } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on("error", reject);
      req.end();
    });
  assert.equal(await status("evil.example:80"), 403);
  assert.equal(await status(`127.0.0.1:${new URL(dashboard.url).port}`), 200);
  assert.equal(await status(`localhost:${new URL(dashboard.url).port}`), 200);
});
