/**
 * Evaluation: unbiased pass@k and its curves, `evaluate` (sample, store, resume, curves), the
 * reasoning-boundary comparison of eval runs, perplexity under a scoring model, rollout statistics.
 */
export { type BootstrapOptions, bootstrapMeans, type Interval } from "./bootstrap.ts";
export {
  analyzeBoundary,
  type BoundaryAnalysis,
  type BoundaryOptions,
  type BoundaryRun,
  type BoundaryRunInput,
  type CurveComparison,
  compareCurves,
  compareSolvable,
  type PairComparison,
  type SolvableSets,
} from "./boundary.ts";
export {
  type CurveOptions,
  curveHatValue,
  curveMetrics,
  curveValue,
  formatCurveTable,
  type PassAtKCurves,
  passAtKCurves,
} from "./curves.ts";
export { isCheckpointDirectory, loadEmbeddedScorer, scorerForPolicySpec } from "./embedded-scorer.ts";
export { type EvalFiles, evalJson, writeEvalFiles } from "./eval-files.ts";
export {
  type EvalRunData,
  firstCorrectTrajectories,
  loadEvalRun,
  readCorrectTrajectories,
  readEvalRunConfig,
} from "./eval-run-data.ts";
export {
  crossoverK,
  kGrid,
  meanPassAtK,
  meanPassHatK,
  type PassAtKCurve,
  type PassAtKPoint,
  passAtK,
  passAtKCurve,
  passHatK,
  samplingEfficiencyGap,
  type TaskSamples,
} from "./passk.ts";
export { type NamedCurve, passAtKChart } from "./passk-chart.ts";
export {
  type PerplexityOptions,
  type PerplexityResult,
  perplexityUnder,
  policyNll,
  type ScoringSequence,
  scoringSequence,
  type TokenScorer,
} from "./perplexity.ts";
export { type RolloutStats, rolloutStats, rolloutStatsByFamily } from "./rollout-stats.ts";
export { type BoundaryResult, boundaryJson, type RunBoundaryOptions, runBoundary } from "./run-boundary.ts";
export {
  EVAL_TASKS_STATE_KEY,
  EVAL_TOKENIZER_STATE_KEY,
  type EvalConfig,
  type EvalProgress,
  type EvalResult,
  type EvalTaskSource,
  type EvaluateOptions,
  evalEpisodeSeed,
  evaluate,
  type GivenTaskSource,
  resolveEvalTasks,
  type WorldTaskSource,
} from "./run-eval.ts";
export { countByTask, countTotals, groupCounts, type TaskCount, type TaskTotals } from "./task-counts.ts";
export { type TokenizerInfo, tokenizerFingerprint } from "./tokenizer-fingerprint.ts";
