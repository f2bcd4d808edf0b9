/**
 * Every command that reads a JSON config reports a syntax error with the file, line and column
 * (one loader: core/config-file.ts), and a bad field with the file named.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { register as registerOrchestra } from "./commands/orchestra.ts";
import { register as registerPretrain } from "./commands/pretrain.ts";
import { register as registerRecipe } from "./commands/recipe.ts";
import { register as registerTrain } from "./commands/train.ts";
import { register as registerAgentServer } from "./commands/verl-agent-server.ts";
import { runCli } from "./testing.ts";

const root = mkdtempSync(join(tmpdir(), "agentrl-config-errors-"));
after(() => rmSync(root, { recursive: true, force: true }));

/** A config whose third line lacks its comma: the error is at line 3, column 3. */
const broken = join(root, "broken.json");
writeFileSync(broken, '{\n  "steps": 2\n  "seed": 1\n}\n');
const truncated = join(root, "truncated.json");
writeFileSync(truncated, '{\n  "steps": 2,\n  "seed": [1,');
const badField = join(root, "bad-field.json");
writeFileSync(badField, '{ "steps": "many" }\n');

const escaped = (path: string) => path.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

const commands: {
  name: string;
  register: Parameters<typeof runCli>[0];
  args: (file: string) => string[];
  label: string;
}[] = [
  {
    name: "train rl",
    register: registerTrain,
    args: (file) => ["train", "rl", "--config", file],
    label: "train rl config",
  },
  {
    name: "train sft",
    register: registerTrain,
    args: (file) => ["train", "sft", "--config", file],
    label: "train sft config",
  },
  {
    name: "pretrain",
    register: registerPretrain,
    args: (file) => ["pretrain", "--config", file, "--runs", root],
    label: "pretrain config",
  },
  {
    name: "orchestra pretrain",
    register: registerOrchestra,
    args: (file) => ["orchestra", "pretrain", "--config", file, "--runs", root],
    label: "orchestra pretrain config",
  },
  {
    name: "orchestra train",
    register: registerOrchestra,
    args: (file) => ["orchestra", "train", "--config", file, "--runs", root],
    label: "orchestra train config",
  },
  {
    name: "recipe",
    register: registerRecipe,
    args: (file) => ["recipe", "--config", file, "--show-config"],
    label: "recipe config",
  },
  {
    name: "agent-server --reward",
    register: registerAgentServer,
    args: (file) => ["agent-server", "--reward", file],
    label: "--reward",
  },
];

for (const command of commands) {
  test(`${command.name}: a config syntax error names the file, line and column`, async () => {
    await assert.rejects(
      runCli(command.register, command.args(broken)),
      new RegExp(`^Error: ${escaped(command.label)} ${escaped(broken)}:3:3: not valid JSON`),
    );
    await assert.rejects(
      runCli(command.register, command.args(truncated)),
      new RegExp(`${escaped(truncated)}:3:14: not valid JSON \\(Unexpected end of JSON input\\)`),
    );
    await assert.rejects(
      runCli(command.register, command.args(join(root, "missing.json"))),
      // (agent-server's --reward says a missing file is neither a preset nor a spec file)
      new RegExp(escaped(join(root, "missing.json"))),
    );
  });
}

for (const command of commands.filter((item) => !item.name.startsWith("agent-server"))) {
  test(`${command.name}: a bad field names the file`, async () => {
    await assert.rejects(runCli(command.register, command.args(badField)), (error: Error) => {
      assert.match(error.message, new RegExp(escaped(badField)));
      assert.match(error.message, /steps/);
      return true;
    });
  });
}
