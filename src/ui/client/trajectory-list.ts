/**
 * The trajectories of one run: filters (task, family, correctness, end reason, step, tool status,
 * injected noise) and a page of summaries, each linking to its token-level view.
 */
import type { RunDetail } from "../run-rows.ts";
import type { TrajectorySummary } from "../trajectory-query.ts";
import { getJson } from "./api.ts";
import { h, replace, select } from "./dom.ts";
import { formatNumber } from "./format.ts";
import { link } from "./routes.ts";

const TOOL_STATUSES = ["ok", "error", "empty", "timeout", "corrupted"] as const;
const PAGE = 50;

export interface TrajectoryList {
  element: HTMLElement;
  setFacets(detail: RunDetail): void;
  load(): Promise<void>;
}

export function trajectoryList(runKey: string, detail: RunDetail): TrajectoryList {
  const filter: Record<string, string> = {
    task: "",
    family: "",
    correct: "",
    end: "",
    step: "",
    tool: "",
    injected: "",
  };
  let offset = 0;
  let facets = detail.trajectories;
  const controls = h("div", { class: "filters" });
  const body = h("tbody", {});
  const pager = h("div", { class: "pager" });

  const change = (name: string) => (value: string) => {
    filter[name] = value;
    offset = 0;
    void load();
  };

  const pick = (name: string, choices: readonly (readonly [string, string])[], any: string) => {
    const element = select(choices, filter[name], change(name), any);
    element.dataset.filter = name;
    return element;
  };

  const renderControls = () =>
    replace(
      controls,
      h("input", {
        type: "search",
        placeholder: "task id",
        value: filter.task,
        onchange: (event: Event) => change("task")((event.target as HTMLInputElement).value.trim()),
      }),
      pick(
        "family",
        facets.families.map((f) => [f, f] as const),
        "any family",
      ),
      pick(
        "correct",
        [
          ["true", "correct"],
          ["false", "wrong"],
        ],
        "any outcome",
      ),
      pick(
        "end",
        facets.endReasons.map((r) => [r, r] as const),
        "any end reason",
      ),
      pick(
        "step",
        facets.steps.map((s) => [String(s), `step ${s}`] as const),
        "any step",
      ),
      pick(
        "tool",
        TOOL_STATUSES.map((s) => [s, `a tool ${s}`] as const),
        "any tool status",
      ),
      pick("injected", [["true", "injected failure"]], "noise or not"),
    );

  const row = (item: TrajectorySummary) =>
    h(
      "tr",
      { class: "trajectory", "data-seq": item.seq },
      h(
        "td",
        {},
        h(
          "a",
          { class: "episode-link", href: link("episode", { run: runKey, seq: item.seq }) },
          `#${item.seq}`,
        ),
      ),
      h("td", {}, item.taskId),
      h("td", {}, item.family),
      h("td", {}, item.step === null ? "–" : item.step),
      h("td", {}, item.group === null ? "–" : item.group),
      h("td", { class: item.correct ? "good" : "bad" }, item.correct ? "✓" : "✗"),
      h("td", { class: "num" }, formatNumber(item.outcomeReward)),
      h("td", {}, item.endReason),
      h("td", { class: "num" }, item.turns),
      h("td", { class: "statuses" }, item.toolStatuses),
    );

  async function load(): Promise<void> {
    const page = await getJson<{ total: number; rows: TrajectorySummary[] }>("/api/trajectories", {
      run: runKey,
      ...filter,
      limit: PAGE,
      offset,
    });
    replace(body, ...page.rows.map(row));
    if (page.rows.length === 0)
      replace(body, h("tr", {}, h("td", { colspan: 10, class: "muted" }, "no episodes match")));
    const last = Math.min(offset + PAGE, page.total);
    replace(
      pager,
      h(
        "button",
        {
          disabled: offset === 0,
          onclick: () => {
            offset = Math.max(0, offset - PAGE);
            void load();
          },
        },
        "‹ previous",
      ),
      ` ${page.total === 0 ? 0 : offset + 1}–${last} of ${page.total}${facets.infraFailures > 0 ? ` (run: ${facets.infraFailures} infra failures, never scored)` : ""} `,
      h(
        "button",
        {
          disabled: last >= page.total,
          onclick: () => {
            offset += PAGE;
            void load();
          },
        },
        "next ›",
      ),
    );
  }

  renderControls();
  const headers = [
    "episode",
    "task",
    "family",
    "step",
    "group",
    "correct",
    "outcome",
    "end",
    "turns",
    "tool statuses (* injected)",
  ];
  return {
    element: h(
      "section",
      { class: "trajectories" },
      h("h2", {}, "Trajectories"),
      controls,
      h("table", {}, h("thead", {}, h("tr", {}, ...headers.map((t) => h("th", {}, t)))), body),
      pager,
    ),
    setFacets(next) {
      const changed = JSON.stringify(next.trajectories) !== JSON.stringify(facets);
      const grew = next.trajectories.total !== facets.total;
      facets = next.trajectories;
      if (grew) void load(); // a live run stored new episodes
      if (changed && !controls.contains(document.activeElement)) renderControls();
    },
    load,
  };
}
