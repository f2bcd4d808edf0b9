/** Several runs' curves on the same charts (the runs page's "compare selected"). */
import type { RunDetail } from "../run-rows.ts";
import { getJson } from "./api.ts";
import { drawChart } from "./chart.ts";
import { type CurvesPanel, curvesPanel } from "./curves.ts";
import { h, replace } from "./dom.ts";
import { link } from "./routes.ts";
import type { View } from "./view.ts";

export function compareView(runKeys: readonly string[]): View {
  const element = h("section", { class: "compare" }, h("p", { class: "muted" }, "loading…"));
  let panel: CurvesPanel | null = null;

  const unionKeys = (runs: RunDetail[]) => [...new Set(runs.flatMap((run) => run.metricKeys))].sort();
  const fetchRuns = () => Promise.all(runKeys.map((key) => getJson<RunDetail>("/api/run", { run: key })));

  async function load(): Promise<void> {
    const runs = await fetchRuns();
    const ids = runs.map((run) => run.id);
    const label = (run: RunDetail) => (ids.filter((id) => id === run.id).length > 1 ? run.key : run.id);
    panel = curvesPanel(
      runs.map((run) => ({ key: run.key, label: label(run) })),
      unionKeys(runs),
    );
    replace(
      element,
      h("h1", {}, `Comparing ${runs.length} runs`),
      h(
        "ul",
        {},
        ...runs.map((run) =>
          h(
            "li",
            {},
            h("a", { href: link("run", { run: run.key }) }, label(run)),
            ` · ${run.kind} · ${run.status}`,
          ),
        ),
      ),
      panel.element,
    );
    await panel.refresh();
    // The overall pass@k curve of every run that logged one (eval runs, RL boundary steps).
    const curves = runs.flatMap((run) =>
      run.passAtK
        .filter((point) => point.series === "eval")
        .map((point) => ({ series: label(run), x: point.k, y: point.value, raw: point.value })),
    );
    if (curves.length > 0) {
      const holder = h("div", { class: "chart" });
      element.append(h("section", { class: "pass-at-k" }, h("h2", {}, "pass@k"), holder));
      await drawChart(
        holder,
        {
          title: "pass@k (latest step of each run)",
          xTitle: "k",
          yTitle: "pass@k",
          logX: true,
          points: true,
        },
        curves,
      );
    }
  }

  async function refresh(): Promise<void> {
    if (!panel) return;
    panel.setKeys(unionKeys(await fetchRuns()));
    await panel.refresh();
  }

  return { element, title: "compare", load, refresh, dispose: () => panel?.dispose() };
}
