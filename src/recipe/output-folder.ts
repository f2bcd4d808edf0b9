/**
 * The recipe's output folder and `--fresh`: the recipe marks each folder it writes into with
 * `RECIPE_MARKER`, and `--fresh` deletes only a folder that is plainly one of those, so a mistyped
 * `--out` (`.`, a home folder, a project) is refused instead of deleted.
 */
import { existsSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";

/** Written by the recipe in its output folder; `--fresh` requires it. */
export const RECIPE_MARKER = ".agentrl-recipe";
/** Everything the recipe writes at the top of its output folder. */
const RECIPE_ENTRIES = new Set([RECIPE_MARKER, "stages", "report.html", "report.json"]);

/** Marks `out` (which exists) as a recipe output folder. */
export function markRecipeOutput(out: string, preset: string): void {
  const marker = join(out, RECIPE_MARKER);
  if (!existsSync(marker))
    writeFileSync(marker, `${JSON.stringify({ kind: "agentrl recipe output", preset })}\n`);
}

/**
 * Why `--fresh` may not delete `out`, or null when it may: a folder that does not exist or is empty,
 * or one that holds the recipe's marker (or, from before the marker, its `stages/` folder) and
 * nothing the recipe does not write. Never the working folder or a folder above it.
 */
export function freshRefusal(out: string): string | null {
  if (!existsSync(out)) return null;
  const absolute = resolve(out);
  const fromOut = relative(absolute, process.cwd());
  if (fromOut === "" || !fromOut.startsWith("..")) return `${out} is the working folder or holds it`;
  if (!statSync(absolute).isDirectory()) return `${out} is not a folder`;
  const entries = readdirSync(absolute);
  if (entries.length === 0) return null;
  if (!entries.includes(RECIPE_MARKER) && !entries.includes("stages"))
    return `${out} is not a recipe output folder (no ${RECIPE_MARKER} or stages/ in it)`;
  const foreign = entries.filter((entry) => !RECIPE_ENTRIES.has(entry));
  if (foreign.length > 0)
    return `${out} holds files the recipe did not write (${foreign.slice(0, 5).join(", ")}${foreign.length > 5 ? ", …" : ""})`;
  return null;
}

/** `--fresh`: deletes the recipe output folder `out`, or throws saying why it will not. */
export function clearRecipeOutput(out: string): void {
  const refusal = freshRefusal(out);
  if (refusal)
    throw new Error(
      `recipe --fresh: ${refusal}; refusing to delete it. Give --out a recipe output folder, or delete it yourself`,
    );
  rmSync(out, { recursive: true, force: true });
}
