/**
 * What the dashboard serves besides its API: the page, its stylesheet, its scripts and the
 * plotting libraries, all from this checkout (nothing from a CDN, nothing downloaded at run time).
 * The browser code lives in `client/` as TypeScript, type-checked with the rest of the project;
 * it is served as JavaScript by erasing its types with Node's own `stripTypeScriptTypes` (the same
 * erasure Node applies when it runs our .ts files), so there is no build step to run by hand.
 * vega and vega-lite are their published browser bundles, found next to the packages' entry points.
 */
import { readdirSync, readFileSync } from "node:fs";
import { stripTypeScriptTypes } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export interface Asset {
  contentType: string;
  body: string;
}

const HERE = dirname(fileURLToPath(import.meta.url));
const CLIENT = join(HERE, "client");

const packageBuild = (name: string) => dirname(fileURLToPath(import.meta.resolve(name)));

/** Browser bundles of the plotting libraries, loaded as classic scripts (globals `vega`, `vegaLite`). */
const LIBRARIES: Record<string, () => string> = {
  "vega.min.js": () => join(packageBuild("vega"), "vega.min.js"),
  "vega-lite.min.js": () => join(packageBuild("vega-lite"), "vega-lite.min.js"),
};

export class Assets {
  readonly #cache = new Map<string, Asset>();

  /** `/app/<module>.ts`, `/lib/<bundle>`, `/style.css` or `/`; undefined for anything else. */
  get(path: string): Asset | undefined {
    const cached = this.#cache.get(path);
    if (cached) return cached;
    const asset = this.#load(path);
    if (asset) this.#cache.set(path, asset);
    return asset;
  }

  #load(path: string): Asset | undefined {
    if (path === "/") return { contentType: "text/html; charset=utf-8", body: this.#text("index.html") };
    if (path === "/style.css")
      return { contentType: "text/css; charset=utf-8", body: this.#text("style.css") };
    const module = /^\/app\/([a-z0-9-]+\.ts)$/.exec(path);
    if (module && clientModules().includes(module[1])) {
      const source = readFileSync(join(CLIENT, module[1]), "utf8");
      return {
        contentType: "text/javascript; charset=utf-8",
        body: stripTypeScriptTypes(source, { mode: "strip" }),
      };
    }
    const library = /^\/lib\/([a-z.-]+\.js)$/.exec(path);
    if (library && Object.hasOwn(LIBRARIES, library[1])) {
      return {
        contentType: "text/javascript; charset=utf-8",
        body: readFileSync(LIBRARIES[library[1]](), "utf8"),
      };
    }
    return undefined;
  }

  #text(name: string): string {
    return readFileSync(join(CLIENT, name), "utf8");
  }
}

/** The browser modules: every .ts file in client/ except tests. */
export function clientModules(): string[] {
  return readdirSync(CLIENT).filter((name) => name.endsWith(".ts") && !name.endsWith(".test.ts"));
}
