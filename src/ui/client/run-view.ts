/**
 * One run: what it is (kind, status, config, summary, parent, report, artifacts), its curves
 * (live while it runs), its pass@k and pass^k curves when it logged any, and its trajectories.
 */
import type { RunDetail } from "../run-rows.ts";
import { getJson } from "./api.ts";
import { drawChart } from "./chart.ts";
import { curvesPanel } from "./curves.ts";
import { doctorPanel } from "./doctor-view.ts";
import { h, replace } from "./dom.ts";
import { formatDuration, formatTime, reportHref } from "./format.ts";
import { link } from "./routes.ts";
import { trajectoryList } from "./trajectory-list.ts";
import type { View } from "./view.ts";

export function runView(runKey: string): View {
  const element = h("section", { class: "run-page" }, h("p", { class: "muted" }, "loading…"));
  const header = h("div", { class: "run-header" });
  let refreshCurves: (() => Promise<void>) | null = null;
  let setKeys: ((keys: readonly string[]) => void) | null = null;
  let setFacets: ((detail: RunDetail) => void) | null = null;
  let disposeCurves: (() => void) | null = null;

  const renderHeader = (run: RunDetail) =>
    replace(
      header,
      h(
        "h1",
        {},
        run.name,
        " ",
        h("span", { class: `status status-${run.status}`, id: "run-status" }, run.status),
      ),
      h(
        "p",
        {},
        `${run.kind} run · started ${formatTime(run.createdAt)} · ${formatDuration(run.durationSeconds)} · `,
        run.parentKey
          ? h(
              "a",
              { href: link("run", { run: run.parentKey }), class: "parent-link" },
              `parent ${run.parentName}`,
            )
          : "no parent",
        run.report ? " · " : "",
        run.report
          ? h("a", { href: reportHref(run.report), target: "_blank", class: "report-link" }, "report")
          : "",
        h("span", { class: "muted" }, ` · ${run.file}`),
      ),
      run.kind === "doctor" ? doctorPanel(run.summary) : null,
      h("details", {}, h("summary", {}, "config"), h("pre", {}, JSON.stringify(run.config, null, 2))),
      run.summary
        ? h("details", {}, h("summary", {}, "summary"), h("pre", {}, JSON.stringify(run.summary, null, 2)))
        : null,
      run.artifacts.length > 0
        ? h(
            "details",
            {},
            h("summary", {}, `${run.artifacts.length} artifacts`),
            h(
              "ul",
              {},
              ...run.artifacts.map((a) =>
                h("li", {}, `${a.kind}: ${a.path}${a.step === null ? "" : ` (step ${a.step})`}`),
              ),
            ),
          )
        : null,
    );

  /** pass@k, or pass^k (all k samples correct) in its own section beside it. */
  const passChart = async (run: RunDetail, measure: "pass@k" | "pass^k") => {
    const points = measure === "pass@k" ? run.passAtK : run.passHatK;
    if (points.length === 0) return null;
    const holder = h("div", { class: "chart" });
    const section = h(
      "section",
      { class: measure === "pass@k" ? "pass-at-k" : "pass-hat-k" },
      h("h2", {}, measure),
      holder,
    );
    await drawChart(
      holder,
      {
        title: `${measure} (step ${points[0].step})`,
        xTitle: "k",
        yTitle: measure,
        logX: true,
        points: true,
      },
      points.map((p) => ({ series: p.series, x: p.k, y: p.value, raw: p.value })),
    );
    return section;
  };

  async function load(): Promise<void> {
    const run = await getJson<RunDetail>("/api/run", { run: runKey });
    renderHeader(run);
    const curves = curvesPanel([{ key: run.key, label: run.name }], run.metricKeys);
    const trajectories = trajectoryList(runKey, run);
    refreshCurves = curves.refresh;
    setKeys = curves.setKeys;
    setFacets = trajectories.setFacets;
    disposeCurves = curves.dispose;
    const passSection = h("div", {});
    replace(element, header, curves.element, passSection, trajectories.element);
    await Promise.all([curves.refresh(), trajectories.load()]);
    const drawn = await Promise.all([passChart(run, "pass@k"), passChart(run, "pass^k")]);
    replace(passSection, ...drawn.filter((section) => section !== null));
  }

  async function refresh(): Promise<void> {
    const run = await getJson<RunDetail>("/api/run", { run: runKey });
    renderHeaderIfChanged(run);
    setKeys?.(run.metricKeys);
    setFacets?.(run);
    await refreshCurves?.();
  }

  let lastHeader = "";
  const renderHeaderIfChanged = (run: RunDetail) => {
    const signature = JSON.stringify([
      run.status,
      run.summary,
      run.artifacts,
      Math.round(run.durationSeconds),
    ]);
    if (signature !== lastHeader && !header.querySelector("details[open]")) renderHeader(run);
    lastHeader = signature;
  };

  return { element, title: runKey, load, refresh, dispose: () => disposeCurves?.() };
}
