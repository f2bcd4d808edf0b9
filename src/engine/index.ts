/**
 * The numeric engine's public API (everything but the array library itself, which only
 * src/engine/ and src/policy/embedded/ touch): training steps, optimizers, schedules, PRNG keys,
 * parameter trees, safetensors checkpoints, execution modes and leak diagnostics.
 */
export {
  CHECKPOINT_FORMAT,
  type CheckpointContent,
  CheckpointError,
  type JsonValue,
  loadCheckpoint,
  saveCheckpoint,
} from "./checkpoint.ts";
export { trackLiveBuffers, wasmMemoryBytes } from "./diagnostics.ts";
export { type ExecMode, ExecutionSite, engineThreads } from "./exec.ts";
export { keyFromSeed, keyFromWords, keyToWords, splitKey } from "./init.ts";
export {
  type AdamWOptions,
  type AdamWState,
  adamw,
  DEFAULT_ADAMW,
  type GradientTransformation,
} from "./optim.ts";
export { decodeSafetensors, encodeSafetensors, SafetensorsError } from "./safetensors.ts";
export { type WarmupCosineOptions, warmupCosine } from "./schedule.ts";
export {
  createTrainer,
  type LossFn,
  type LossOutput,
  type StepResult,
  type Trainer,
  type TrainerOptions,
  type TrainState,
} from "./train.ts";
export { countParams, disposeTree, type HostTensor, type ParamTree, refTree, treeToHost } from "./tree.ts";
