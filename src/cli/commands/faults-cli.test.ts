/**
 * The CLI summaries under AGENTRL_FAULTS: `eval` and `data collect` print how many episodes were
 * infra failures, the same number the run's counts hold and the fault log says was injected.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { injectedFaults, withFaults } from "../../core/faults.ts";
import { runCli } from "../testing.ts";
import { register as registerData } from "./data.ts";
import { register as registerEval } from "./eval.ts";

const root = mkdtempSync(join(tmpdir(), "agentrl-faults-cli-"));
after(() => rmSync(root, { recursive: true, force: true }));
const spec = "seed=6,verifier-error=0.15,verifier-timeout=0.1";

test("agentrl eval under faults: the summary and --json report the infra failures", async () => {
  await withFaults(spec, async () => {
    const { out } = await runCli(registerEval, [
      "eval",
      "--policy",
      "expert",
      "--tasks",
      "8",
      "--n",
      "3",
      "--runs",
      root,
      "--run-id",
      "e",
    ]);
    const injected = injectedFaults().length;
    assert.ok(injected > 0, "no fault injected");
    const line = out.find((text) => text.includes("infra failures"));
    assert.match(
      line ?? "",
      new RegExp(
        `correct samples ${24 - injected}/${24 - injected}; .*infra failures ${injected} \\(not samples`,
      ),
    );
  });
});

test("agentrl data collect under faults: the summary says how many infra episodes were never kept", async () => {
  await withFaults(spec, async () => {
    const { out } = await runCli(registerData, [
      "data",
      "collect",
      "--tasks",
      "12",
      "--noise",
      "0",
      "--out",
      join(root, "data"),
      "--runs",
      root,
    ]);
    const injected = injectedFaults().length;
    assert.ok(injected > 0, "no fault injected");
    assert.ok(
      out.includes(`infra failures ${injected} (upstream, sandbox or verifier broke: never kept)`),
      out.join("\n"),
    );
    assert.ok(
      out.some((text) => text.startsWith(`${12 - injected} kept of 12 episodes`)),
      out.join("\n"),
    );
  });
});
