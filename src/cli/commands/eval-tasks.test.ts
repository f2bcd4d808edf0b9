/**
 * `agentrl eval` on task files, end to end: the command line reads a sample file, checks answers
 * with a named verifier, offers the code tool or an MCP server's tools, and reaches the model through
 * the OpenAI client and a real `agentrl serve` endpoint (in this process, on an ephemeral port).
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, test } from "node:test";
import { Command } from "commander";
import { keyFromSeed } from "../../engine/init.ts";
import { type RunningServer, serveHttp } from "../../mcp/server.ts";
import { saveModelCheckpoint } from "../../policy/embedded/checkpoint.ts";
import { initGpt } from "../../policy/embedded/model.ts";
import { createWordTokenizer } from "../../policy/embedded/tokenizer.ts";
import { createMockPolicy, type MockTurn } from "../../policy/mock.ts";
import { resolvePolicy } from "../../policy/resolve.ts";
import { embeddedVocabulary } from "../../pretrain/corpus.ts";
import { type ChatServer, startChatServer } from "../../serve/server.ts";
import { worldTaskResolver } from "../../serve/world-tasks.ts";
import { openRunDirectory } from "../../store/index.ts";
import { createCalcTool } from "../../tools/index.ts";
import type { PolicyContext } from "../../types/policy.ts";
import type { Trajectory } from "../../types/trajectory.ts";
import { register } from "./eval.ts";
import { splitCommandLine } from "./task-options.ts";

const MATH_FILE = "examples/tasks/math-sample.jsonl";
const root = mkdtempSync(join(tmpdir(), "agentrl-eval-tasks-"));
const silent = () => {};

async function run(args: string[]): Promise<{ out: string[]; err: string[] }> {
  const program = new Command().exitOverride();
  register(program);
  const out: string[] = [];
  const err: string[] = [];
  const log = console.log;
  const error = console.error;
  console.log = (...parts: unknown[]) => out.push(parts.join(" "));
  console.error = (...parts: unknown[]) => err.push(parts.join(" "));
  try {
    await program.parseAsync(["node", "agentrl", "eval", ...args]);
  } finally {
    console.log = log;
    console.error = error;
  }
  return { out, err };
}

async function runJson(args: string[]) {
  return JSON.parse((await run([...args, "--json"])).out.join("\n"));
}

function storedTrajectories(directory: string): Trajectory[] {
  const store = openRunDirectory(directory, { readOnly: true });
  try {
    const [run] = store.listRuns();
    return [...store.iterateTrajectories(run.id)].map((stored) => stored.trajectory);
  } finally {
    store.close();
  }
}

/** A served text policy scripted per turn (the server turns its tags into OpenAI tool calls). */
function serveScript(model: string, script: (context: PolicyContext) => MockTurn): Promise<ChatServer> {
  return startChatServer({ loadPolicy: () => createMockPolicy(script), model, port: 0, log: silent });
}

const servers: { close(): Promise<void> }[] = [];
let embedded: ChatServer;

before(async () => {
  // A randomly initialised embedded model of a small shape: the pipeline, not the weights, is under test.
  const tokenizer = createWordTokenizer(embeddedVocabulary());
  const config = { vocabSize: tokenizer.vocabSize, dModel: 32, nLayers: 2, nHeads: 2, dFF: 64, maxLen: 96 };
  const checkpoint = join(root, "tiny-base");
  await saveModelCheckpoint(checkpoint, { config, tokenizer, params: initGpt(config, keyFromSeed(5)) });
  embedded = await startChatServer({
    loadPolicy: (sampling) => resolvePolicy(checkpoint, sampling),
    model: "tiny-base",
    port: 0,
    log: silent,
  });
  servers.push(embedded);
});

after(async () => {
  await Promise.all(servers.map((server) => server.close()));
  rmSync(root, { recursive: true, force: true });
});

test("end to end: a math task file through agentrl serve and the OpenAI client gives pass@k files", async () => {
  const result = await runJson([
    "--policy",
    `openai:${embedded.url}#tiny-base`,
    "--tasks",
    MATH_FILE,
    "--verifier",
    "math",
    "--n",
    "4",
    "--runs",
    root,
    "--run-id",
    "math",
  ]);
  assert.equal(result.directory, join(root, "math"));
  assert.deepEqual(result.config.tasks, { type: "given", name: MATH_FILE, count: 8 });
  assert.equal(result.config.verifier, "math");
  assert.deepEqual(result.config.toolSetup, { code: false, mcp: null });
  assert.equal(result.config.budgets.maxTurnTokens, 4096);
  assert.equal(result.config.budgets.maxTokens, 16384);
  assert.equal(result.totals.samples, 32);
  assert.equal(result.totals.policyErrors, 0);
  assert.deepEqual(result.curves.ks, [1, 2, 4]);
  for (const point of result.curves.overall) assert.ok(point.passAtK >= 0 && point.passAtK <= 1);
  assert.ok(Object.keys(result.curves.families).includes("number-theory"));

  for (const file of [result.files.json, result.files.svg]) assert.equal(dirname(file), result.directory);
  const json = JSON.parse(readFileSync(result.files.json, "utf8"));
  assert.deepEqual(json.curves, result.curves);
  assert.equal(json.counts.length, 8);
  assert.match(readFileSync(result.files.svg, "utf8"), /^<svg[\s\S]*<\/svg>$/);
  assert.ok(existsSync(result.files.html));

  const trajectories = storedTrajectories(result.directory);
  assert.equal(trajectories.length, 32, "every episode is stored");
  assert.equal(new Set(trajectories.map((t) => `${t.taskId}/${t.seed}`)).size, 32);
  for (const trajectory of trajectories) {
    assert.notEqual(trajectory.endReason, "policy-error");
    assert.match(trajectory.policyId, /^openai:http:\/\/127\.0\.0\.1:\d+\/v1#tiny-base$/);
    assert.ok(trajectory.turns.length >= 1);
  }
  assert.ok(embedded.stats.requests >= 32, "every turn went over HTTP");

  // A resume rebuilds the verifier and tools from the stored config and samples nothing more.
  const resumed = await run(["--resume", result.directory]);
  const lines = resumed.out.join("\n").split("\n");
  assert.match(lines[0], /8 tasks x n = 4; 0 episodes sampled, 32 found stored/);
  assert.equal(lines[1], `tasks ${MATH_FILE}; verifier math; tools: none`);
});

const DIVISORS = "let c = 0; for (let d = 1; d <= 2024; d++) if (2024 % d === 0) c++; console.log(c)";

/** Runs code first, then answers with the last number of what the tool printed. */
function coder(context: PolicyContext): MockTurn {
  if (context.turns.length === 0) return `<code> ${DIVISORS} </code>`;
  const printed = context.turns.at(-1)?.observation?.text.match(/\d+/g) ?? ["0"];
  return `<answer> \\boxed{${printed.at(-1)}} </answer>`;
}

test("--code: episodes call the sandboxed code tool through the chat protocol, and its output is verified", async () => {
  const server = await serveScript("coder", coder);
  servers.push(server);
  const result = await runJson([
    "--policy",
    `openai:${server.url}#coder`,
    "--tasks",
    MATH_FILE,
    "--verifier",
    "math",
    "--code",
    "--n",
    "2",
    "--runs",
    root,
    "--run-id",
    "code",
  ]);
  assert.deepEqual(result.config.toolSetup, { code: true, mcp: null });
  assert.equal(result.totals.policyErrors, 0);
  const trajectories = storedTrajectories(result.directory);
  assert.equal(trajectories.length, 16);
  for (const trajectory of trajectories) {
    const [call, answer] = trajectory.turns;
    assert.deepEqual(call.action, {
      type: "tool-call",
      tool: "code",
      arguments: { code: DIVISORS },
      ...(call.action.type === "tool-call" && call.action.callId ? { callId: call.action.callId } : {}),
    });
    assert.equal(call.toolResult?.status, "ok");
    assert.equal(call.toolResult?.content.trim(), "16");
    assert.equal(answer.action.type, "answer");
    assert.equal(trajectory.correct, trajectory.taskId === "math/divisors-2024", trajectory.taskId);
  }
  // 2024 = 2^3 · 11 · 23 has 16 divisors: that task is solved every time, no other is.
  const solved = result.counts.filter((count: { c: number }) => count.c > 0);
  assert.deepEqual(
    solved.map((count: { taskId: string; c: number }) => [count.taskId, count.c]),
    [["math/divisors-2024", 2]],
  );
});

test("--noise wraps file-task tools client-side: injected failures are labelled", async () => {
  const server = await serveScript("coder", coder);
  servers.push(server);
  const result = await runJson([
    "--policy",
    `openai:${server.url}#coder`,
    "--tasks",
    MATH_FILE,
    "--verifier",
    "math",
    "--code",
    "--noise",
    "1",
    "--n",
    "1",
    "--runs",
    root,
  ]);
  assert.equal(result.config.noise, 1);
  const results = storedTrajectories(result.directory).flatMap((t) =>
    t.turns.flatMap((turn) => (turn.toolResult ? [turn.toolResult] : [])),
  );
  const injected = results.filter((toolResult) => toolResult.injected);
  assert.ok(injected.length > 0, "some failures injected");
  for (const toolResult of injected) assert.ok(["error", "empty", "timeout"].includes(toolResult.status));
  // The first call of an episode cannot be corrupted (no earlier result): it is real when not injected.
  for (const toolResult of results.filter((r) => !r.injected)) assert.equal(toolResult.content.trim(), "16");
});

test("--mcp-url: an MCP server's tools in episodes; the token is needed again on resume, never stored", async () => {
  const mcp: RunningServer = await serveHttp([createCalcTool()], { port: 0, token: "s3cret" });
  servers.push(mcp);
  const server = await serveScript("calculator", (context) =>
    context.turns.length === 0
      ? "<calc> 2 * 8 </calc>"
      : `<answer> ${context.turns[0].observation?.text.match(/\d+/)?.[0]} </answer>`,
  );
  servers.push(server);
  const args = ["--policy", `openai:${server.url}#calculator`, "--tasks", MATH_FILE, "--verifier", "math"];
  const result = await runJson([
    ...args,
    "--mcp-url",
    mcp.url!,
    "--mcp-token",
    "s3cret",
    "--n",
    "1",
    "--runs",
    root,
    "--run-id",
    "mcp",
  ]);
  assert.deepEqual(result.config.toolSetup, { code: false, mcp: { url: mcp.url, token: true } });
  assert.doesNotMatch(JSON.stringify(result.config), /s3cret/);
  const trajectories = storedTrajectories(result.directory);
  for (const trajectory of trajectories) {
    assert.equal(trajectory.turns[0].action.type, "tool-call");
    assert.equal(trajectory.turns[0].toolResult?.status, "ok");
    assert.equal(trajectory.turns[0].toolResult?.content.trim(), "16");
  }
  assert.equal(trajectories.filter((t) => t.correct).length, 1, "16 is the answer of one task");

  await assert.rejects(run(["--resume", result.directory]), /needs a bearer token.*--mcp-token/);
  const resumed = await run(["--resume", result.directory, "--mcp-token", "s3cret"]);
  assert.match(resumed.out[0], /0 episodes sampled, 8 found stored/);
  // A wrong token is refused by the server when the tools are listed, before anything is sampled.
  await assert.rejects(
    run([...args, "--mcp-url", mcp.url!, "--mcp-token", "wrong", "--runs", root]),
    /cannot use the MCP server .*Unauthorized/,
  );
});

test("budgets: long for openai: policies, as before in process, and flags override them", async () => {
  const expert = await startChatServer({
    loadPolicy: (sampling) => resolvePolicy("expert", sampling),
    model: "expert",
    port: 0,
    log: silent,
    resolveTask: worldTaskResolver(),
  });
  servers.push(expert);
  const common = ["--tasks", "4", "--n", "1", "--runs", root];
  const served = await runJson(["--policy", `openai:${expert.url}#expert`, ...common]);
  assert.equal(served.metrics["eval/pass@1"], 1, "the expert solves world tasks through the endpoint");
  assert.equal(served.config.budgets.maxTurnTokens, 4096);
  assert.equal(served.config.budgets.maxTokens, 16384);
  assert.equal(served.config.verifier, null);
  assert.equal(served.config.toolSetup, null);

  const local = await runJson(["--policy", "expert", ...common]);
  assert.equal(local.config.budgets.maxTurnTokens, 32);
  assert.equal(local.config.budgets.maxTokens, 160);

  const custom = await runJson([
    "--policy",
    "expert",
    ...common,
    "--max-turns",
    "9",
    "--max-turn-tokens",
    "40",
    "--max-tokens",
    "300",
  ]);
  assert.deepEqual(
    [custom.config.budgets.maxTurns, custom.config.budgets.maxTurnTokens, custom.config.budgets.maxTokens],
    [9, 40, 300],
  );
});

test("task-file options are validated before anything runs", async () => {
  const file = ["--policy", "expert", "--tasks", MATH_FILE, "--runs", root];
  await assert.rejects(run(file), /a task file needs --verifier <name> .*math, choice, em, f1/);
  await assert.rejects(
    run([...file, "--verifier", "regex"]),
    /--verifier must be one of math, choice, em, f1/,
  );
  await assert.rejects(
    run([...file, "--verifier", "math", "--family", "lookup"]),
    /--family only apply to world/,
  );
  await assert.rejects(
    run([...file, "--verifier", "math", "--mcp-command", "x", "--mcp-url", "http://127.0.0.1:1/mcp"]),
    /--mcp-command or --mcp-url, not both/,
  );
  await assert.rejects(
    run([...file, "--verifier", "math", "--mcp-url", "ftp://x"]),
    /--mcp-url must be an http/,
  );
  await assert.rejects(
    run(["--policy", "expert", "--tasks", "missing.jsonl", "--verifier", "math"]),
    /no such file "missing\.jsonl"/,
  );
  await assert.rejects(run(["--policy", "expert", "--tasks", "3", "--code"]), /--code need a task file/);
  await assert.rejects(
    run(["--policy", "expert", "--tasks", "3", "--verifier", "em"]),
    /--verifier need a task file/,
  );
});

test("splitCommandLine: words, quotes and escapes, no shell", () => {
  assert.deepEqual(splitCommandLine("npx agentrl mcp serve --seed 3"), [
    "npx",
    "agentrl",
    "mcp",
    "serve",
    "--seed",
    "3",
  ]);
  assert.deepEqual(splitCommandLine(`node "my server.js" --name 'a b' x\\ y ""`), [
    "node",
    "my server.js",
    "--name",
    "a b",
    "x y",
    "",
  ]);
  assert.deepEqual(splitCommandLine(`echo "say \\"hi\\" \\n" $HOME`), ["echo", 'say "hi" \\n', "$HOME"]);
  assert.deepEqual(splitCommandLine("   "), []);
  assert.throws(() => splitCommandLine(`node "unclosed`), /unclosed " quote/);
});
