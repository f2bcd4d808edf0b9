/**
 * A recipe output folder: its report's verdicts table (id, experiment, claim, status, the estimate
 * at each seed, evidence and cause, as report.json has them), and the claim picked from it opened
 * below (claim-panel.ts): its arms, their training runs overlaid across seeds, their evaluations.
 * The claim is part of the address (`#/recipe?path=…&claim=…`), so an opened claim can be linked.
 */
import type { RecipeDetail, RecipeVerdict } from "../recipe-detail.ts";
import { getJson } from "./api.ts";
import { claimPanel } from "./claim-panel.ts";
import { h, replace } from "./dom.ts";
import { reportHref } from "./format.ts";
import { link } from "./routes.ts";
import type { View } from "./view.ts";

const signed = (x: number | null) => (x === null ? "n/a" : `${x >= 0 ? "+" : ""}${x.toFixed(3)}`);

export function recipeView(path: string, claim: string | null): View {
  const element = h("section", { class: "recipe-page" }, h("p", { class: "muted" }, "loading…"));
  let dispose: (() => void) | null = null;

  const verdictRow = (recipe: RecipeDetail, verdict: RecipeVerdict) =>
    h(
      "tr",
      {
        class: `verdict${verdict.id === claim ? " open" : ""}`,
        "data-claim": verdict.id,
        "data-status": verdict.status,
      },
      h(
        "td",
        {},
        h(
          "a",
          { class: "claim-link", href: link("recipe", { path: recipe.path, claim: verdict.id }) },
          verdict.id,
        ),
      ),
      h("td", {}, verdict.experiment),
      h("td", {}, verdict.claim),
      h(
        "td",
        {},
        h("span", { class: `verdict-status ${verdict.status.replaceAll(" ", "-")}` }, verdict.status),
      ),
      h("td", { class: "num" }, verdict.seeds.map(signed).join(", ")),
      h(
        "td",
        { class: "evidence" },
        verdict.evidence,
        verdict.cause ? h("span", { class: "cause" }, ` Cause: ${verdict.cause}`) : null,
      ),
    );

  async function load(): Promise<void> {
    const recipe = await getJson<RecipeDetail>("/api/recipe", { path });
    const counts = new Map<string, number>();
    for (const verdict of recipe.verdicts) counts.set(verdict.status, (counts.get(verdict.status) ?? 0) + 1);
    const panelHolder = h("div", { class: "claim-holder" });
    replace(
      element,
      h("h1", {}, `Recipe ${path === "." ? "(this folder)" : path}`),
      h(
        "p",
        {},
        `${recipe.preset ?? "unknown"} preset · training seeds ${recipe.seeds.join(", ")} · ${recipe.runs.length} runs · ${recipe.createdAt ?? ""} · `,
        [...counts].map(([status, count]) => `${count} ${status}`).join(", "),
        recipe.reportPage
          ? h(
              "span",
              {},
              " · ",
              h(
                "a",
                { href: reportHref(recipe.reportPage), target: "_blank", class: "report-link" },
                "report",
              ),
            )
          : null,
      ),
      h(
        "table",
        { class: "verdicts-table" },
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            ...["claim id", "experiment", "claim", "status", "per seed", "evidence"].map((title) =>
              h("th", {}, title),
            ),
          ),
        ),
        h("tbody", {}, ...recipe.verdicts.map((verdict) => verdictRow(recipe, verdict))),
      ),
      recipe.verdicts.length === 0 ? h("p", { class: "muted" }, "the report has no verdicts") : null,
      panelHolder,
    );
    if (claim) {
      const panel = claimPanel(recipe, claim);
      dispose = panel.dispose;
      replace(panelHolder, panel.element);
      await panel.load();
    }
  }

  return {
    element,
    title: claim ? `${claim} · recipe ${path}` : `recipe ${path}`,
    load,
    dispose: () => dispose?.(),
  };
}
