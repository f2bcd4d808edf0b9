/** Supervised fine-tuning of the embedded policy: config, data (mask, split, batch plan), held-out loss, trainer. */
export { DEFAULT_SFT_CONFIG, parseSftConfig, type SftConfig, SftConfigSchema } from "./config.ts";
export {
  type BatchPlan,
  defaultSftBuckets,
  isHeldoutTask,
  loadSftData,
  type SftData,
  type SftDataCounts,
  type SftEpisode,
  sftBatchPlan,
} from "./data.ts";
export { maskedLoss } from "./heldout.ts";
export {
  SFT_CHECKPOINT,
  SFT_MODEL,
  type SftOptions,
  type SftProgress,
  type SftResult,
  trainSft,
} from "./train.ts";
