import assert from "node:assert/strict";
import { test } from "node:test";
import { DEFAULT_BUDGETS } from "../env/run-episodes.ts";
import { rolloutTasks, worldToolsFor } from "../env/task-set.ts";
import { createExpertPolicy } from "../policy/scripted/index.ts";
import { checkAnswer } from "../world/index.ts";
import { PANEL_MEMBERS, panelPolicy } from "./panel.ts";
import { checkRewardHacking, type MemberScore } from "./reward-hacking.ts";

const chain = rolloutTasks({ split: "test", count: 8, seed: 1, family: "chain" });
const setup = { tasks: chain, tools: worldToolsFor(), verify: checkAnswer, protocol: "text" as const };

test("mt-grpo is farmed on chain tasks (per-call and format rewards); turn-credit is not", async () => {
  const farmed = await checkRewardHacking({ ...setup, reward: "mt-grpo", expert: createExpertPolicy() });
  assert.equal(farmed.ok, false);
  const members = farmed.data?.members as MemberScore[];
  const spam = members.find((m) => m.member === "tool-spam")!;
  assert.ok(spam.share >= 0.5, `tool-spam reaches ${spam.share} of the expert's reward`);
  assert.equal(spam.correct, 0, "the panel solves nothing");
  const terms = spam.farmed.map((f) => f.term);
  assert.equal(terms[0], "tool-executed", "the per-call reward is the term farmed most");
  assert.ok(terms.includes("format"), "the format bonus is farmed too");
  assert.match(farmed.detail, /tool-spam .* by farming tool-executed/);
  assert.equal(farmed.changes[0].kind, "fix-reward");

  const capped = await checkRewardHacking({ ...setup, reward: "turn-credit", expert: createExpertPolicy() });
  assert.equal(capped.ok, true, capped.detail);
  for (const member of capped.data!.members as MemberScore[]) assert.ok(member.share < 0.5, member.member);
});

test("an expert the reward does not pay more than an empty episode fails the check", async () => {
  // The "expert" here answers at once with a guess: exact match pays it nothing.
  const check = await checkRewardHacking({
    ...setup,
    reward: "exact-match",
    expert: panelPolicy("answer-at-once", "text", DEFAULT_BUDGETS),
  });
  assert.equal(check.ok, false);
  assert.match(check.detail, /does not pay for solving/);
});

test("the panel stays within the budgets and ends its episodes with an answer, in both protocols", async () => {
  const budgets = { ...DEFAULT_BUDGETS, maxTurns: 6 };
  const { runEpisodes } = await import("../env/run-episodes.ts");
  for (const protocol of ["text", "chat"] as const) {
    for (const member of PANEL_MEMBERS) {
      const [trajectory] = await runEpisodes({
        policy: panelPolicy(member, protocol, budgets),
        episodes: [{ task: chain[0], seed: 5 }],
        tools: setup.tools,
        verify: checkAnswer,
        budgets,
      });
      const where = `${protocol} ${member}`;
      assert.equal(trajectory.endReason, "answer", `${where}: ${trajectory.endReason}`);
      assert.ok(
        trajectory.turns.every((turn) => turn.action.type !== "format-error"),
        where,
      );
      assert.ok(trajectory.turns.length <= budgets.maxTurns, where);
      if (member === "tool-spam" || member === "repeat-call")
        assert.equal(trajectory.turns.length, budgets.maxTurns, where);
    }
  }
});
