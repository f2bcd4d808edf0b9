import assert from "node:assert/strict";
import { test } from "node:test";
import { givenSftModel } from "./stage-runs.ts";

test("sft.models: a checkpoint without an SFT result in its metadata is refused by name", async () => {
  await assert.rejects(givenSftModel("models/base-strong"), /models\/base-strong is not an SFT checkpoint/);
  await assert.rejects(givenSftModel("models/does-not-exist"), /does-not-exist/);
});
