/**
 * The token-level view of one episode: one element per token of the stored sequence (prompt, then
 * per turn the policy's tokens and the observation's), coloured by loss mask, log-prob or
 * advantage, with the id, mask, log-prob and advantage on each element (`data-*`, and in its
 * tooltip); turns separated, each with its action, its tool result and status (injected noise
 * marked) and its rewards. Every text here is model or tool output: it goes in as text only.
 */
import type { EpisodeView, TokenCell, TurnView } from "../episode-view.ts";
import { h } from "./dom.ts";
import { formatNumber } from "./format.ts";
import { type ColorMode, tokenColor } from "./token-colors.ts";

export function maxAdvantage(episode: EpisodeView): number {
  let max = 0;
  const visit = (tokens: TokenCell[]) => {
    for (const token of tokens) {
      const value = typeof token.advantage === "number" ? Math.abs(token.advantage) : 0;
      if (value > max) max = value;
    }
  };
  visit(episode.prompt.tokens);
  for (const turn of episode.turns) {
    visit(turn.tokens);
    if (turn.observation) visit(turn.observation.tokens);
  }
  return max;
}

function tokenElement(token: TokenCell, mode: ColorMode, scale: number): HTMLElement {
  const tooltip = [
    `id ${token.id}`,
    `mask ${token.mask}`,
    `log-prob ${formatNumber(token.logprob)}`,
    `advantage ${formatNumber(token.advantage)}`,
  ].join(" · ");
  const element = h(
    "span",
    {
      class: token.label === null ? "tok tok-id" : "tok",
      "data-id": token.id,
      "data-mask": token.mask,
      "data-logprob": token.logprob === null ? "" : String(token.logprob),
      "data-advantage": token.advantage === null ? "" : String(token.advantage),
      title: tooltip,
    },
    token.label ?? String(token.id),
  );
  element.style.background = tokenColor(token, mode, scale);
  return element;
}

function tokens(list: TokenCell[], mode: ColorMode, scale: number, kind: string): HTMLElement {
  return h(
    "div",
    { class: `tokens tokens-${kind}` },
    ...list.map((token) => tokenElement(token, mode, scale)),
  );
}

function actionLine(turn: TurnView): HTMLElement {
  const action = turn.action;
  if (action.type === "tool-call") {
    return h(
      "p",
      { class: "action" },
      "calls ",
      h("code", {}, `${action.tool}(${JSON.stringify(action.arguments)})`),
    );
  }
  if (action.type === "answer") return h("p", { class: "action" }, "answers ", h("code", {}, action.answer));
  return h("p", { class: "action bad" }, "format error: ", action.error);
}

function toolResult(turn: TurnView): HTMLElement | null {
  const result = turn.toolResult;
  if (!result) return null;
  return h(
    "div",
    {
      class: `tool-result tool-${result.status}`,
      "data-status": result.status,
      "data-injected": result.injected,
    },
    h("span", { class: `badge status-${result.status}` }, result.status),
    result.injected
      ? h("span", { class: "badge injected", title: "failure injected by the noise wrapper" }, "injected")
      : null,
    result.latencyMs === undefined
      ? null
      : h("span", { class: "muted" }, ` ${result.latencyMs.toFixed(1)} ms`),
    h("pre", {}, result.content),
  );
}

function rewards(turn: TurnView): HTMLElement {
  const entries = Object.entries(turn.rewards);
  return h(
    "span",
    { class: "rewards" },
    entries.length === 0
      ? "no rewards"
      : entries.map(([name, value]) => `${name} ${formatNumber(value)}`).join(" · "),
  );
}

export function renderEpisode(episode: EpisodeView, mode: ColorMode): HTMLElement {
  const scale = maxAdvantage(episode);
  return h(
    "article",
    {
      class: `episode ${episode.correct ? "correct" : "wrong"}`,
      "data-seq": episode.seq,
      "data-tokens": episode.tokenCount,
    },
    h(
      "header",
      {},
      h(
        "h2",
        {},
        `#${episode.seq} `,
        h("span", { class: episode.correct ? "good" : "bad" }, episode.correct ? "✓ correct" : "✗ wrong"),
      ),
      h(
        "p",
        { class: "muted" },
        `${episode.taskId} · ${episode.family} · step ${episode.step ?? "–"} · group ${episode.group ?? "–"} · seed ${episode.seed} · ${episode.policyId}`,
      ),
      h(
        "p",
        {},
        `outcome ${formatNumber(episode.outcomeReward)} · ended by ${episode.endReason} · answer `,
        h("code", {}, episode.finalAnswer ?? "none"),
        ` · ${episode.tokenCount} tokens`,
      ),
      h("p", { class: "muted advantage-note" }, `advantages: ${episode.advantageNote}`),
    ),
    h(
      "section",
      { class: "segment prompt" },
      h("h3", {}, "prompt"),
      tokens(episode.prompt.tokens, mode, scale, "prompt"),
      h("pre", { class: "text" }, episode.prompt.text),
    ),
    ...episode.turns.map((turn) =>
      h(
        "section",
        { class: "segment turn", "data-turn": turn.index },
        h("h3", {}, `turn ${turn.index} `, rewards(turn)),
        tokens(turn.tokens, mode, scale, "policy"),
        h("pre", { class: "text" }, turn.text),
        actionLine(turn),
        toolResult(turn),
        turn.observation
          ? h(
              "div",
              { class: "observation" },
              h("h4", {}, "observation"),
              tokens(turn.observation.tokens, mode, scale, "observation"),
            )
          : null,
      ),
    ),
    episode.infoJson
      ? h(
          "details",
          {},
          h("summary", {}, "info"),
          h("pre", {}, JSON.stringify(JSON.parse(episode.infoJson), null, 2)),
        )
      : null,
  );
}
