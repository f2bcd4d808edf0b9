import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { runEpisodes } from "../env/run-episodes.ts";
import { scriptedPolicy } from "../policy/scripted/index.ts";
import { callTool, uniformNoise, worldTools } from "../tools/index.ts";
import type { AnyTool } from "../types/tool.ts";
import type { Trajectory } from "../types/trajectory.ts";
import { checkAnswer, generateTasks, generateWorld, splitOfWorld } from "../world/index.ts";
import { connectMcpTools, type McpConnection } from "./client.ts";
import { withToolNoise } from "./noise.ts";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const WORLD = 3;
const world = generateWorld(WORLD);
const tasks = generateTasks(world, { count: 6, split: splitOfWorld(WORLD), seed: 11 });
const episodes = tasks.map((task, i) => ({ task, seed: i }));

// `agentrl mcp serve` as a real process over stdio: the mcp command's own registration, run by the
// Node that runs the tests (main.ts wires the same `register`).
const ENTRY = [
  'import { Command } from "commander";',
  'import { register } from "./src/cli/commands/mcp.ts";',
  "const program = new Command();",
  "register(program);",
  'await program.parseAsync(process.argv.slice(1), { from: "user" });',
].join("\n");

function spawnServer(args: string[], trustResultMeta = true): Promise<McpConnection> {
  return connectMcpTools(
    {
      command: process.execPath,
      args: ["--input-type=module", "-e", ENTRY, "mcp", "serve", ...args],
      cwd: root,
    },
    { trustResultMeta, stderr: "inherit" },
  );
}

let clean: McpConnection;
let noisy: McpConnection;
let noisyUntrusted: McpConnection;
before(async () => {
  [clean, noisy, noisyUntrusted] = await Promise.all([
    spawnServer(["--seed", String(WORLD)]),
    spawnServer(["--seed", String(WORLD), "--noise", "0.5", "--noise-seed", "7"]),
    spawnServer(["--seed", String(WORLD), "--noise", "0.5", "--noise-seed", "7"], false),
  ]);
});
after(async () => {
  await Promise.all([clean?.close(), noisy?.close(), noisyUntrusted?.close()]);
});

/** Turns without timings (latency differs between a local call and a round trip). */
function turnsOf(trajectories: Trajectory[]) {
  return trajectories.map((trajectory) =>
    trajectory.turns.map(({ toolResult, ...turn }) => {
      if (!toolResult) return turn;
      const { latencyMs: _latency, ...result } = toolResult;
      return { ...turn, toolResult: result };
    }),
  );
}

test("MCP tools from a real server process run through runEpisodes like the built-in tools", async () => {
  assert.deepEqual(
    clean.tools.map((tool) => [tool.name, tool.textArgument, tool.exactSchema]),
    [
      ["search", "query", true],
      ["calc", "expression", true],
    ],
  );
  const run = (tools: () => readonly AnyTool[]) =>
    runEpisodes({ policy: scriptedPolicy("expert"), episodes, tools, verify: checkAnswer });
  const overMcp = await run(() => clean.tools);
  const builtIn = await run(() => worldTools(world));
  for (const trajectory of overMcp)
    assert.ok(trajectory.correct, `${trajectory.taskId}: ${trajectory.finalAnswer}`);
  // Same statuses, contents, refs and calc values, turn for turn.
  assert.deepEqual(turnsOf(overMcp), turnsOf(builtIn));
  const results = overMcp.flatMap((t) =>
    t.turns.flatMap((turn) => (turn.toolResult ? [turn.toolResult] : [])),
  );
  assert.ok(results.length >= tasks.length);
  assert.ok(results.every((result) => result.status === "ok" && !result.injected && result.latencyMs! >= 0));
  assert.ok(results.some((result) => result.refs && result.refs.length > 0));
});

test("server-side noise: labelled through the agentrl result meta, invisible to a plain MCP host", async () => {
  // The server's noise stream runs over its calls in arrival order: with one episode at a time, the
  // same calls on local tools with the same noise seed draw the same failures.
  const local = worldTools(world, { noise: uniformNoise(0.5), seed: 7 });
  const run = (tools: () => readonly AnyTool[]) =>
    runEpisodes({ policy: scriptedPolicy("expert"), episodes, tools, verify: checkAnswer, batchSize: 1 });
  const overMcp = await run(() => noisy.tools);
  assert.deepEqual(turnsOf(overMcp), turnsOf(await run(() => local)));
  const results = overMcp.flatMap((t) =>
    t.turns.flatMap((turn) => (turn.toolResult ? [turn.toolResult] : [])),
  );
  const injected = results.filter((result) => result.injected);
  assert.ok(injected.length >= 3, `${injected.length} injected of ${results.length}`);
  assert.ok(new Set(injected.map((result) => result.status)).size >= 2);

  // Without the meta labels the client sees only MCP's isError and text: nothing is labelled
  // injected, an injected timeout reads as an error, an injected empty result as ok text.
  const plain = await run(() => noisyUntrusted.tools);
  const plainResults = plain.flatMap((t) =>
    t.turns.flatMap((turn) => (turn.toolResult ? [turn.toolResult] : [])),
  );
  assert.ok(plainResults.length > 0);
  assert.ok(plainResults.every((result) => !result.injected));
  assert.ok(plainResults.every((result) => result.status === "ok" || result.status === "error"));
  assert.ok(plainResults.some((result) => result.status === "error"));
});

test("client-side noise labels injected failures on any MCP tool", async () => {
  const trajectories = await runEpisodes({
    policy: scriptedPolicy("expert"),
    episodes,
    tools: (_task, seed) => withToolNoise(clean.tools, uniformNoise(0.6), seed),
    verify: checkAnswer,
  });
  const results = trajectories.flatMap((t) =>
    t.turns.flatMap((turn) => (turn.toolResult ? [turn.toolResult] : [])),
  );
  const injected = results.filter((result) => result.injected);
  assert.ok(injected.length >= 3);
  for (const result of injected) assert.notEqual(result.status, "ok");
  assert.ok(results.some((result) => !result.injected && result.status === "ok"));
  // Same episode seed, same injected failures.
  const again = await runEpisodes({
    policy: scriptedPolicy("expert"),
    episodes,
    tools: (_task, seed) => withToolNoise(clean.tools, uniformNoise(0.6), seed),
    verify: checkAnswer,
  });
  assert.deepEqual(turnsOf(again), turnsOf(trajectories));
});

test("tool failures are isError results; bad arguments and unknown tools never throw", async () => {
  const calc = clean.tools.find((tool) => tool.name === "calc")!;
  const divide = await callTool(calc, { expression: "1 / 0" });
  assert.equal(divide.status, "error");
  assert.equal(divide.content, "error : division by zero");
  assert.equal((await callTool(calc, { expression: "6 * 7" })).value, 42);
  // The client-side zod schema (from the server's JSON schema) rejects bad arguments before any call.
  assert.equal((await callTool(calc, { expression: 5 })).content, "error : invalid argument expression");
  // The raw call with arguments the server rejects comes back as an error result.
  const raw = await calc.call({ expression: 5 } as never);
  assert.equal(raw.status, "error");
  const untrustedCalc = noisyUntrusted.tools.find((tool) => tool.name === "calc")!;
  let sawError = false;
  for (let i = 0; i < 6 && !sawError; i++) {
    const result = await callTool(untrustedCalc, { expression: "1 / 0" });
    sawError = result.status === "error";
  }
  assert.ok(sawError, "isError is an error status even without the meta labels");
});
