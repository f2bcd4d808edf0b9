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
    const names = runs.map((run) => run.name);
    const label = (run: RunDetail) =>
      names.filter((name) => name === run.name).length > 1 ? run.key : run.name;
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
    // The overall pass@k and pass^k curves of every run that logged them (eval runs, RL boundary steps).
    for (const measure of ["pass@k", "pass^k"] as const) {
      const curves = runs.flatMap((run) =>
        (measure === "pass@k" ? run.passAtK : run.passHatK)
          .filter((point) => point.series === "eval")
          .map((point) => ({ series: label(run), x: point.k, y: point.value, raw: point.value })),
      );
      if (curves.length === 0) continue;
      const holder = h("div", { class: "chart" });
      element.append(
        h(
          "section",
          { class: measure === "pass@k" ? "pass-at-k" : "pass-hat-k" },
          h("h2", {}, measure),
          holder,
        ),
      );
      await drawChart(
        holder,
        {
          title: `${measure} (latest step of each run)`,
          xTitle: "k",
          yTitle: measure,
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
