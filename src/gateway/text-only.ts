/**
 * Text-only turns: the calls a server without token ids answered (Ollama, a hosted API, a policy
 * without a tokenizer) are stored with their text and no ids, labelled in `info.gateway`
 * (`textOnlyCalls`, `server`) and counted (`gateway/text_only_calls`). Token-level training cannot
 * use them (it would learn nothing, silently): `refuseTextOnly` is the one refusal every training
 * path that takes gateway trajectories calls, naming the server and the fix.
 */
import { kindProfile, UPSTREAM_KINDS, type UpstreamKind } from "../policy/openai/server-kind.ts";
import type { Trajectory } from "../types/trajectory.ts";
import type { GatewayInfo } from "./trajectory.ts";

/** Text-only calls of gateway trajectories, with the server that answered them. */
export function textOnlyCalls(trajectories: Iterable<Trajectory>): { calls: number; servers: Set<string> } {
  let calls = 0;
  const servers = new Set<string>();
  for (const trajectory of trajectories) {
    const info = trajectory.info?.gateway as GatewayInfo | undefined;
    if (!info?.textOnlyCalls) continue;
    calls += info.textOnlyCalls;
    servers.add(info.server?.kind ?? "unknown");
  }
  return { calls, servers };
}

/** Throws when any trajectory holds text-only calls: `what` names the training path. */
export function refuseTextOnly(trajectories: Iterable<Trajectory>, what: string): void {
  const refusal = textOnlyRefusal(trajectories, what);
  if (refusal !== null) throw new Error(refusal);
}

/** The refusal for trajectories holding text-only calls (naming the server and the fix), or null. */
export function textOnlyRefusal(trajectories: Iterable<Trajectory>, what: string): string | null {
  const { calls, servers } = textOnlyCalls(trajectories);
  if (calls === 0) return null;
  const named = [...servers].map((kind) =>
    (UPSTREAM_KINDS as readonly string[]).includes(kind) ? kindProfile(kind as UpstreamKind) : null,
  );
  const labels = [...servers].map((kind, i) => named[i]?.label ?? kind).join(", ");
  const fix =
    named.find((profile) => profile?.fix)?.fix ??
    "serve the model where it returns token ids (vLLM ≥ 0.10.2, SGLang, the llama.cpp server, agentrl serve with a checkpoint)";
  return `${what}: ${calls} call(s) were answered by ${labels} without token ids, so their turns are text-only and cannot be trained on; ${fix}`;
}
