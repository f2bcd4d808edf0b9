/**
 * The dashboard's HTTP routes (hono): the page and its scripts, and a read-only JSON API over the
 * run catalog. Every route is a GET; runs and episodes are named in the query string
 * (`?run=<key>&seq=<n>`) because a run key holds slashes. An unknown run or episode is a 404, a bad
 * filter a 400 naming the value, a store that fails while read a 500 with SQLite's message.
 *
 *   GET /api/runs                    stores (with their error, if any) and their runs
 *   GET /api/run?run=               one run: summary, metric keys, artifacts, facets, pass@k, pass^k
 *   GET /api/metrics?run=&key=…     metric series, one per `key`
 *   GET /api/trajectories?run=&…    a page of episode summaries (filters: trajectory-query.ts)
 *   GET /api/episode?run=&seq=      the token-level view of one episode and its task's others
 *   GET /api/recipe?path=            a recipe output folder: its report's verdicts (and arms), its runs
 *   GET /api/claim?path=&id=         one claim's runs by arm: training runs, evaluations with pass@k
 *   GET /reports/<path>              a report page found under the root
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Hono } from "hono";
import type { HostPolicy } from "../http/boundary.ts";
import { decodeJson } from "../store/index.ts";
import type { Trajectory } from "../types/trajectory.ts";
import { TOKEN_COOKIE, type TokenCheck } from "./access.ts";
import { Assets } from "./assets.ts";
import { episodeAdvantages } from "./episode-advantages.ts";
import { episodeView, wireNumber } from "./episode-view.ts";
import { claimDetail, RecipeNotFound, RecipeReports, recipeDetail } from "./recipe-detail.ts";
import type { RunCatalog } from "./run-catalog.ts";
import { type RunRow, runDetail, storeRows } from "./run-rows.ts";
import {
  listTrajectories,
  parseTrajectoryQuery,
  QueryError,
  sameTaskEpisodes,
  storedEpisodeRow,
} from "./trajectory-query.ts";

export interface DashboardAppOptions {
  catalog: RunCatalog;
  /** Required token, or undefined (loopback only). */
  token?: TokenCheck;
  /** Who may reach the dashboard (Host and Origin checks, src/http/boundary.ts). */
  hosts: HostPolicy;
}

/** The page may run only its own scripts; vega compiles its chart expressions with `Function`. */
const PAGE_POLICY =
  "default-src 'none'; script-src 'self' 'unsafe-eval'; style-src 'self' 'unsafe-inline'; " +
  "img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
/** Report pages are static HTML with inline SVG: no scripts at all. */
const REPORT_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'";

class NotFound extends Error {}

export function dashboardApp(options: DashboardAppOptions): Hono {
  const { catalog } = options;
  const assets = new Assets();
  const recipeReports = new RecipeReports(catalog);
  const app = new Hono();

  app.use("*", async (c, next) => {
    const refused = options.hosts.refusal({ host: c.req.header("host"), origin: c.req.header("origin") });
    if (refused) return c.text(refused.message, refused.status);
    if (options.token) {
      const offered = c.req.query("token");
      if (offered !== undefined && c.req.method === "GET" && options.token.matches(offered)) {
        c.header(
          "set-cookie",
          `${TOKEN_COOKIE}=${encodeURIComponent(offered)}; HttpOnly; SameSite=Strict; Path=/`,
        );
        return c.redirect(c.req.path, 303);
      }
      const allowed = options.token.allows({
        authorization: c.req.header("authorization"),
        cookie: c.req.header("cookie"),
      });
      if (!allowed) {
        c.header("www-authenticate", "Bearer");
        return c.text(
          "a token is required: open /?token=<token>, or send Authorization: Bearer <token>",
          401,
        );
      }
    }
    await next();
    c.header("x-content-type-options", "nosniff");
    c.header("referrer-policy", "no-referrer");
    if (c.req.path.startsWith("/api/")) c.header("cache-control", "no-store");
    if (!c.res.headers.has("content-security-policy")) c.header("content-security-policy", PAGE_POLICY);
  });

  const resolveRun = (key: string | undefined) => {
    const resolved = key ? catalog.resolve(key) : null;
    if (!resolved) throw new NotFound(`no run "${key ?? ""}" under ${catalog.root}`);
    return resolved;
  };
  const reportFor = (file: string) => catalog.reportFor(file, catalog.reports());

  // The rows of the last listing by key: a run's page shows the name and parent the listing gave it
  // (a parent found through a checkpoint may be in another store).
  let listed = new Map<string, RunRow>();
  const listRuns = () => {
    const scan = catalog.scan();
    const stores = storeRows(catalog, scan);
    listed = new Map(stores.flatMap((store) => store.runs.map((run) => [run.key, run] as const)));
    return { scan, stores };
  };

  app.get("/api/runs", (c) => {
    const { scan, stores } = listRuns();
    return c.json({ root: catalog.root, stores, reports: scan.reports, recipes: scan.recipes });
  });

  app.get("/api/run", (c) => {
    const key = c.req.query("run");
    const { store, run, file } = resolveRun(key);
    if (!listed.has(key!)) listRuns();
    return c.json(runDetail(store, run, file, reportFor(file), listed.get(key!)));
  });

  const rows = () => {
    if (listed.size === 0) listRuns();
    return [...listed.values()];
  };

  app.get("/api/recipe", (c) => {
    const path = c.req.query("path") ?? "";
    const { scan, stores } = listRuns();
    const runs = stores.flatMap((store) => store.runs);
    return c.json(recipeDetail(recipeReports, path, runs, scan.reports));
  });

  app.get("/api/claim", (c) => {
    return c.json(
      claimDetail(catalog, recipeReports, c.req.query("path") ?? "", c.req.query("id") ?? "", rows()),
    );
  });

  app.get("/api/metrics", (c) => {
    const { store, run } = resolveRun(c.req.query("run"));
    const keys = c.req.queries("key") ?? [];
    const series: Record<string, { step: number; value: number | string }[]> = {};
    for (const key of keys) {
      series[key] = store.metrics(run.id, key).map((point) => ({
        step: point.step,
        value: wireNumber(point.value),
      }));
    }
    return c.json({ run: run.id, status: run.status, series });
  });

  app.get("/api/trajectories", (c) => {
    const { store, run } = resolveRun(c.req.query("run"));
    return c.json(listTrajectories(store, run.id, parseTrajectoryQuery(c.req.query())));
  });

  app.get("/api/episode", (c) => {
    const { store, run } = resolveRun(c.req.query("run"));
    const seq = Number(c.req.query("seq"));
    const row = Number.isSafeInteger(seq) ? storedEpisodeRow(store, run.id, seq) : undefined;
    if (!row) throw new NotFound(`no episode ${c.req.query("seq") ?? ""} in run "${run.id}"`);
    const stored = {
      seq,
      key: String(row.key),
      step: row.step === null ? null : Number(row.step),
      trajectory: decodeJson(String(row.json)) as Trajectory,
    };
    const view = episodeView(stored, episodeAdvantages(store, run, stored));
    return c.json({ ...view, others: sameTaskEpisodes(store, run.id, view.taskId, seq) });
  });

  app.get("/reports/*", (c) => {
    const path = decodeURIComponent(c.req.path.slice("/reports/".length));
    // Only pages the scan found are served: no path built from the request reaches the disk.
    if (!catalog.scan().reports.includes(path)) throw new NotFound(`no report ${path}`);
    c.header("content-security-policy", REPORT_POLICY);
    return c.html(readFileSync(join(catalog.root, path), "utf8"));
  });

  app.get("*", (c) => {
    const asset = assets.get(c.req.path);
    if (!asset) throw new NotFound(`no page ${c.req.path}`);
    c.header("content-type", asset.contentType);
    c.header("cache-control", "no-cache");
    return c.body(asset.body);
  });

  app.onError((error, c) => {
    if (error instanceof NotFound || error instanceof RecipeNotFound)
      return c.json({ error: error.message }, 404);
    if (error instanceof QueryError) return c.json({ error: error.message }, 400);
    return c.json({ error: error instanceof Error ? error.message : String(error) }, 500);
  });

  return app;
}
