import assert from "node:assert/strict";
import { test } from "node:test";
import { np } from "../../engine/jax.ts";
import { crossEntropy } from "./losses.ts";

async function values(x: ReturnType<typeof np.array>): Promise<number[]> {
  return [...(await x.data())];
}

test("crossEntropy is the negative log-prob", async () => {
  const out = crossEntropy({ logprobs: np.array([-0.5, -2]), entropy: null }, {});
  assert.deepEqual(await values(out.loss), [0.5, 2]);
});
