/**
 * examples/hf stays runnable: its RL config parses (with an hf: base) and its task file names
 * world tasks `train rl --task-file` can train on. (The script itself runs end to end on the
 * qwen3-chat fixture in about 15 s: `examples/hf/run.sh src/policy/hf/fixtures/qwen3-chat`.)
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { CHAT_FOLDER } from "../policy/hf/testing-chat-task.ts";
import { parseRlConfig } from "./config.ts";
import { listSampler, readTaskList } from "./tasks.ts";

const EXAMPLE = join(import.meta.dirname, "..", "..", "examples", "hf");

test("examples/hf: the RL config and the task file are valid", () => {
  const config = parseRlConfig({
    ...JSON.parse(readFileSync(join(EXAMPLE, "rl.json"), "utf8")),
    base: `hf:${CHAT_FOLDER}`,
  });
  assert.ok(config.lora && config.evalEvery === 0 && !config.dynamicSampling);
  const tasks = readTaskList(join(EXAMPLE, "tasks.txt"));
  assert.equal(tasks.length, 4);
  assert.ok(tasks.every((task) => task.family === "lookup" && task.split === "train"));
  assert.equal(listSampler(tasks, 1, "example").draw(1, 0, 2).length, 2);
  const script = readFileSync(join(EXAMPLE, "run.sh"), "utf8");
  for (const step of ["doctor", "eval", "train rl --policy", "rl/model"])
    assert.ok(script.includes(step), step);
});
