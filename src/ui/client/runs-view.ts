/**
 * The runs page: every run under the folder with its name, kind, estimator, family, seed, status,
 * config, duration and parent; a search box, a filter on each of kind, estimator, family, seed and
 * status, and a grouping by any of them; checkboxes to overlay several runs' curves; links to the
 * recipe output folders found; and the store files that could not be read, each with its error.
 */
import type { RunRow, StoreRow } from "../run-rows.ts";
import { getJson } from "./api.ts";
import { h, replace, select } from "./dom.ts";
import { configLine, formatDuration, formatTime, reportHref } from "./format.ts";
import { link } from "./routes.ts";
import type { View } from "./view.ts";

interface RunsResponse {
  root: string;
  stores: StoreRow[];
  recipes: string[];
}

/** The columns a run can be filtered and grouped by. */
const FACETS = ["kind", "estimator", "family", "seed", "status"] as const;
type Facet = (typeof FACETS)[number];
const facetOf = (run: RunRow, facet: Facet) => (run[facet] === null ? "" : String(run[facet]));

const COLUMNS = [
  "",
  "run",
  "kind",
  "estimator",
  "family",
  "seed",
  "status",
  "config",
  "duration",
  "created",
  "parent",
  "report",
  "store",
];

export function runsView(): View {
  const state = {
    search: "",
    group: "" as Facet | "",
    filter: Object.fromEntries(FACETS.map((facet) => [facet, ""])) as Record<Facet, string>,
  };
  const recipes = h("p", { class: "recipes" });
  const chosen = new Set<string>();
  let data: RunsResponse = { root: "", stores: [], recipes: [] };
  const body = h("tbody", {});
  const errors = h("div", { class: "store-errors" });
  const root = h("p", { class: "muted" });
  const filters = h("div", { class: "filters" });
  const compare = h("a", { class: "button", href: "#/" }, "compare selected");

  const matches = (run: RunRow) =>
    FACETS.every((facet) => !state.filter[facet] || facetOf(run, facet) === state.filter[facet]) &&
    (!state.search ||
      `${run.name} ${run.id} ${run.kind} ${run.status} ${run.file} ${JSON.stringify(run.config)}`
        .toLowerCase()
        .includes(state.search.toLowerCase()));

  const updateCompare = () => {
    compare.setAttribute("href", link("compare", { run: [...chosen] }));
    compare.classList.toggle("disabled", chosen.size < 1);
  };

  const row = (run: RunRow) =>
    h(
      "tr",
      { class: "run", "data-key": run.key, "data-status": run.status },
      h(
        "td",
        {},
        h("input", {
          type: "checkbox",
          title: "overlay this run's curves",
          checked: chosen.has(run.key),
          onchange: (event: Event) => {
            if ((event.target as HTMLInputElement).checked) chosen.add(run.key);
            else chosen.delete(run.key);
            updateCompare();
          },
        }),
      ),
      h("td", {}, h("a", { class: "run-link", href: link("run", { run: run.key }) }, run.name)),
      h("td", { "data-facet": "kind" }, run.kind),
      h("td", { "data-facet": "estimator" }, run.estimator ?? ""),
      h("td", { "data-facet": "family" }, run.family ?? ""),
      h("td", { "data-facet": "seed" }, run.seed ?? ""),
      h("td", {}, h("span", { class: `status status-${run.status}` }, run.status)),
      h("td", { class: "config", title: JSON.stringify(run.config, null, 2) }, configLine(run.config)),
      h("td", { class: "num" }, formatDuration(run.durationSeconds)),
      h("td", {}, formatTime(run.createdAt)),
      h(
        "td",
        { class: "parent" },
        run.parentKey ? h("a", { href: link("run", { run: run.parentKey }) }, run.parentName) : "–",
      ),
      h("td", {}, run.report ? h("a", { href: reportHref(run.report), target: "_blank" }, "report") : ""),
      h("td", { class: "muted" }, run.file),
    );

  const render = () => {
    const runs = data.stores.flatMap((store) => store.runs);
    root.textContent = `${runs.length} runs in ${data.stores.length} store files under ${data.root}`;
    replace(
      recipes,
      ...(data.recipes.length > 0 ? ["Recipe outputs: "] : []),
      ...data.recipes.flatMap((path, i) => [
        i > 0 ? " · " : "",
        h("a", { class: "recipe-link", href: link("recipe", { path }) }, path === "." ? "this folder" : path),
      ]),
    );
    const choices = (facet: Facet) =>
      [...new Set(runs.map((run) => facetOf(run, facet)).filter((value) => value !== ""))]
        .sort((a, b) => a.localeCompare(b, undefined, { numeric: true }))
        .map((value) => [value, value] as const);
    replace(
      filters,
      h("input", {
        type: "search",
        class: "search",
        placeholder: "search name, kind, config…",
        value: state.search,
        oninput: (event: Event) => {
          state.search = (event.target as HTMLInputElement).value;
          renderRows();
        },
      }),
      ...FACETS.map((facet) => {
        const element = select(
          choices(facet),
          state.filter[facet],
          (value) => {
            state.filter[facet] = value;
            renderRows();
          },
          `any ${facet}`,
        );
        element.dataset.filter = facet;
        return element;
      }),
      h(
        "label",
        {},
        "group by ",
        select(
          FACETS.map((facet) => [facet, facet] as const),
          state.group,
          (value) => {
            state.group = value as Facet | "";
            renderRows();
          },
          "nothing",
        ),
      ),
      compare,
    );
    renderRows();
    const broken = data.stores.filter((store) => store.error !== null);
    replace(
      errors,
      broken.length > 0 ? h("h3", {}, "Files that are not readable run stores") : null,
      ...broken.map((store) =>
        h(
          "p",
          { class: "store-error", "data-file": store.file },
          h("code", {}, store.file),
          ": ",
          store.error,
        ),
      ),
    );
    updateCompare();
  };

  const renderRows = () => {
    const runs = data.stores.flatMap((store) => store.runs).filter(matches);
    if (!state.group) replace(body, ...runs.map(row));
    else {
      const facet = state.group;
      const groups = new Map<string, RunRow[]>();
      for (const run of runs)
        groups.set(facetOf(run, facet), [...(groups.get(facetOf(run, facet)) ?? []), run]);
      const ordered = [...groups].sort(([a], [b]) => a.localeCompare(b, undefined, { numeric: true }));
      replace(
        body,
        ...ordered.flatMap(([value, members]) => [
          h(
            "tr",
            { class: "group", "data-group": value },
            h("th", { colspan: COLUMNS.length }, `${facet} ${value || "(none)"} · ${members.length} runs`),
          ),
          ...members.map(row),
        ]),
      );
    }
    if (runs.length === 0)
      replace(body, h("tr", {}, h("td", { colspan: COLUMNS.length, class: "muted" }, "no runs match")));
  };

  const refresh = async () => {
    data = await getJson<RunsResponse>("/api/runs");
    const focused = document.activeElement;
    if (focused instanceof HTMLInputElement && focused.type === "search") renderRows();
    else render();
  };

  const element = h(
    "section",
    { class: "runs" },
    h("h1", {}, "Runs"),
    root,
    recipes,
    filters,
    h(
      "table",
      { class: "runs-table" },
      h("thead", {}, h("tr", {}, ...COLUMNS.map((title) => h("th", {}, title)))),
      body,
    ),
    errors,
  );
  return { element, title: "runs", refresh, load: refresh };
}
