/**
 * One claim of a recipe opened: the report's arms of it (start and end pass@1, the difference with
 * its interval, whether the arm learned) when the report has them; each training arm's runs at
 * every seed overlaid on the same charts (curves.ts); links comparing the arms at one seed (the
 * comparison page, e.g. GRPO against MT-GRPO at seed 1); and each evaluated arm's pass@k at every
 * seed on one chart, with its runs linked (their pages list the episodes, which open in the token
 * view).
 */
import type { ArmGroup, ClaimDetail, RecipeArm, RecipeDetail } from "../recipe-detail.ts";
import { getJson } from "./api.ts";
import { drawChart } from "./chart.ts";
import { type CurvesPanel, curvesPanel } from "./curves.ts";
import { h, replace } from "./dom.ts";
import { formatNumber } from "./format.ts";
import { link } from "./routes.ts";

const signed = (x: number | null) => (x === null ? "n/a" : `${x >= 0 ? "+" : ""}${x.toFixed(3)}`);

function armsTable(arms: readonly RecipeArm[]): HTMLElement {
  return h(
    "table",
    { class: "arms-table" },
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        ...[
          "arm",
          "seed",
          "family",
          "estimator",
          "start pass@1",
          "end pass@1",
          "end − start [95% CI]",
          "learned",
        ].map((title) => h("th", {}, title)),
      ),
    ),
    h(
      "tbody",
      {},
      ...arms.map((arm) =>
        h(
          "tr",
          { class: "arm", "data-stage": arm.stage },
          h("td", {}, arm.stage),
          h("td", {}, arm.seed ?? "–"),
          h("td", {}, arm.family ?? "–"),
          h("td", {}, arm.estimator ?? "–"),
          h("td", { class: "num" }, formatNumber(arm.start)),
          h("td", { class: "num" }, formatNumber(arm.end)),
          h(
            "td",
            { class: "num" },
            arm.difference
              ? `${signed(arm.difference.estimate)} [${signed(arm.difference.low)}, ${signed(arm.difference.high)}]`
              : "–",
          ),
          h("td", {}, arm.learned === null ? "–" : arm.learned ? "yes" : "no"),
        ),
      ),
    ),
  );
}

const runLinks = (group: ArmGroup) =>
  h(
    "ul",
    { class: "arm-runs" },
    ...group.runs.map((run) =>
      h(
        "li",
        { "data-key": run.key },
        h("a", { class: "run-link", href: link("run", { run: run.key }) }, run.name),
        ` · ${run.status}`,
        run.estimator ? ` · ${run.estimator}` : "",
        run.family ? ` · ${run.family}` : "",
        run.parentKey
          ? h("span", {}, " · from ", h("a", { href: link("run", { run: run.parentKey }) }, run.parentName))
          : "",
      ),
    ),
  );

export function claimPanel(
  recipe: RecipeDetail,
  id: string,
): { element: HTMLElement; load(): Promise<void>; dispose(): void } {
  const element = h(
    "section",
    { class: "claim", "data-claim": id },
    h("p", { class: "muted" }, "loading the claim's runs…"),
  );
  const panels: CurvesPanel[] = [];

  async function load(): Promise<void> {
    const claim = await getJson<ClaimDetail>("/api/claim", { path: recipe.path, id });
    const { verdict } = claim;
    const training = h("div", { class: "training" });
    const evaluations = h("div", { class: "evaluations" });
    const compare = h("p", { class: "compare-arms" });
    replace(
      element,
      h(
        "h2",
        {},
        verdict.id,
        " ",
        h("span", { class: `verdict-status ${verdict.status.replaceAll(" ", "-")}` }, verdict.status),
      ),
      h("p", {}, verdict.claim),
      verdict.stages === null
        ? h(
            "p",
            { class: "muted stale" },
            "This report predates the record of which stages each claim read: rebuild it (agentrl recipe with the same preset and --out reuses every stage) to open its runs here.",
          )
        : null,
      claim.arms.length > 0
        ? h("section", { class: "arms" }, h("h3", {}, "Arms (from the report)"), armsTable(claim.arms))
        : null,
      h("h3", {}, `Training runs (${claim.training.length} arms)`),
      compare,
      training,
      h("h3", {}, `Evaluations (${claim.evaluations.length} arms)`),
      evaluations,
    );

    // Compare the arms at one seed: every training arm of the claim that is ticked, at that seed.
    const ticked = new Set(claim.training.map((group) => group.stage));
    const seeds = [
      ...new Set(claim.training.flatMap((group) => group.runs.map((run) => run.seed ?? 1))),
    ].sort((a, b) => a - b);
    const renderCompare = () =>
      replace(
        compare,
        "Compare the ticked arms at one seed: ",
        ...seeds.flatMap((seed, i) => {
          const keys = claim.training
            .filter((group) => ticked.has(group.stage))
            .flatMap((group) => group.runs.filter((run) => (run.seed ?? 1) === seed).map((run) => run.key));
          return [
            i > 0 ? " · " : "",
            h(
              "a",
              { class: "compare-seed", "data-seed": seed, href: link("compare", { run: keys }) },
              `seed ${seed}`,
            ),
          ];
        }),
      );
    renderCompare();

    for (const group of claim.training) {
      const keys = [...new Set(group.runs.flatMap((run) => run.metricKeys))].sort();
      const panel = curvesPanel(
        group.runs.map((run) => ({ key: run.key, label: run.name })),
        keys,
        { shown: 2, title: `${group.stage} at ${group.runs.length} seeds` },
      );
      panels.push(panel);
      training.append(
        h(
          "section",
          { class: "arm-group", "data-stage": group.stage },
          h(
            "label",
            { class: "arm-pick" },
            h("input", {
              type: "checkbox",
              checked: true,
              "data-arm": group.stage,
              onchange: (event: Event) => {
                if ((event.target as HTMLInputElement).checked) ticked.add(group.stage);
                else ticked.delete(group.stage);
                renderCompare();
              },
            }),
            ` ${group.stage} (${group.kind}) in the comparison`,
          ),
          runLinks(group),
          panel.element,
        ),
      );
    }
    if (claim.training.length === 0)
      training.append(h("p", { class: "muted" }, "no training runs behind this claim"));

    const drawn: Promise<unknown>[] = panels.map((panel) => panel.refresh());
    for (const group of claim.evaluations) {
      const holder = h("div", { class: "chart" });
      const points = group.runs.flatMap((run) =>
        run.passAtK.map((point) => ({ series: run.name, x: point.k, y: point.value, raw: point.value })),
      );
      evaluations.append(
        h(
          "section",
          { class: "eval-group", "data-stage": group.stage },
          h("h4", {}, group.stage),
          runLinks(group),
          points.length > 0 ? holder : h("p", { class: "muted" }, "no pass@k logged"),
        ),
      );
      if (points.length > 0)
        drawn.push(
          drawChart(
            holder,
            {
              title: `${group.stage}: pass@k at each seed`,
              xTitle: "k",
              yTitle: "pass@k",
              logX: true,
              points: true,
            },
            points,
          ),
        );
    }
    if (claim.evaluations.length === 0)
      evaluations.append(h("p", { class: "muted" }, "no evaluations behind this claim"));
    await Promise.all(drawn);
    element.dataset.loaded = "true";
  }

  return {
    element,
    load,
    dispose: () => {
      for (const panel of panels) panel.dispose();
    },
  };
}
