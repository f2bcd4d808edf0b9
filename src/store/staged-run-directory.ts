/**
 * A new run directory that appears whole or not at all: the run is built in a hidden staging folder
 * beside its final place (`<root>/.<id>.staging-<pid>`; `fill` gets that folder) and renamed into place once `fill` has
 * finished and the store is closed. A rename is atomic, so an error or a SIGKILL at any point leaves
 * either the complete run at `<root>/<id>` or no run there; running the same command again starts
 * over. Staging folders left by a dead process are removed by the next staged creation of the same id.
 */
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { type CreatedRunDirectory, DEFAULT_RUNS_ROOT, runStorePath } from "./run-directory.ts";
import { openStore } from "./store.ts";
import type { CreateRunOptions } from "./types.ts";

export async function createRunDirectoryStaged<R>(
  options: CreateRunOptions & { root?: string; id: string },
  fill: (created: CreatedRunDirectory) => Promise<R> | R,
): Promise<{ directory: string; value: R }> {
  const root = options.root ?? DEFAULT_RUNS_ROOT;
  const directory = join(root, options.id);
  if (existsSync(directory)) throw new Error(`run directory ${directory} already exists`);
  mkdirSync(root, { recursive: true });
  removeDeadStaging(root, options.id);
  const stagingName = `.${options.id}.staging-${process.pid}`;
  rmSync(join(root, stagingName), { recursive: true, force: true });
  const staging = join(root, stagingName);
  mkdirSync(staging);
  const store = openStore(runStorePath(staging));
  let value: R;
  try {
    // The run keeps its own id (`options.id`), not the staging folder's name.
    const run = store.createRun({
      id: options.id,
      kind: options.kind,
      config: options.config,
      parentId: options.parentId,
    });
    value = await fill({ directory: staging, store, run });
  } catch (error) {
    store.close();
    rmSync(staging, { recursive: true, force: true });
    throw error;
  }
  store.close();
  if (existsSync(directory)) {
    rmSync(staging, { recursive: true, force: true });
    throw new Error(
      `run directory ${directory} appeared while it was being built; nothing was written there`,
    );
  }
  renameSync(staging, directory);
  return { directory, value };
}

/** Removes `.<id>.staging-<pid>` folders whose process is gone (a kill during an earlier build). */
function removeDeadStaging(root: string, id: string): void {
  const prefix = `.${id}.staging-`;
  for (const name of readdirSync(root)) {
    if (!name.startsWith(prefix)) continue;
    const pid = Number(name.slice(prefix.length));
    if (Number.isInteger(pid) && pid !== process.pid && processAlive(pid)) continue;
    rmSync(join(root, name), { recursive: true, force: true });
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
