/**
 * Datasets for SFT and RL: real trajectories collected through the episode loop with noisy tools
 * (collect.ts), stitched ones assembled from gold single steps (stitch.ts), statistics, model-aware
 * task selection, and exports (OpenAI JSONL lives in src/store; verl multi-turn SFT parquet here).
 */
export {
  type CollectCounts,
  type CollectDatasetOptions,
  type CollectDatasetResult,
  type CollectOptions,
  collectDataset,
  collectTrajectories,
} from "./collect.ts";
export { createDatasetDirectory, type DatasetSource, type LoadedDataset, loadDataset } from "./dataset.ts";
export {
  FILTER_CRITERIA,
  type FilterCriterion,
  formatFilter,
  parseFilter,
  rejectionReason,
} from "./filter.ts";
export {
  DEFAULT_MIX,
  DIFFICULTIES,
  type Difficulty,
  type DifficultyMix,
  difficultyOf,
  EASY_THRESHOLD,
  HARD_THRESHOLD,
  measurePassRates,
  type PassRateOptions,
  parseMix,
  type Rebalanced,
  rebalance,
  type SelectedTask,
  type SelectionResult,
  type SelectOptions,
  selectTasks,
  selectTasksFor,
  type TaskPassRate,
  zeroVarianceFraction,
} from "./select.ts";
export {
  loadSelectedTasks,
  SELECTED_TASKS_FILE,
  SELECTION_FILE,
  type SelectDatasetOptions,
  type SelectDatasetResult,
  selectDataset,
} from "./select-dataset.ts";
export { type DatasetStats, datasetStats } from "./stats.ts";
export {
  STITCHED_POLICY_ID,
  type StitchDatasetOptions,
  type StitchDatasetResult,
  stitchDataset,
  stitchTrajectory,
} from "./stitch.ts";
export { type DatasetTaskOptions, datasetTasks, parseTemplateShares, templateOfTaskId } from "./tasks.ts";
export { exportVerlParquet, type VerlExportOptions, verlParquetBuffer, verlRow } from "./verl-parquet.ts";
