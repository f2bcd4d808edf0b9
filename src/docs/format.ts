/**
 * Markdown as the project's formatter writes it (`biome format`, the lint step of `npm test`
 * checks pages too): generated pages go through it, so a generated table is aligned the way the
 * linter wants and a freshly generated page is also a lint-clean one.
 */
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const BIOME = fileURLToPath(import.meta.resolve("@biomejs/biome/bin/biome"));

/** `text` formatted as the Markdown file `path` (relative to the repository root `root`). */
export function formatMarkdown(text: string, path: string, root: string): string {
  return execFileSync(process.execPath, [BIOME, "format", `--stdin-file-path=${path}`], {
    cwd: root,
    input: text,
    encoding: "utf8",
  });
}
