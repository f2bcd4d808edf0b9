import assert from "node:assert/strict";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { z } from "zod";
import { ClassifiedError, infraFailure } from "../types/failure.ts";
import type { Tool, ToolCallOptions } from "../types/tool.ts";
import { callTool } from "./call-tool.ts";

const echo: Tool<{ query: string; limit?: number }> = {
  name: "echo",
  description: "echoes the query",
  schema: z.object({ query: z.string(), limit: z.number().int().optional() }),
  textArgument: "query",
  async call(args) {
    return { status: "ok", content: args.query, injected: false };
  },
};

/** Sleeps `ms` unless its signal fires; records whether it saw the abort. */
function slowTool(ms: number) {
  const seen = { aborted: false, finished: false };
  const tool: Tool<{ query: string }> = {
    ...echo,
    name: "slow",
    async call(args, options?: ToolCallOptions) {
      try {
        await sleep(ms, undefined, { signal: options?.signal });
      } catch {
        seen.aborted = true;
        throw new Error("aborted");
      }
      seen.finished = true;
      return { status: "ok", content: args.query, injected: false };
    },
  };
  return { tool, seen };
}

test("valid call: the tool's result with latencyMs", async () => {
  const result = await callTool(echo, { query: "zenda" });
  assert.equal(result.status, "ok");
  assert.equal(result.content, "zenda");
  assert.equal(result.injected, false);
  assert.ok(typeof result.latencyMs === "number" && result.latencyMs >= 0);
});

test("invalid arguments: error naming the argument, tool not called", async () => {
  let called = false;
  const spy = {
    ...echo,
    call: async () => {
      called = true;
      return { status: "ok" as const, content: "", injected: false };
    },
  };
  assert.equal((await callTool(spy, {})).content, "error : missing argument query");
  assert.equal((await callTool(spy, { query: 3 })).content, "error : invalid argument query");
  assert.equal((await callTool(spy, { query: "a", limit: 1.5 })).content, "error : invalid argument limit");
  assert.equal((await callTool(spy, null)).content, "error : invalid arguments");
  assert.equal((await callTool(spy, "zenda")).status, "error");
  assert.equal(called, false);
});

test("a throwing tool, a tool returning garbage and hostile args are error results", async () => {
  const thrower = { ...echo, call: async () => Promise.reject(new Error("boom")) };
  const syncThrower = {
    ...echo,
    call: () => {
      throw new Error("sync boom");
    },
  };
  const garbage = { ...echo, call: async () => ({ nope: 1 }) as never };
  for (const tool of [thrower, syncThrower, garbage]) {
    const result = await callTool(tool, { query: "x" });
    assert.deepEqual(
      [result.status, result.content, result.injected],
      ["error", "error : tool failed", false],
    );
  }
  const hostile = new Proxy(
    {},
    {
      get() {
        throw new Error("getter");
      },
    },
  );
  assert.equal((await callTool(echo, hostile)).status, "error");
});

test("a tool's exception is labelled: tool-threw by default, its own class for a ClassifiedError, never injected", async () => {
  const thrower = { ...echo, call: async () => Promise.reject(new TypeError("boom")) };
  const thrown = await callTool(thrower, { query: "x" });
  assert.deepEqual(thrown.failure, {
    class: "tool",
    code: "tool-threw",
    message: "echo threw TypeError: boom",
  });
  assert.equal(thrown.injected, false);
  const garbage = { ...echo, call: async () => ({ nope: 1 }) as never };
  assert.equal((await callTool(garbage, { query: "x" })).failure?.code, "tool-bad-result");
  const died = {
    ...echo,
    call: async () => Promise.reject(new ClassifiedError(infraFailure("sandbox-died", "worker exited"))),
  };
  const result = await callTool(died, { query: "x" });
  assert.deepEqual(result.failure, infraFailure("sandbox-died", "worker exited"));
  assert.equal(result.injected, false);
  assert.equal((await callTool(echo, { query: "x" })).failure, undefined);
});

test("a missing injected flag is normalised to false", async () => {
  const sloppy = { ...echo, call: async () => ({ status: "ok", content: "x" }) as never };
  assert.equal((await callTool(sloppy, { query: "x" })).injected, false);
});

test("a slow tool is cut off by timeoutMs and sees the abort", async () => {
  const { tool, seen } = slowTool(2000);
  const started = performance.now();
  const result = await callTool(tool, { query: "x" }, { timeoutMs: 30 });
  const elapsed = performance.now() - started;
  assert.deepEqual([result.status, result.content, result.injected], ["timeout", "error : timed out", false]);
  assert.ok(elapsed < 1000, `took ${elapsed} ms`);
  assert.ok(result.latencyMs! >= 25 && result.latencyMs! < 1000);
  await sleep(5);
  assert.equal(seen.aborted, true);
  assert.equal(seen.finished, false);
});

test("a fast tool under a timeout answers normally", async () => {
  const { tool } = slowTool(5);
  assert.equal((await callTool(tool, { query: "x" }, { timeoutMs: 1000 })).status, "ok");
});

test("an abort signal cancels a running call; an aborted signal skips the call", async () => {
  const { tool, seen } = slowTool(2000);
  const controller = new AbortController();
  setTimeout(() => controller.abort(), 20);
  const result = await callTool(tool, { query: "x" }, { signal: controller.signal, timeoutMs: 5000 });
  assert.deepEqual([result.status, result.content], ["error", "error : cancelled"]);
  await sleep(5);
  assert.equal(seen.aborted, true);

  const fresh = slowTool(10);
  const aborted = await callTool(fresh.tool, { query: "x" }, { signal: AbortSignal.abort() });
  assert.equal(aborted.content, "error : cancelled");
  await sleep(20);
  assert.equal(fresh.seen.finished, false);
});
