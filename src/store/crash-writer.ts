/**
 * Child process of the crash-safety test (store-crash.test.ts): writes numbered trajectories to a
 * store forever, `batch` per transaction together with a `committed` counter in the run's state,
 * and prints `committed <n>` after each commit, until the test kills it with SIGKILL. A new writer
 * on the same store continues the numbering from the stored counter.
 *
 *   node src/store/crash-writer.ts <store.sqlite> <runId> <batch> <tokensPerTurn>
 */
import { openStore } from "./store.ts";
import { numberedTrajectory } from "./test-trajectories.ts";

const [path, runId, batchText, tokensText] = process.argv.slice(2);
const batch = Number(batchText);
const tokensPerTurn = Number(tokensText);
const store = openStore(path);
// Resumes numbering where the previous (killed) writer's last commit left off.
let committed = store.getState<number>(runId, "committed") ?? 0;
for (;;) {
  const trajectories = Array.from({ length: batch }, (_, i) =>
    numberedTrajectory(committed + i, tokensPerTurn),
  );
  store.transaction(() => {
    store.addTrajectories(runId, trajectories);
    store.setState(runId, "committed", committed + batch);
  });
  committed += batch;
  // Pipes are synchronous on Linux: once this returns the line is the parent's to read.
  process.stdout.write(`committed ${committed}\n`);
}
