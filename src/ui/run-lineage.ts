/**
 * Which run made the checkpoint a run starts from. A trainer records where it writes its model
 * (`config.out`); an evaluation records the policy it sampled (`config.policy`), a trainer the model
 * it started from (`config.base`). Where that path is a trainer's `out`, the trainer is the run's
 * parent: the evaluation of `credit-gigpo@s2`'s checkpoint has `credit-gigpo@s2` as parent, and the
 * RL run started from an SFT model has that SFT run. Paths are compared as written (a recipe
 * records them all from the same working folder), else by the one `out` whose path ends with the
 * other at a folder boundary (one written relative, the other absolute); else a path inside a
 * trainer's run folder (a checkpoint it saved on the way, `<run>/checkpoints/…`) is that
 * trainer's. Never when that is ambiguous. A run with a parent of its own keeps it.
 */
import { posix, resolve } from "node:path";

export interface LineageRun {
  key: string;
  kind: string;
  config: Record<string, unknown>;
  parentKey: string | null;
  /** The run's folder, absolute (where its store and checkpoints are), when known. */
  directory?: string;
}

/** `embedded:runs/x/model/` → `runs/x/model`; null for what is not a path (`expert`, a URL). */
export function checkpointPath(spec: unknown): string | null {
  if (typeof spec !== "string" || spec.length === 0) return null;
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(spec)) return null; // an endpoint URL
  const path = spec.replace(/^embedded:/, "").replaceAll("\\", "/");
  if (!path.includes("/")) return null; // a policy name, not a folder
  const normal = posix.normalize(path);
  return normal.length > 1 ? normal.replace(/\/+$/, "") : normal;
}

const TRAINERS = new Set(["rl", "sft", "pretrain"]);
const toPosix = (path: string) => path.replaceAll("\\", "/");

/** The checkpoint a run reads: an eval's policy, a trainer's base. */
function startsFrom(run: LineageRun): string | null {
  return checkpointPath(run.kind === "eval" ? run.config.policy : run.config.base);
}

/**
 * The parent key of each run whose starting checkpoint is another run's output and that has no
 * parent of its own, by run key.
 */
export function checkpointParents(runs: readonly LineageRun[]): Map<string, string> {
  const outputs = new Map<string, string[]>();
  const folders: { folder: string; key: string }[] = [];
  for (const run of runs) {
    if (!TRAINERS.has(run.kind)) continue;
    const out = checkpointPath(run.config.out);
    if (out) outputs.set(out, [...(outputs.get(out) ?? []), run.key]);
    if (run.directory) folders.push({ folder: toPosix(run.directory), key: run.key });
  }
  const producer = (path: string): string | null => {
    const exact = outputs.get(path);
    if (exact) return exact.length === 1 ? exact[0] : null;
    const matches = [...outputs.entries()].filter(
      ([out]) => out.endsWith(`/${path}`) || path.endsWith(`/${out}`),
    );
    if (matches.length > 0)
      return matches.length === 1 && matches[0][1].length === 1 ? matches[0][1][0] : null;
    const absolute = toPosix(resolve(path));
    const inside = folders.filter(({ folder }) => absolute.startsWith(`${folder}/`));
    return inside.length === 1 ? inside[0].key : null;
  };
  const parents = new Map<string, string>();
  for (const run of runs) {
    if (run.parentKey !== null) continue;
    const from = startsFrom(run);
    const parent = from ? producer(from) : null;
    if (parent && parent !== run.key) parents.set(run.key, parent);
  }
  return parents;
}
