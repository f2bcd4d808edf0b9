import assert from "node:assert/strict";
import { test } from "node:test";
import { runEpisodes } from "../env/run-episodes.ts";
import { createMockPolicy } from "../policy/mock.ts";
import { createCodeTool } from "../tools/index.ts";
import { getVerifier } from "../verify/index.ts";
import { readTaskFile } from "./index.ts";

// File tasks, a verifier and the code tool through the same episode loop as world tasks, with a
// chat-protocol mock standing in for an LLM endpoint.
test("math file tasks: a chat policy computes with the code tool and is verified by value", async () => {
  const tasks = await readTaskFile("examples/tasks/math-sample.jsonl");
  // What the "model" answers per task: equivalent forms, one wrong value, one computed with code.
  const answers: Record<string, string> = {
    "math/divisors-2024": "There are \\boxed{16} divisors.",
    "math/two-heads": "The probability is $\\boxed{0.375}$.",
    "math/distance": "\\boxed{\\sqrt{8}}",
    "math/telescoping": "The answer is 9/10.",
    "math/quadratic-roots": "\\boxed{1-\\sqrt{2}}", // the negative root: wrong
  };
  const policy = createMockPolicy(
    (context) => {
      const id = context.task.id;
      if (id === "math/sum-of-squares" || id === "math/power-mod-7" || id === "math/residues-mod-5") {
        if (context.turns.length === 0) {
          const code = {
            "math/sum-of-squares": "let s = 0; for (let k = 1; k <= 10; k++) s += k * k; s",
            "math/power-mod-7": "console.log(Number(2n ** 100n % 7n))",
            "math/residues-mod-5":
              "let s = 0; for (let n = 1; n < 100; n++) if ((n * n + 1) % 5 === 0) s += n; s",
          }[id];
          return {
            text: "",
            toolCalls: [{ id: "call-1", name: "code", arguments: JSON.stringify({ code }) }],
          };
        }
        const observation = context.turns[0].observation?.text ?? "";
        return `So the answer is \\boxed{${observation.replace("=> ", "").trim()}}.`;
      }
      return answers[id] ?? "no idea";
    },
    { protocol: "chat" },
  );
  const code = createCodeTool();
  const trajectories = await runEpisodes({
    policy,
    episodes: tasks.map((task, i) => ({ task, seed: i })),
    tools: () => [code],
    verify: getVerifier("math"),
  });
  const correct = Object.fromEntries(trajectories.map((t) => [t.taskId, t.correct]));
  assert.deepEqual(correct, {
    "math/divisors-2024": true,
    "math/residues-mod-5": true,
    "math/two-heads": true,
    "math/distance": true,
    "math/power-mod-7": true,
    "math/telescoping": true,
    "math/sum-of-squares": true,
    "math/quadratic-roots": false,
  });
  const coded = trajectories.find((t) => t.taskId === "math/sum-of-squares")!;
  assert.deepEqual(coded.turns[0].toolResult?.status, "ok");
  assert.equal(coded.turns[0].observation?.text, "=> 385");
  assert.equal(coded.finalAnswer, "385");
});

test("choice and trivia file tasks with the choice and em verifiers", async () => {
  const choice = await readTaskFile("examples/tasks/choice-sample.jsonl");
  const trivia = await readTaskFile("examples/tasks/trivia-sample.jsonl");
  // "A" is wrong (D is gold); "2" is the text of choice B of the pH question, so it is right.
  const picks = ["(B) photon", "Answer: A", "**C**", "A", "2"];
  const chat = createMockPolicy((context) => picks[choice.findIndex((task) => task.id === context.task.id)], {
    protocol: "chat",
  });
  const choiceRuns = await runEpisodes({
    policy: chat,
    episodes: choice.map((task, i) => ({ task, seed: i })),
    tools: () => [],
    verify: getVerifier("choice"),
  });
  assert.deepEqual(
    choiceRuns.map((t) => t.correct),
    [true, true, true, false, true],
  );
  const replies = ["mars", "Shakespeare", "Ag", "Roma", "the Pacific", "6"];
  const text = createMockPolicy(
    (context) => `<answer> ${replies[trivia.findIndex((task) => task.id === context.task.id)]} </answer>`,
  );
  const triviaRuns = await runEpisodes({
    policy: text,
    episodes: trivia.map((task, i) => ({ task, seed: i })),
    tools: () => [],
    verify: getVerifier("em"),
  });
  assert.deepEqual(
    triviaRuns.map((t) => t.correct),
    [true, true, false, true, true, true],
  );
});
