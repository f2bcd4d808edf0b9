import assert from "node:assert/strict";
import { test } from "node:test";
import { z } from "zod";
import { createRng } from "../core/random.ts";
import type { Tool, ToolResult } from "../types/tool.ts";
import { createCalcTool } from "./calc.ts";
import { callTool } from "./call-tool.ts";
import { NOISE_MODES, type NoiseConfig, uniformNoise, validateNoise, withNoise } from "./noise.ts";
import { createSearchTool } from "./search.ts";

const DOCUMENTS = [
  { id: "c1", title: "zenda", text: "zenda : city in ruritania . population 4213 ." },
  { id: "c2", title: "zendar", text: "zendar : city in ruritania . population 977 ." },
  { id: "k1", title: "ruritania", text: "ruritania : country . capital zenda ." },
];

/** A tool that always succeeds, with a trivial corruption, so a test can count statuses cheaply. */
const perfect: Tool<{ query: string }> = {
  name: "perfect",
  description: "always ok",
  schema: z.object({ query: z.string() }),
  textArgument: "query",
  async call(args) {
    return { status: "ok", content: args.query, injected: false };
  },
};
const corruptPerfect = () => ({ content: "wrong" });

async function statuses(tool: Tool<{ query: string }>, calls: number): Promise<ToolResult[]> {
  const results: ToolResult[] = [];
  for (let i = 0; i < calls; i++) results.push(await tool.call({ query: "zenda" }));
  return results;
}

test("validateNoise names the bad field; uniformNoise splits evenly", () => {
  assert.throws(() => validateNoise({ error: 1.5 }), /rate "error" must be a number in \[0, 1\], got 1\.5/);
  assert.throws(() => validateNoise({ timeout: -0.1 }), /"timeout"/);
  assert.throws(() => validateNoise({ empty: Number.NaN }), /"empty"/);
  assert.throws(() => validateNoise({ corrupted: "0.1" as never }), /"corrupted"/);
  assert.throws(() => validateNoise({ error: 0.6, empty: 0.6 }), /sum to at most 1, got 1\.2/);
  assert.throws(() => validateNoise({ errors: 0.1 } as NoiseConfig), /unknown failure mode "errors"/);
  assert.deepEqual(validateNoise({ error: 0.1 }), { error: 0.1, empty: 0, timeout: 0, corrupted: 0 });
  assert.deepEqual(uniformNoise(0.2), { error: 0.05, empty: 0.05, timeout: 0.05, corrupted: 0.05 });
  validateNoise(uniformNoise(1));
  assert.throws(() => uniformNoise(2), /total rate/);
  assert.throws(() => withNoise(perfect, { error: 2 }, createRng(0)), /"error"/);
});

test("a positive corrupted rate needs a way to corrupt", () => {
  assert.throws(() => withNoise(perfect, { corrupted: 0.1 }, createRng(0)), /no way to corrupt/);
  withNoise(perfect, { error: 0.1 }, createRng(0)); // fine without corruption
  withNoise(perfect, { corrupted: 0.1 }, createRng(0), { corrupt: corruptPerfect });
});

test("observed rates match the configured rates (binomial tolerance)", async () => {
  const config = { error: 0.1, empty: 0.05, timeout: 0.15, corrupted: 0.2 };
  const calls = 20_000;
  const noisy = withNoise(perfect, config, createRng(42), { corrupt: corruptPerfect });
  const results = await statuses(noisy, calls);
  const counts: Record<string, number> = { ok: 0, error: 0, empty: 0, timeout: 0, corrupted: 0 };
  for (const result of results) counts[result.status]++;
  for (const mode of NOISE_MODES) {
    const p = config[mode];
    // 4.5 standard deviations: a false failure about once in 150 000 runs per mode.
    const tolerance = 4.5 * Math.sqrt((p * (1 - p)) / calls);
    const observed = counts[mode] / calls;
    assert.ok(
      Math.abs(observed - p) < tolerance,
      `${mode}: observed ${observed}, configured ${p} ± ${tolerance}`,
    );
  }
  assert.ok(Math.abs(counts.ok / calls - 0.5) < 4.5 * Math.sqrt(0.25 / calls));
});

test("every injected result is labelled; real results are not", async () => {
  const noisy = withNoise(perfect, uniformNoise(0.8), createRng(5), { corrupt: corruptPerfect });
  const expected: Record<string, string> = {
    error: "error : service unavailable",
    empty: "no results",
    timeout: "error : timed out",
    corrupted: "wrong",
    ok: "zenda",
  };
  for (const result of await statuses(noisy, 2000)) {
    assert.equal(result.injected, result.status !== "ok");
    assert.equal(result.content, expected[result.status]);
  }
});

test("the same seed gives the same failures; another seed other failures", async () => {
  const sequence = async (seed: number) => {
    const search = withNoise(createSearchTool(DOCUMENTS), uniformNoise(0.6), createRng(seed));
    return (await statuses(search, 300)).map((result) => `${result.status}:${result.refs?.join(",")}`);
  };
  assert.deepEqual(await sequence(9), await sequence(9));
  assert.notDeepEqual(await sequence(9), await sequence(10));
});

test("corruption draws do not shift which calls fail", async () => {
  // Same seed, same mode draws: with and without corruption the calls that fail are the same ones.
  const a = withNoise(perfect, { error: 0.3, corrupted: 0.3 }, createRng(1), { corrupt: corruptPerfect });
  const b = withNoise(perfect, { error: 0.3, corrupted: 0.3 }, createRng(1), {
    corrupt: (_args, _real, rng) => ({ content: String(rng.next()) }),
  });
  const statusesA = (await statuses(a, 500)).map((result) => result.status);
  const statusesB = (await statuses(b, 500)).map((result) => result.status);
  assert.deepEqual(statusesA, statusesB);
});

test("corrupted search returns another document, labelled corrupted", async () => {
  const search = createSearchTool(DOCUMENTS);
  const noisy = withNoise(search, { corrupted: 1 }, createRng(2));
  for (let i = 0; i < 20; i++) {
    const result = await noisy.call({ query: "zenda" });
    assert.equal(result.status, "corrupted");
    assert.equal(result.injected, true);
    assert.notDeepEqual(result.refs, ["c1"]);
    assert.equal(result.content, DOCUMENTS.find((document) => document.id === result.refs![0])!.text);
  }
});

test("corrupted calc is off by some; calls that cannot be corrupted pass through", async () => {
  const noisy = withNoise(createCalcTool(), { corrupted: 1 }, createRng(4));
  const result = await noisy.call({ expression: "1991 - 1850" });
  assert.equal(result.status, "corrupted");
  assert.notEqual(result.value, 141);
  assert.equal(result.content, String(result.value));
  const real = await noisy.call({ expression: "1 / 0" });
  assert.deepEqual(real, { status: "error", content: "error : division by zero", injected: false });
});

test("invalid arguments are never masked by injected noise", async () => {
  const noisy = withNoise(createSearchTool(DOCUMENTS), { error: 1 }, createRng(0));
  const result = await callTool(noisy, { query: 3 });
  assert.deepEqual(
    [result.status, result.content, result.injected],
    ["error", "error : invalid argument query", false],
  );
});

test("an injected timeout returns at once", async () => {
  const noisy = withNoise(perfect, { timeout: 1 }, createRng(0));
  const result = await callTool(noisy, { query: "x" }, { timeoutMs: 10_000 });
  assert.deepEqual([result.status, result.injected], ["timeout", true]);
  assert.ok(result.latencyMs! < 50);
});

test("zero noise is the tool itself", async () => {
  const noisy = withNoise(createSearchTool(DOCUMENTS), {}, createRng(0));
  assert.deepEqual(
    await noisy.call({ query: "zendar" }),
    await createSearchTool(DOCUMENTS).call({ query: "zendar" }),
  );
});
