/**
 * The curves panel: pick metric keys, set the smoothing, and see one chart per key with every
 * given run overlaid (one line per run, smoothed, the raw values faint behind). `refresh` re-reads
 * the series and updates the drawn charts in place; the run page and the comparison page call it
 * every poll, so a training run's new steps appear while it trains.
 */
import { getJson } from "./api.ts";
import { type Chart, type ChartPoint, drawChart } from "./chart.ts";
import { h, replace } from "./dom.ts";
import { formatNumber } from "./format.ts";
import { ema } from "./smoothing.ts";

export interface CurveRun {
  key: string;
  label: string;
}

interface MetricsResponse {
  series: Record<string, { step: number; value: number | string }[]>;
}

interface Figure {
  element: HTMLElement;
  chart: Promise<Chart> | null;
  caption: HTMLElement;
}

export interface CurvesPanel {
  element: HTMLElement;
  /** Offers these keys in the picker (a live run logs new ones). */
  setKeys(keys: readonly string[]): void;
  refresh(): Promise<void>;
  dispose(): void;
}

const numeric = (value: number | string) => (typeof value === "number" ? value : Number(value));

/** Keys shown first: the ones people look at first in an RL or SFT run. */
const PREFERRED = [
  /^rollout\/(success_rate|pass@1)$/,
  /^reward\/mean$/,
  /^loss\/(policy|train)$/,
  /^eval\/pass@1$/,
  /^loss\//,
  /^rollout\//,
];

export function defaultKeys(keys: readonly string[], count = 4): string[] {
  const ranked = [...keys].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
  return ranked.slice(0, count);
}

function rank(key: string): number {
  const index = PREFERRED.findIndex((pattern) => pattern.test(key));
  return index < 0 ? PREFERRED.length : index;
}

export interface CurvesOptions {
  /** Keys drawn at first (default 4, the most looked-at first). */
  shown?: number;
  /** The panel's heading (default "Curves"). */
  title?: string;
}

export function curvesPanel(
  runs: readonly CurveRun[],
  initialKeys: readonly string[],
  options: CurvesOptions = {},
): CurvesPanel {
  let keys = [...initialKeys];
  const firstCount = options.shown ?? 4;
  const selected = new Set(defaultKeys(keys, firstCount));
  let smoothing = 0.6;
  let filter = "";
  const figures = new Map<string, Figure>();
  const picker = h("div", { class: "key-list" });
  const charts = h("div", { class: "charts" });
  const smoothingLabel = h("output", {}, String(smoothing));
  let latest: Record<string, MetricsResponse["series"]> = {};

  const renderPicker = () => {
    // ticked keys first, so what is drawn is always in sight
    const shown = keys
      .filter((key) => key.toLowerCase().includes(filter.toLowerCase()))
      .sort((a, b) => Number(selected.has(b)) - Number(selected.has(a)));
    replace(
      picker,
      ...shown.map((key) =>
        h(
          "label",
          { class: "key" },
          h("input", {
            type: "checkbox",
            checked: selected.has(key),
            "data-key": key,
            onchange: (event: Event) => {
              if ((event.target as HTMLInputElement).checked) selected.add(key);
              else selected.delete(key);
              void refresh();
            },
          }),
          key,
        ),
      ),
      shown.length === 0 ? h("p", { class: "muted" }, "no metrics logged yet") : null,
    );
  };

  const pointsOf = (key: string): ChartPoint[] =>
    runs.flatMap((run) => {
      const series = latest[run.key]?.[key] ?? [];
      const raw = series.map((point) => numeric(point.value));
      const smooth = ema(raw, smoothing);
      return series
        .map((point, i) => ({ series: run.label, x: point.step, y: smooth[i], raw: raw[i] }))
        .filter((point) => Number.isFinite(point.raw));
    });

  const caption = (key: string) =>
    runs.map((run) => {
      const last = latest[run.key]?.[key]?.at(-1);
      return last
        ? h(
            "span",
            { class: "latest", "data-run": run.label, "data-step": last.step },
            `${run.label}: step ${last.step} = ${formatNumber(last.value)}`,
          )
        : h("span", { class: "latest muted", "data-run": run.label }, `${run.label}: not logged`);
    });

  async function update(): Promise<void> {
    const wanted = keys.filter((key) => selected.has(key));
    const responses = await Promise.all(
      runs.map((run) => getJson<MetricsResponse>("/api/metrics", { run: run.key, key: wanted })),
    );
    latest = Object.fromEntries(runs.map((run, i) => [run.key, responses[i].series]));
    for (const [key, figure] of figures) {
      if (selected.has(key)) continue;
      figure.element.remove();
      void figure.chart?.then((chart) => chart.dispose());
      figures.delete(key);
    }
    for (const key of wanted) {
      let figure = figures.get(key);
      if (!figure) {
        const holder = h("div", { class: "chart" });
        const captionElement = h("figcaption", {});
        figure = {
          element: h("figure", { class: "curve", "data-key": key }, holder, captionElement),
          chart: null,
          caption: captionElement,
        };
        figures.set(key, figure);
        figure.chart = drawChart(holder, { title: key, xTitle: "step", yTitle: "value" }, pointsOf(key));
      } else {
        const chart = await figure.chart;
        await chart?.update(pointsOf(key));
      }
      await figure.chart;
      replace(figure.caption, ...caption(key));
    }
    replace(charts, ...wanted.map((key) => figures.get(key)!.element));
  }

  // One refresh at a time: a poll and a click never interleave their chart updates.
  let queue: Promise<void> = Promise.resolve();
  const refresh = (): Promise<void> => {
    queue = queue.then(update, update);
    return queue;
  };

  const element = h(
    "section",
    { class: "curves" },
    h("h2", {}, options.title ?? "Curves"),
    h(
      "div",
      { class: "curves-body" },
      h(
        "aside",
        { class: "key-picker" },
        h("input", {
          type: "search",
          placeholder: "filter metric keys",
          oninput: (event: Event) => {
            filter = (event.target as HTMLInputElement).value;
            renderPicker();
          },
        }),
        h(
          "label",
          { class: "smoothing" },
          "smoothing ",
          h("input", {
            type: "range",
            min: 0,
            max: 0.95,
            step: 0.05,
            value: smoothing,
            oninput: (event: Event) => {
              smoothing = Number((event.target as HTMLInputElement).value);
              smoothingLabel.textContent = String(smoothing);
              void refresh();
            },
          }),
          smoothingLabel,
        ),
        picker,
      ),
      charts,
    ),
  );
  renderPicker();

  return {
    element,
    setKeys(next) {
      if (next.length === keys.length && next.every((key, i) => key === keys[i])) return;
      const first = keys.length === 0;
      keys = [...next];
      if (first) for (const key of defaultKeys(keys, firstCount)) selected.add(key);
      renderPicker();
    },
    refresh,
    dispose() {
      for (const figure of figures.values()) void figure.chart?.then((chart) => chart.dispose());
      figures.clear();
    },
  };
}
