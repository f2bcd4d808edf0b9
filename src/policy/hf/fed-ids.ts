/**
 * A chat policy's episode as the model read it. The episode loop stores a chat turn's observation
 * as the tool's text encoded alone, but the Hugging Face policy (policy.ts) fed the model the chat
 * template's rendering: role markers, the tool list, `<tool_response>` tags. Training on the
 * stored ids would score tokens the sampler never conditioned on (the sampler's and the trainer's
 * log-probs would disagree). With the rendered ids the policy fed before each turn, the trajectory
 * gets them back: the prompt is the first rendering and each observation is what the next
 * rendering added after the sampled ids. Where a rendering does not extend the ids before it (a
 * prefix break: the template rewrote an earlier turn), the sequence stops there, as the gateway's
 * trajectories do (gateway/trajectory.ts): later turns keep their text but no ids, so they are
 * not trained on.
 */
import type { Trajectory } from "../../types/trajectory.ts";

/** `trajectory` with the token ids the model read; `contexts[k]`: the ids fed before turn k. */
export function withFedIds(trajectory: Trajectory, contexts: readonly number[][]): Trajectory {
  if (contexts.length === 0 || !contexts[0]) return trajectory;
  const flat = [...contexts[0]];
  let broken = false;
  let prefixBreaks = 0; // 0 or 1: the ids stop at the first
  const turns = trajectory.turns.map((turn, k) => {
    if (broken) {
      return {
        ...turn,
        tokenIds: [],
        logprobs: null,
        ...(turn.observation ? { observation: { text: turn.observation.text, tokenIds: [] } } : {}),
      };
    }
    flat.push(...turn.tokenIds);
    const next = contexts[k + 1];
    if (!turn.observation) return turn;
    if (!next) return { ...turn, observation: { text: turn.observation.text, tokenIds: [] } };
    const extendsFlat = next.length >= flat.length && flat.every((id, i) => id === next[i]);
    if (!extendsFlat) {
      broken = true;
      prefixBreaks++;
      return { ...turn, observation: { text: turn.observation.text, tokenIds: [] } };
    }
    const added = next.slice(flat.length);
    flat.push(...added);
    return { ...turn, observation: { text: turn.observation.text, tokenIds: added } };
  });
  return {
    ...trajectory,
    prompt: { text: trajectory.prompt.text, tokenIds: [...contexts[0]] },
    turns,
    ...(prefixBreaks > 0 ? { info: { ...trajectory.info, prefixBreaks } } : {}),
  };
}
