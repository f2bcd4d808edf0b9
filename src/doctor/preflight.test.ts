/**
 * `agentrl verl init` runs the doctor's cheap checks first: a job whose training tasks include a
 * broken one is refused with its id and what to change; `--no-doctor` writes it anyway.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { register as registerDoctor } from "../cli/commands/doctor.ts";
import { register as registerVerl } from "../cli/commands/verl.ts";
import { runCli } from "../cli/testing.ts";

const root = mkdtempSync(join(tmpdir(), "doctor-preflight-"));
after(() => rmSync(root, { recursive: true, force: true }));

const rows = [
  { id: "half", question: "Write one half as a fraction.", answer: "\\frac{1}{2}" },
  { id: "broken-frac", question: "Write three quarters as a fraction.", answer: "\\frac{3}{" },
  { id: "sum", question: "What is twenty plus twenty-two?", answer: "42" },
  { id: "product", question: "What is six times seven?", answer: "42" },
];
const file = join(root, "math.jsonl");
writeFileSync(file, rows.map((row) => JSON.stringify(row)).join("\n"));

test("verl init refuses a job with a broken task, naming it; --no-doctor writes it", async () => {
  const init = (out: string, extra: string[] = []) =>
    runCli(registerVerl, [
      "verl",
      "init",
      "--model",
      "m",
      "--tasks",
      file,
      "--verifier",
      "math",
      "--val-fraction",
      "0.01",
      "--out",
      join(root, out),
      ...extra,
    ]);
  await assert.rejects(init("refused"), (error: Error) => {
    assert.match(error.message, /agentrl doctor refuses this job/);
    assert.match(error.message, /broken-frac/);
    assert.match(error.message, /--no-doctor/);
    return true;
  });
  assert.equal(existsSync(join(root, "refused", "run_grpo.sh")), false, "nothing written");
  await init("forced", ["--no-doctor", "--json"]);
  assert.ok(existsSync(join(root, "forced", "run_grpo.sh")));
});

test("agentrl doctor --json on a task file: the report names the broken task; bad flags are clear", async () => {
  const { out } = await runCli(registerDoctor, [
    "doctor",
    "--tasks",
    file,
    "--verifier",
    "math",
    "--checks",
    "verifier,reward-hacking",
    "--no-store",
    "--json",
  ]);
  const report = JSON.parse(out.join("\n"));
  assert.equal(report.ready, false);
  assert.deepEqual(report.checks[0].data.brokenIds, ["broken-frac"]);
  assert.equal(process.exitCode, 1);
  process.exitCode = 0;
  await assert.rejects(
    runCli(registerDoctor, ["doctor", "--tasks", file, "--checks", "verifier"]),
    /a task file needs --verifier <name> \(one of math, /,
  );
  await assert.rejects(
    runCli(registerDoctor, ["doctor", "--tasks", "4", "--verifier", "math", "--checks", "verifier"]),
    /--verifier need a task file/,
  );
  await assert.rejects(
    runCli(registerDoctor, ["doctor", "--tasks", "4", "--checks", "verifier,coverage"]),
    /--policy is required/,
  );
  await assert.rejects(
    runCli(registerDoctor, ["doctor", "--tasks", "4", "--reward", "nope", "--checks", "verifier"]),
    /--reward: "nope" is neither a preset \(exact-match, /,
  );
});
