/**
 * The episode page: the token view of one episode, and optionally a second episode of the same
 * task beside it (`with=`). The picker offers the task's other episodes, those with the other
 * outcome first (a success next to a failure), then those of the same step and group.
 */
import type { EpisodeView } from "../episode-view.ts";
import { getJson } from "./api.ts";
import { h, replace, select } from "./dom.ts";
import { link } from "./routes.ts";
import { COLOR_MODES, type ColorMode } from "./token-colors.ts";
import { renderEpisode } from "./token-view.ts";
import type { View } from "./view.ts";

type Other = { seq: number; correct: boolean; step: number | null; group: number | null };
type EpisodeResponse = EpisodeView & { others: Other[] };

let colorMode: ColorMode = "mask";

const LEGENDS: Record<ColorMode, string> = {
  mask: "blue: loss mask 1 (policy tokens) · grey: mask 0 (prompt, tool output)",
  logprob: "sampling probability exp(log-prob): red 0 → yellow → green 1 · none: no colour",
  advantage: "green: positive advantage · red: negative · intensity |A| / max |A| · none: no colour",
};

export function rankOthers(episode: EpisodeView, others: readonly Other[]): Other[] {
  const score = (other: Other) =>
    (other.correct !== episode.correct ? 0 : 4) +
    (other.step === episode.step ? 0 : 2) +
    (other.group === episode.group ? 0 : 1);
  return [...others].sort((a, b) => score(a) - score(b) || a.seq - b.seq);
}

export function episodePage(runKey: string, seq: string, withSeq: string | null): View {
  const element = h("section", { class: "episode-page" }, h("p", { class: "muted" }, "loading…"));
  let episodes: EpisodeResponse[] = [];
  const columns = h("div", { class: "episode-columns" });

  const renderColumns = () =>
    replace(columns, ...episodes.map((episode) => renderEpisode(episode, colorMode)));

  async function load(): Promise<void> {
    const seqs = withSeq ? [seq, withSeq] : [seq];
    episodes = await Promise.all(
      seqs.map((s) => getJson<EpisodeResponse>("/api/episode", { run: runKey, seq: s })),
    );
    const first = episodes[0];
    const others = rankOthers(first, first.others);
    const legend = h("p", { class: "legend muted" }, LEGENDS[colorMode]);
    const controls = h(
      "div",
      { class: "filters" },
      h("a", { href: link("run", { run: runKey }) }, "← run"),
      h(
        "label",
        {},
        "colour by ",
        select(
          COLOR_MODES.map((m) => [m, m] as const),
          colorMode,
          (value) => {
            colorMode = value as ColorMode;
            legend.textContent = LEGENDS[colorMode];
            renderColumns();
          },
        ),
      ),
      h(
        "label",
        {},
        "beside it ",
        select(
          others.map(
            (o) =>
              [
                String(o.seq),
                `#${o.seq} ${o.correct ? "✓" : "✗"} step ${o.step ?? "–"} group ${o.group ?? "–"}`,
              ] as const,
          ),
          withSeq ?? "",
          (value) => {
            location.hash = link("episode", { run: runKey, seq, with: value || undefined });
          },
          others.length === 0 ? "no other episode of this task" : "another episode of this task…",
        ),
      ),
      legend,
    );
    renderColumns();
    replace(element, controls, columns);
  }

  return { element, title: `episode ${seq}`, load };
}
