/**
 * The published package, checked as a user gets it: `npm pack` (its `prepack` builds dist/ from
 * tsconfig.build.json), the tarball installed into an empty project in a temporary folder, and
 * `import { worldTools } from "agentrl"` run there with plain Node on a .mjs file (Node does not
 * strip TypeScript types under node_modules, so this only works from the built JavaScript). The
 * tools' answers must equal the source tree's, and a strict TypeScript consumer must typecheck
 * against the published declarations (a wrong type must fail). Too slow for `npm test` (pack ~30 s, install of
 * the dependencies ~1 min): run it before publishing.
 *
 *   npm run pack-check              # [--keep] leaves the temporary folder for a look
 *
 * The install tries the npm cache alone first (`--offline`), then the registry for what the cache
 * lacks (`--prefer-offline`); install scripts are skipped (none is needed to import the tools).
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { agentWorldTools } from "../src/agents/world-tools.ts";

const keep = process.argv.includes("--keep");
const root = mkdtempSync(join(tmpdir(), "agentrl-pack-"));
const npm = process.platform === "win32" ? "npm.cmd" : "npm";
const started = performance.now();
const seconds = () => ((performance.now() - started) / 1000).toFixed(1);
const run = (args: string[], cwd: string) =>
  execFileSync(npm, args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });

try {
  console.log(`packing into ${root} …`);
  run(["pack", "--pack-destination", root], process.cwd());
  const tarball = readdirSync(root).find((name) => name.endsWith(".tgz"));
  if (!tarball) throw new Error(`npm pack wrote no tarball into ${root}`);
  console.log(`packed ${tarball} (${seconds()} s); installing it into an empty project …`);
  const consumer = join(root, "consumer");
  mkdirSync(consumer);
  writeFileSync(
    join(consumer, "package.json"),
    '{ "name": "consumer", "private": true, "type": "module" }\n',
  );
  const install = ["install", "--ignore-scripts", "--no-audit", "--no-fund", join(root, tarball)];
  try {
    run([...install, "--offline"], consumer);
  } catch {
    console.log("  the npm cache lacks some dependency metadata: asking the registry for it");
    run([...install, "--prefer-offline"], consumer);
  }
  console.log(`installed (${seconds()} s); importing worldTools from "agentrl" with plain Node …`);
  const probe = {
    calc: { expression: "2 + 3 * 4" },
    search: { query: "sakroland" },
  };
  writeFileSync(
    join(consumer, "check.mjs"),
    [
      'import { worldTools } from "agentrl";',
      'const tools = worldTools({ id: "pack-check", worldSeed: 1001 });',
      `const probe = ${JSON.stringify(probe)};`,
      "const out = { names: tools.names, specs: tools.openai.map((t) => t.function.name) };",
      "for (const [name, args] of Object.entries(probe)) out[name] = await tools.call(name, args);",
      "console.log(JSON.stringify(out));",
    ].join("\n"),
  );
  const got = JSON.parse(execFileSync(process.execPath, ["check.mjs"], { cwd: consumer, encoding: "utf8" }));
  const tools = agentWorldTools({ id: "pack-check", worldSeed: 1001 });
  const want: Record<string, unknown> = {
    names: tools.names,
    specs: tools.openai.map((spec) => spec.function.name),
  };
  for (const [name, args] of Object.entries(probe)) want[name] = await tools.call(name, args);
  if (JSON.stringify(got) !== JSON.stringify(want))
    throw new Error(
      `the installed package answered\n${JSON.stringify(got)}\nbut the source tree\n${JSON.stringify(want)}`,
    );
  // Its declarations: a strict TypeScript consumer typechecks against them (and a wrong type fails).
  writeFileSync(
    join(consumer, "tsconfig.json"),
    '{ "compilerOptions": { "module": "nodenext", "strict": true, "noEmit": true, "types": [] }, "files": ["check.ts"] }\n',
  );
  const typecheck = (body: string) => {
    writeFileSync(
      join(consumer, "check.ts"),
      `import { type AgentFunction, worldTools } from "agentrl";\n${body}\n`,
    );
    try {
      execFileSync(join(process.cwd(), "node_modules/.bin/tsc"), ["-p", "."], {
        cwd: consumer,
        encoding: "utf8",
      });
      return "";
    } catch (error) {
      return String((error as { stdout?: string }).stdout ?? error);
    }
  };
  const good = typecheck(
    'export const agent: AgentFunction = async (task) => worldTools(task).call("search", { query: task.question });',
  );
  if (good !== "") throw new Error(`the declarations do not typecheck a correct agent:\n${good}`);
  const wrong = typecheck('export const n: string = worldTools({ id: "x", worldSeed: 1 }).names.length;');
  if (!/TS2322/.test(wrong)) throw new Error(`a wrong type was not caught by the declarations:\n${wrong}`);
  console.log(
    `ok (${seconds()} s): the installed package's worldTools answer as the source tree's, and its types check`,
  );
} finally {
  if (keep) console.log(`kept ${root}`);
  else rmSync(root, { recursive: true, force: true });
}
