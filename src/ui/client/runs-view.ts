/**
 * The runs page: every run under the folder with kind, status, config, duration and parent, a
 * search box and kind/status filters, checkboxes to overlay several runs' curves, and the store
 * files that could not be read, each with its error.
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
}

export function runsView(): View {
  const state = { search: "", kind: "", status: "" };
  const chosen = new Set<string>();
  let data: RunsResponse = { root: "", stores: [] };
  const body = h("tbody", {});
  const errors = h("div", { class: "store-errors" });
  const root = h("p", { class: "muted" });
  const filters = h("div", { class: "filters" });
  const compare = h("a", { class: "button", href: "#/" }, "compare selected");

  const matches = (run: RunRow) =>
    (!state.kind || run.kind === state.kind) &&
    (!state.status || run.status === state.status) &&
    (!state.search ||
      `${run.id} ${run.kind} ${run.status} ${run.file} ${JSON.stringify(run.config)}`
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
      h("td", {}, h("a", { class: "run-link", href: link("run", { run: run.key }) }, run.id)),
      h("td", {}, run.kind),
      h("td", {}, h("span", { class: `status status-${run.status}` }, run.status)),
      h("td", { class: "config", title: JSON.stringify(run.config, null, 2) }, configLine(run.config)),
      h("td", { class: "num" }, formatDuration(run.durationSeconds)),
      h("td", {}, formatTime(run.createdAt)),
      h("td", {}, run.parentKey ? h("a", { href: link("run", { run: run.parentKey }) }, run.parentId) : "–"),
      h("td", {}, run.report ? h("a", { href: reportHref(run.report), target: "_blank" }, "report") : ""),
      h("td", { class: "muted" }, run.file),
    );

  const render = () => {
    const runs = data.stores.flatMap((store) => store.runs);
    const kinds = [...new Set(runs.map((run) => run.kind))].sort();
    const statuses = [...new Set(runs.map((run) => run.status))].sort();
    root.textContent = `${runs.length} runs in ${data.stores.length} store files under ${data.root}`;
    replace(
      filters,
      h("input", {
        type: "search",
        class: "search",
        placeholder: "search id, kind, config…",
        value: state.search,
        oninput: (event: Event) => {
          state.search = (event.target as HTMLInputElement).value;
          renderRows();
        },
      }),
      select(
        kinds.map((kind) => [kind, kind] as const),
        state.kind,
        (value) => {
          state.kind = value;
          renderRows();
        },
        "any kind",
      ),
      select(
        statuses.map((status) => [status, status] as const),
        state.status,
        (value) => {
          state.status = value;
          renderRows();
        },
        "any status",
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
    replace(body, ...runs.map(row));
    if (runs.length === 0)
      replace(body, h("tr", {}, h("td", { colspan: 10, class: "muted" }, "no runs match")));
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
    filters,
    h(
      "table",
      { class: "runs-table" },
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          ...["", "run", "kind", "status", "config", "duration", "created", "parent", "report", "store"].map(
            (title) => h("th", {}, title),
          ),
        ),
      ),
      body,
    ),
    errors,
  );
  return { element, title: "runs", refresh, load: refresh };
}
