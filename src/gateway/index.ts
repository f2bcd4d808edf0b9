/** The recording gateway: an OpenAI-compatible endpoint whose calls become trajectories. */
export { type ParsedCompletion, parseCompletion } from "./completion.ts";
export { EPISODE_ID, type EpisodeMeta, EpisodeRegistry } from "./episodes.ts";
export { type ResolveUpstreamOptions, resolveUpstream } from "./resolve-upstream.ts";
export {
  EPISODE_HEADER,
  type FinishOptions,
  type Gateway,
  type GatewayOptions,
  startGateway,
} from "./server.ts";
export { StreamAssembler } from "./stream.ts";
export {
  type BuildOptions,
  type BuiltEpisode,
  buildTrajectory,
  type GatewayInfo,
  trajectorySegments,
} from "./trajectory.ts";
export type { GatewayCall, PostedReward, RecordedChoice } from "./types.ts";
export { httpUpstream, type Upstream, type UpstreamOptions } from "./upstream.ts";
