/**
 * The dashboard's view of a folder of runs: every `*.sqlite` file under the root (any depth up to
 * `MAX_DEPTH`, skipping dot folders and node_modules), each opened read-only once and kept open,
 * with the runs it holds. A file that is not an agentrl store (corrupt, foreign, from a newer
 * agentrl, being created) is listed with its error instead of failing the listing; it is retried at
 * the next scan. Report pages (`report.html`) found on the way are listed so runs can link them.
 *
 * Connections are keyed by the file's real path: `a/b.sqlite`, `a//b.sqlite`, `a/./b.sqlite` or a
 * symlinked spelling of the same file share one handle (a client naming a store many ways must not
 * open a handle per spelling).
 *
 * A run is addressed by its key `<store path relative to the root>::<run id>`: run ids are unique
 * within a store only (a recipe's stages each have a store with their own runs).
 */
import { readdirSync, realpathSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { openStore, type RunRecord, type Store } from "../store/index.ts";

const MAX_DEPTH = 6;
const REPORT_FILE = "report.html";
/** A recipe output folder holds its report's numbers beside its stages. */
const RECIPE_REPORT = "report.json";
const RECIPE_STAGES = "stages";

export interface CatalogStore {
  /** Path relative to the root, with `/` separators. */
  file: string;
  /** Why the file could not be read as a store, or null. */
  error: string | null;
  runs: RunRecord[];
}

export interface CatalogScan {
  stores: CatalogStore[];
  /** Report pages under the root, relative paths with `/` separators. */
  reports: string[];
  /** Recipe output folders under the root (a `report.json` beside a `stages/` folder), "." for the root itself. */
  recipes: string[];
}

interface OpenStore {
  store: Store;
  /** Identity of the file the connection was opened on: a replaced file is reopened. */
  identity: string;
}

const toPosix = (path: string) => path.split(sep).join("/");

export function runKey(file: string, runId: string): string {
  return `${file}::${runId}`;
}

export function parseRunKey(key: string): { file: string; runId: string } | null {
  const at = key.indexOf("::");
  if (at <= 0) return null;
  return { file: key.slice(0, at), runId: key.slice(at + 2) };
}

export class RunCatalog {
  readonly root: string;
  /** Open connections by the real path of their file. */
  readonly #open = new Map<string, OpenStore>();
  #reports: string[] | null = null;
  #recipes: string[] | null = null;

  constructor(root: string) {
    this.root = resolve(root);
  }

  /** Walks the root: stores with their runs (or errors) and report pages, sorted by path. */
  scan(): CatalogScan {
    const files: string[] = [];
    const reports: string[] = [];
    const recipes: string[] = [];
    this.#walk(this.root, 0, files, reports, recipes);
    const stores = files.sort().map((file) => this.#describe(file));
    const found = new Set(files.map((file) => realPath(resolve(this.root, file))));
    for (const path of [...this.#open.keys()]) {
      if (!found.has(path)) this.#close(path);
    }
    this.#reports = reports.sort();
    this.#recipes = recipes.sort();
    return { stores, reports: this.#reports, recipes: this.#recipes };
  }

  /** Recipe output folders as of the last scan (scanning once if there was none). */
  recipes(): string[] {
    return this.#recipes ?? this.scan().recipes;
  }

  /** Report pages as of the last scan (scanning once if there was none). */
  reports(): string[] {
    return this.#reports ?? this.scan().reports;
  }

  /** The open store and run of a key, or null when either is unknown. */
  resolve(key: string): { store: Store; run: RunRecord; file: string } | null {
    const parsed = parseRunKey(key);
    if (!parsed) return null;
    const store = this.#store(parsed.file);
    if (!store) return null;
    const run = store.getRun(parsed.runId);
    return run ? { store, run, file: parsed.file } : null;
  }

  /** The open store of a catalogued file, or null when it cannot be opened. */
  storeOf(file: string): Store | null {
    return this.#store(file);
  }

  /** The report page for a run's store: `report.html` in its folder or the nearest folder above it. */
  reportFor(file: string, reports: readonly string[]): string | null {
    const known = new Set(reports);
    for (let folder = dirname(file); ; folder = dirname(folder)) {
      const candidate = folder === "." ? REPORT_FILE : `${folder}/${REPORT_FILE}`;
      if (known.has(candidate)) return candidate;
      if (folder === "." || folder === "/" || folder === "") return null;
    }
  }

  close(): void {
    for (const path of [...this.#open.keys()]) this.#close(path);
  }

  #walk(folder: string, depth: number, files: string[], reports: string[], recipes: string[]): void {
    let entries: import("node:fs").Dirent[];
    try {
      entries = readdirSync(folder, { withFileTypes: true });
    } catch {
      return; // unreadable folders are skipped, like a folder that vanished during the walk
    }
    const names = new Set(entries.map((entry) => entry.name));
    if (
      names.has(RECIPE_REPORT) &&
      entries.some((entry) => entry.name === RECIPE_STAGES && entry.isDirectory())
    )
      recipes.push(toPosix(relative(this.root, folder)) || ".");
    for (const entry of entries) {
      const path = join(folder, entry.name);
      if (entry.isDirectory()) {
        if (depth < MAX_DEPTH && !entry.name.startsWith(".") && entry.name !== "node_modules") {
          this.#walk(path, depth + 1, files, reports, recipes);
        }
      } else if (entry.isFile()) {
        if (entry.name.endsWith(".sqlite")) files.push(toPosix(relative(this.root, path)));
        else if (entry.name === REPORT_FILE) reports.push(toPosix(relative(this.root, path)));
      }
    }
  }

  #describe(file: string): CatalogStore {
    try {
      const store = this.#store(file, true);
      if (!store) return { file, error: "not found", runs: [] };
      return { file, error: null, runs: store.listRuns() };
    } catch (error) {
      this.#close(realPath(resolve(this.root, file)));
      return { file, error: error instanceof Error ? error.message : String(error), runs: [] };
    }
  }

  /** The open store for a catalogued file; `rethrow` surfaces the open error (for the listing). */
  #store(file: string, rethrow = false): Store | null {
    const path = resolve(this.root, file);
    if (!path.startsWith(this.root + sep) || !path.endsWith(".sqlite")) return null;
    let identity: string;
    let real: string;
    try {
      real = realpathSync(path);
      const stat = statSync(real);
      identity = `${stat.dev}:${stat.ino}`;
    } catch {
      this.#close(realPath(path));
      return null;
    }
    const cached = this.#open.get(real);
    if (cached && cached.identity === identity) return cached.store;
    if (cached) this.#close(real);
    try {
      const store = openStore(real, { readOnly: true });
      this.#open.set(real, { store, identity });
      return store;
    } catch (error) {
      if (rethrow) throw error;
      return null;
    }
  }

  /** Connections open now (one per real file). */
  get openCount(): number {
    return this.#open.size;
  }

  #close(real: string): void {
    const cached = this.#open.get(real);
    if (!cached) return;
    this.#open.delete(real);
    try {
      cached.store.close();
    } catch {
      // closing a connection to a vanished or broken file has nothing left to release
    }
  }
}

/** The real path of a file, or the path itself when it cannot be resolved (gone, unreadable). */
function realPath(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}
