/**
 * Run directory layout. Each run lives in `<root>/<runId>/` (root default `runs/`) with its
 * store in `store.sqlite` and its files (checkpoints, reports) beside it; artifact paths are
 * relative to that folder. The directory's run has the folder's name as id; stage runs of a recipe
 * may share the folder's store as child runs (`parentId`).
 */
import { existsSync, mkdirSync, readdirSync, statSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { defaultRunId } from "./runs.ts";
import { openStore, type Store, type StoreOptions } from "./store.ts";
import type { CreateRunOptions, RunRecord } from "./types.ts";

export const DEFAULT_RUNS_ROOT = "runs";
export const STORE_FILE = "store.sqlite";

export function runStorePath(directory: string): string {
  return join(directory, STORE_FILE);
}

export function isRunDirectory(directory: string): boolean {
  return existsSync(runStorePath(directory));
}

/** Opens the store of an existing run directory; throws when the folder holds no store. */
export function openRunDirectory(directory: string, options: StoreOptions = {}): Store {
  if (!isRunDirectory(directory)) {
    throw new Error(`${directory} is not a run directory: ${runStorePath(directory)} does not exist`);
  }
  return openStore(runStorePath(directory), options);
}

export interface CreatedRunDirectory {
  directory: string;
  store: Store;
  run: RunRecord;
}

/**
 * Creates `<root>/<id>/` with a fresh store holding the run `id`. Without an id, the default
 * `<kind>-<yyyymmdd>-<hhmmss>` gets `-2`, `-3`, ... until the folder is new; an explicit id whose
 * folder exists is an error (open it with `openRunDirectory` to resume), unless a creation killed
 * before its run was written left it (empty, or a store without runs): then it is taken over.
 */
export function createRunDirectory(
  options: CreateRunOptions & { root?: string },
  storeOptions: StoreOptions = {},
): CreatedRunDirectory {
  const root = options.root ?? DEFAULT_RUNS_ROOT;
  mkdirSync(root, { recursive: true });
  let id = options.id ?? defaultRunId(options.kind);
  for (let n = 2; ; n++) {
    try {
      mkdirSync(join(root, id)); // not recursive: fails with EEXIST, so two processes never share a folder
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      if (options.id !== undefined && isAbandonedRunDirectory(join(root, id))) break;
      if (options.id !== undefined) throw new Error(`run directory ${join(root, id)} already exists`);
      id = `${defaultRunId(options.kind)}-${n}`;
    }
  }
  const directory = join(root, id);
  const store = openStore(runStorePath(directory), storeOptions);
  try {
    const run = store.createRun({
      id,
      kind: options.kind,
      config: options.config,
      parentId: options.parentId,
    });
    return { directory, store, run };
  } catch (error) {
    store.close();
    throw error;
  }
}

/**
 * A folder a killed `createRunDirectory` left before its run existed: empty, or holding only a store
 * without runs. Two processes taking one over at once cannot both succeed: `createRun` of the same
 * id in the same store fails for the second.
 */
export function isAbandonedRunDirectory(directory: string): boolean {
  const entries = readdirSync(directory);
  if (entries.length === 0) return true;
  if (!entries.every((name) => name.startsWith(STORE_FILE))) return false;
  if (!entries.includes(STORE_FILE)) return true;
  const store = openStore(runStorePath(directory));
  try {
    return store.listRuns().length === 0;
  } finally {
    store.close();
  }
}

/**
 * A server's `--store <dir>`: the run of an existing run directory (the folder must hold a store),
 * or a new one created at that path with `kind` and `config`.
 */
export function openOrCreateRunDirectory(
  directory: string,
  options: Pick<CreateRunOptions, "kind" | "config">,
): { store: Store; run: RunRecord } {
  if (existsSync(directory)) {
    if (!isRunDirectory(directory))
      throw new Error(`--store ${directory}: exists and is not a run directory`);
    const store = openRunDirectory(directory);
    return { store, run: directoryRun(store, directory) };
  }
  const created = createRunDirectory({ ...options, root: dirname(directory), id: basename(directory) });
  return { store: created.store, run: created.run };
}

/**
 * The run a directory stands for: the one named like the folder, else the only top-level run of
 * the store. Throws, listing the runs, when that is ambiguous.
 */
export function directoryRun(store: Store, directory: string): RunRecord {
  const named = store.getRun(basename(directory));
  if (named) return named;
  const runs = store.listRuns();
  const topLevel = runs.filter((run) => run.parentId === null);
  if (topLevel.length === 1) return topLevel[0];
  throw new Error(
    `cannot tell which run ${directory} stands for; its store holds: ${runs.map((run) => run.id).join(", ") || "(none)"}`,
  );
}

/** Run directories under `root` (folders holding a store, hidden ones aside), sorted by name. */
export function listRunDirectories(root: string = DEFAULT_RUNS_ROOT): string[] {
  if (!existsSync(root)) return [];
  return readdirSync(root)
    .filter((name) => !name.startsWith(".")) // staging folders of runs being built (staged-run-directory.ts)
    .map((name) => join(root, name))
    .filter((path) => statSync(path).isDirectory() && isRunDirectory(path))
    .sort();
}
