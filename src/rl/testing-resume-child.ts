/**
 * Test helper (train.test.ts): runs `trainRl` on an existing run directory in a child process and
 * stalls for good inside step `stallStep`, right after that step's trajectories are stored, having
 * written `<runDir>/stalled` (and, with a critic, the step's values V_old per episode in
 * `<runDir>/stalled-values.json` first): the parent then kills it with SIGKILL. Not used at run time.
 *
 *   node src/rl/testing-resume-child.ts <runDir> <stallStep> [hf-chat]
 *
 * `hf-chat`: in testing-hf.ts's environment (the qwen3-chat fixture's conversation).
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { directoryRun, openRunDirectory } from "../store/index.ts";
import { parseRlConfig } from "./config.ts";
import { trainRl } from "./train.ts";

const [runDir, stall] = process.argv.slice(2);
const store = openRunDirectory(runDir);
const run = directoryRun(store, runDir);
const env = process.argv[4] === "hf-chat" ? (await import("./testing-hf.ts")).chatEnvironment() : undefined;
await trainRl({
  config: parseRlConfig(run.config),
  ...(env ? { env } : {}),
  runDir,
  store,
  runId: run.id,
  transformBatch: async (batch) => {
    if (batch.step !== Number(stall)) return;
    if (batch.critic)
      writeFileSync(
        join(runDir, "stalled-values.json"),
        JSON.stringify(batch.critic.oldValues.map((row) => Array.from(row))),
      );
    writeFileSync(join(runDir, "stalled"), String(batch.step));
    await new Promise((resolve) => setTimeout(resolve, 120_000));
  },
});
