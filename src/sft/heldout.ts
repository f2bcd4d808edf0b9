/**
 * Held-out loss: the masked cross-entropy of the SFT objective on held-out episodes, forward only
 * (no gradient), in nats per policy token:
 *
 *   loss = −(1/|P|) Σ_{(i,t) ∈ P} log p(x_{i,t} | x_{i,<t}),   P = positions with mask 1 and t ≥ 1
 *
 * pooled over all episodes (token-weighted, like the training loss's token mean).
 */

import type { GptConfig } from "../policy/embedded/config.ts";
import type { GptParams } from "../policy/embedded/model.ts";
import { scoreTokens } from "../policy/embedded/score.ts";
import type { EncodedEpisode } from "../pretrain/corpus.ts";

/** Pooled NLL of the policy tokens; `tokens` is |P|. Does not consume `params`. */
export async function maskedLoss(
  params: GptParams,
  config: GptConfig,
  episodes: readonly EncodedEpisode[],
): Promise<{ loss: number; tokens: number }> {
  if (episodes.length === 0) return { loss: Number.NaN, tokens: 0 };
  const { logprobs } = await scoreTokens(
    params,
    config,
    episodes.map((episode) => episode.ids),
  );
  let nll = 0;
  let tokens = 0;
  episodes.forEach((episode, i) => {
    for (let t = 1; t < episode.ids.length; t++) {
      if (episode.mask[t] !== 1) continue;
      nll -= logprobs[i][t];
      tokens++;
    }
  });
  return { loss: tokens === 0 ? Number.NaN : nll / tokens, tokens };
}
