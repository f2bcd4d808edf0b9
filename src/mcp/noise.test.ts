import assert from "node:assert/strict";
import { test } from "node:test";
import { z } from "zod";
import { createRng } from "../core/random.ts";
import { withNoise } from "../tools/index.ts";
import type { Tool } from "../types/tool.ts";
import { withStaleNoise, withToolNoise } from "./noise.ts";

const echo: Tool<{ text: string }> = {
  name: "echo",
  description: "echoes",
  schema: z.object({ text: z.string() }),
  textArgument: "text",
  async call({ text }) {
    return { status: "ok", content: `echo ${text}`, injected: false };
  },
};

test("stale corruption returns an earlier result of other arguments, labelled", async () => {
  const always = withStaleNoise(echo, { corrupted: 1 }, 3);
  // Nothing earlier to return: the real result comes back, unlabelled.
  assert.deepEqual(await always.call({ text: "a" }), { status: "ok", content: "echo a", injected: false });
  assert.deepEqual(await always.call({ text: "b" }), {
    status: "corrupted",
    content: "echo a",
    injected: true,
  });
  const third = await always.call({ text: "c" });
  assert.equal(third.status, "corrupted");
  assert.ok(third.content === "echo a" || third.content === "echo b");
  // The same arguments never get their own result back as a "corruption".
  assert.equal((await always.call({ text: "a" })).content === "echo a", false);
});

test("withToolNoise: seeded, labelled, and no wrapping for zero noise", async () => {
  const draw = async (seed: number) => {
    const [tool] = withToolNoise([echo], { error: 0.3, empty: 0.2, timeout: 0.1, corrupted: 0.2 }, seed);
    const results = [];
    for (let i = 0; i < 40; i++) results.push(await tool.call({ text: String(i % 7) }));
    return results;
  };
  const results = await draw(9);
  assert.deepEqual(await draw(9), results);
  assert.notDeepEqual(await draw(10), results);
  const statuses = new Set(results.filter((result) => result.injected).map((result) => result.status));
  assert.deepEqual([...statuses].sort(), ["corrupted", "empty", "error", "timeout"]);
  assert.ok(results.every((result) => result.injected || result.status === "ok"));
  assert.equal(withToolNoise([echo], {}, 1)[0], echo);
  assert.throws(() => withToolNoise([echo], { error: 2 }, 1), /rate "error" must be a number in \[0, 1\]/);
  // The plain wrapper of src/tools composes too, for the modes that need no corruption.
  const plain = withNoise(echo, { error: 1 }, createRng(1));
  assert.deepEqual(await plain.call({ text: "x" }), {
    status: "error",
    content: "error : service unavailable",
    injected: true,
  });
});
