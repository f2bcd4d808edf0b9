import assert from "node:assert/strict";
import { test } from "node:test";
import { generateWorld } from "../../world/index.ts";
import { runCli } from "../testing.ts";
import { register } from "./tool.ts";

async function run(args: string[]): Promise<string> {
  return (await runCli(register, ["tool", ...args])).out.join("\n");
}

test("agentrl tool calc prints the result as JSON; unquoted words are joined", async () => {
  const result = JSON.parse(await run(["calc", "1991", "-", "1850"]));
  assert.equal(result.status, "ok");
  assert.equal(result.content, "141");
  assert.equal(result.value, 141);
  assert.equal(result.injected, false);
  assert.equal(JSON.parse(await run(["calc", "--", "-5 + 3"])).content, "-2");
  assert.equal(JSON.parse(await run(["calc", "require('fs')"])).content, "error : functions not supported");
});

test("agentrl tool search finds an entity of the generated world", async () => {
  const world = generateWorld(3);
  const document = world.documents[0];
  const result = JSON.parse(await run(["search", document.title, "--seed", "3"]));
  assert.equal(result.status, "ok");
  assert.deepEqual(result.refs, [document.id]);
  assert.equal(result.content, document.text);
  const two = JSON.parse(await run(["search", document.title, "--seed", "3", "--top-k", "2"]));
  assert.equal(two.refs.length, 2);
});

test("agentrl tool search --noise 1 injects a labelled failure", async () => {
  const world = generateWorld(0);
  const result = JSON.parse(
    await run(["search", world.documents[0].title, "--noise", "1", "--noise-seed", "5"]),
  );
  assert.equal(result.injected, true);
  assert.notEqual(result.status, "ok");
});

test("agentrl tool rejects bad option values, naming the option", async () => {
  await assert.rejects(run(["search", "x", "--top-k", "0"]), /--top-k must be an integer in \[1, 100\]/);
  await assert.rejects(run(["calc", "1", "--noise", "2"]), /--noise must be a number in \[0, 1\]/);
});

test("agentrl tool specs prints the JSON schemas", async () => {
  const specs = JSON.parse(await run(["specs"]));
  assert.deepEqual(
    specs.map((spec: { name: string; textArgument: string }) => [spec.name, spec.textArgument]),
    [
      ["search", "query"],
      ["calc", "expression"],
    ],
  );
  assert.deepEqual(specs[0].parameters.required, ["query"]);
});
