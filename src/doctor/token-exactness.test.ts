/**
 * Token exactness behind the recording gateway, against a fake upstream whose chat template is
 * chosen per test: `exact` renders a past assistant message as the ids it sampled (start, content,
 * stop); `drops-stop` re-renders it without its stop token (the gateway's forced-break case: the
 * next prompt no longer extends the last prompt + completion); `unsampled-stop` keeps the template
 * exact but leaves the stop token out of the completion ids (it then sits in the next prompt,
 * masked out of the loss).
 */
import assert from "node:assert/strict";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import OpenAI from "openai";
import type { AgentFunction } from "../agents/types.ts";
import type { Task } from "../types/task.ts";
import { runDoctor } from "./run-doctor.ts";
import { checkTemplateExactness } from "./token-exactness.ts";

type Template = "exact" | "drops-stop" | "unsampled-stop";
const START = 2;
const STOP = 7;

async function body(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString("utf8"));
}

async function fakeUpstream(template: Template) {
  let calls = 0;
  const render = (message: { role: string; content: string }): number[] => {
    if (message.role !== "assistant") return [1, 10 + message.content.length];
    const step = Number(/\d+/.exec(message.content)?.[0] ?? 0);
    return template === "drops-stop" ? [START, 500 + step] : [START, 500 + step, STOP];
  };
  const server = createServer(async (req, res) => {
    // A vLLM-shaped server: its `/version` is how the gateway tells its kind; other probes are 404.
    if (req.method === "GET") {
      res.writeHead(req.url === "/version" ? 200 : 404, { "content-type": "application/json" });
      return res.end(JSON.stringify({ version: "0.12.0" }));
    }
    const request = await body(req);
    const messages = request.messages as { role: string; content: string }[];
    const prompt = [...messages.flatMap(render), START];
    const step = ++calls;
    const ids = template === "unsampled-stop" ? [500 + step] : [500 + step, STOP];
    res.writeHead(200, { "content-type": "application/json" });
    res.end(
      JSON.stringify({
        id: `c${step}`,
        object: "chat.completion",
        model: request.model,
        prompt_token_ids: prompt,
        choices: [
          {
            index: 0,
            message: { role: "assistant", content: `step ${step}` },
            finish_reason: "stop",
            token_ids: ids,
            logprobs: { content: ids.map(() => ({ logprob: -0.5 })) },
          },
        ],
        usage: {
          prompt_tokens: prompt.length,
          completion_tokens: ids.length,
          total_tokens: prompt.length + ids.length,
        },
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return {
    spec: `openai:${url}#fake`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Three calls, each sending back the history as the agent received it. */
const agent: AgentFunction = async (task, { baseURL, apiKey, model, signal }) => {
  const client = new OpenAI({ baseURL, apiKey, maxRetries: 0 });
  const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: "user", content: task.question }];
  let last = "";
  for (let turn = 0; turn < 3; turn++) {
    const completion = await client.chat.completions.create({ model, messages }, { signal });
    last = completion.choices[0].message.content ?? "";
    messages.push({ role: "assistant", content: last }, { role: "user", content: "go on" });
  }
  return last;
};

const tasks: Task[] = [
  { id: "a", question: "first question", answer: "x", family: "fake" },
  { id: "b", question: "second one", answer: "y", family: "fake" },
];

async function doctorOn(template: Template) {
  const upstream = await fakeUpstream(template);
  try {
    const report = await runDoctor({
      policySpec: upstream.spec,
      agent: { path: "inline", source: { kind: "function", agent }, concurrency: 1 },
      tasks: { type: "given", tasks },
      verifier: "em",
      groupSize: 2,
      checks: ["coverage", "token-exactness"],
    });
    return report.checks.find((check) => check.id === "token-exactness")!;
  } finally {
    await upstream.close();
  }
}

test("an exact template passes: no prefix break, stop tokens sampled", async () => {
  const check = await doctorOn("exact");
  assert.equal(check.ok, true, check.detail);
  assert.equal(check.data?.prefixBreaks, 0);
  assert.equal(check.data?.transitions, 8);
});

test("a template that breaks prefixes fails with its break rate", async () => {
  const check = await doctorOn("drops-stop");
  assert.equal(check.ok, false);
  assert.equal(check.data?.prefixBreaks, 8);
  assert.match(check.detail, /8 prefix breaks in 8 turn transitions \(100%/);
  // The stop token, last of each completion, is missing from the next prompt: a break in the
  // sampled ids costing that one token each time.
  assert.deepEqual(check.data?.prefixBreakSites, { prompt: 0, sampled: 8, short: 0 });
  assert.equal(check.data?.prefixLostTokens, 8);
  assert.match(check.detail, /8 in the sampled ids .*; 8 tokens of context/);
  assert.equal(check.changes[0].kind, "fix-template");
});

test("completion ids without the stop token: flagged as a stop token masked out of the loss", async () => {
  const check = await doctorOn("unsampled-stop");
  assert.equal(check.ok, false);
  assert.equal(check.data?.prefixBreaks, 0);
  assert.equal(check.data?.stopTokensMasked, true);
  assert.match(check.detail, /stop token is missing from the sampled ids/);
});

test("a templated policy's breaks: within the threshold it passes, above it fails with the template fix", () => {
  const clean = checkTemplateExactness({ prefixBreaks: 0, continuedTurns: 40 });
  assert.equal(clean.ok, true);
  assert.match(clean.detail, /^0 of 40 continued turns/);
  const broken = checkTemplateExactness({ prefixBreaks: 10, continuedTurns: 40 });
  assert.equal(broken.ok, false);
  assert.equal(broken.data?.breakRate, 0.25);
  assert.match(broken.detail, /10 of 40 .*\(25%, threshold 1%\).*a context the model never saw/);
  assert.equal(broken.changes[0].kind, "fix-template");
});
