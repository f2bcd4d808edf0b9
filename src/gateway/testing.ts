/** Test helpers of the gateway: a recorded call with every field a test does not care about filled in. */
import type { GatewayCall } from "./types.ts";

/** A successful-looking call of episode `e` with nothing recorded; `fields` set what a test needs. */
export function recordedCall(seq: number, fields: Partial<GatewayCall> = {}): GatewayCall {
  return {
    episodeId: "e",
    seq,
    api: "chat",
    startedAt: "",
    latencyMs: 1,
    stream: false,
    request: {},
    response: null,
    promptTokenIds: null,
    choices: [],
    usage: null,
    ...fields,
  };
}
