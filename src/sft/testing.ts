/** Test helpers for SFT runs (not part of the library). */
import assert from "node:assert/strict";
import { createRunDirectory, openRunDirectory } from "../store/index.ts";
import type { SftConfig } from "./config.ts";
import { trainSft } from "./train.ts";

/**
 * An SFT run `id` under `root` aborted once step `atStep` is done (the abort saves a checkpoint),
 * then resumed to its end from that step: its directory, the resumed run's result and its store
 * (open; the caller closes it).
 */
export async function interruptAndResume(root: string, id: string, config: SftConfig, atStep: number) {
  const interrupted = createRunDirectory({ kind: "sft", root, id, config });
  const controller = new AbortController();
  await assert.rejects(
    trainSft({
      config,
      runDir: interrupted.directory,
      store: interrupted.store,
      runId: id,
      signal: controller.signal,
      onProgress: (progress) => {
        if (progress.step === atStep) controller.abort();
      },
    }),
    new RegExp(`aborted at step ${atStep}`),
  );
  interrupted.store.close();
  const store = openRunDirectory(interrupted.directory);
  const resumed = await trainSft({ config, runDir: interrupted.directory, store, runId: id });
  assert.equal(resumed.startStep, atStep);
  return { directory: interrupted.directory, resumed, store };
}
