/**
 * The credit mechanism measured directly, without a training run (src/rl/credit-fidelity.ts): at
 * each training seed a batch of groups sampled from the strong base, every estimator's advantages
 * on that same batch.
 *
 *   credit-fidelity             in each failed chain episode, the first turn that departs from every
 *                               gold plan: the blame each estimator puts on it (the mean advantage
 *                               of the episode's other turns minus its own, in units of the
 *                               estimator's RMS advantage). GRPO spreads one value over every turn,
 *                               so its blame is 0 by construction and any blame is the mechanism.
 *   variance-grows-with-length  the per-episode policy-gradient weight Σ_p A_p² with raw advantages
 *                               (see `gradientWeights` for why this and not the per-token
 *                               advantages' variance), long chains (4+ hops) against short (1-2):
 *                               the relative growth (L − S)/(L + S).
 *
 * Both are decided by the two-level bootstrap over the seeds' batches, then the groups (tasks)
 * within each.
 */
import type { Section } from "../../report/html.ts";
import { barChart } from "../../report/plots.ts";
import type { FidelityGroup, FidelitySample } from "../../rl/credit-fidelity-sample.ts";
import {
  formatDifference,
  positiveStatus,
  type SeedEstimate,
  seedBootstrap,
  type Verdict,
} from "../analysis.ts";
import { FIDELITY_STAGE } from "../pipeline.ts";
import { verdictIntervalChart } from "../verdict-chart.ts";
import {
  type ExperimentReport,
  finishVerdicts,
  fixed,
  measuredCause,
  type ReportContext,
  seedList,
  verdictBlock,
} from "./context.ts";

/** Chain lengths compared by the variance claim: short ≤ 2 hops, long ≥ 4. */
const SHORT_HOPS = 2;
const LONG_HOPS = 4;

/** Mean blame over every failed episode of the groups (a group weighs by its failed episodes). */
function meanBlame(estimator: string) {
  return (groups: readonly FidelityGroup[]) => {
    let sum = 0;
    let count = 0;
    for (const group of groups) {
      for (const blame of group.blame[estimator] ?? []) {
        sum += blame;
        count++;
      }
    }
    return count === 0 ? 0 : sum / count;
  };
}

/** (L − S)/(L + S) of the mean gradient weight of long and short chains' groups (0 when both are 0). */
function relativeGrowth(estimator: string) {
  return (groups: readonly FidelityGroup[]) => {
    const mean = (keep: (group: FidelityGroup) => boolean) => {
      const chosen = groups.filter(keep);
      return chosen.length === 0
        ? 0
        : chosen.reduce((sum, group) => sum + group.weight[estimator], 0) / chosen.length;
    };
    const long = mean((group) => group.hops >= LONG_HOPS);
    const short = mean((group) => group.hops > 0 && group.hops <= SHORT_HOPS);
    return long + short === 0 ? 0 : (long - short) / (long + short);
  };
}

export async function fidelityExperiment(context: ReportContext): Promise<ExperimentReport> {
  const { config, seed, replicas, seeds } = context;
  const samples = replicas<FidelitySample>(FIDELITY_STAGE);
  const estimators = config.credit.estimators;
  const turnLevel = estimators.filter((estimator) => estimator !== "grpo");
  const chainGroups = samples.map((sample) =>
    sample.groups.filter((group) => group.family === config.credit.family && group.failed > 0),
  );
  const blame: Record<string, SeedEstimate | null> = {};
  for (const estimator of estimators)
    blame[estimator] = seedBootstrap(chainGroups, { statistic: meanBlame(estimator), seed });
  const failed = chainGroups.map((groups) => groups.reduce((sum, group) => sum + group.failed, 0));
  const lowestShare = (estimator: string) => {
    const all = chainGroups.flat();
    const total = all.reduce((sum, group) => sum + group.failed, 0);
    return total === 0 ? null : all.reduce((sum, group) => sum + (group.lowest[estimator] ?? 0), 0) / total;
  };
  const zeroShare = (estimator: string) => {
    const values = chainGroups.flat().flatMap((group) => group.blame[estimator] ?? []);
    return values.length === 0
      ? null
      : values.filter((value) => Math.abs(value) < 1e-9).length / values.length;
  };
  const grpoMax = Math.max(
    0,
    ...chainGroups.flat().flatMap((group) => (group.blame.grpo ?? []).map(Math.abs)),
  );
  // the deciding estimator: the turn-level one whose interval reaches lowest
  const weakest = [...turnLevel].sort(
    (a, b) => (blame[a]?.interval.lower ?? -Infinity) - (blame[b]?.interval.lower ?? -Infinity),
  )[0];
  const statuses = turnLevel.map((estimator) => positiveStatus(blame[estimator], context.margin));
  const fidelityStatus =
    turnLevel.length === 0 || statuses.includes("not measured")
      ? "not measured"
      : statuses.includes("not reproduced")
        ? "not reproduced"
        : statuses.every((status) => status === "reproduced")
          ? "reproduced"
          : "inconclusive";
  const against = turnLevel.find(
    (estimator) => positiveStatus(blame[estimator], context.margin) === "not reproduced",
  );
  const zeroAgainst = against ? zeroShare(against) : null;
  const fidelityCause =
    against && zeroAgainst !== null && zeroAgainst >= 0.5
      ? `no learning signal: ${against} gave ${(100 * zeroAgainst).toFixed(0)}% of the faulty turns exactly their episode's advantage (groups whose failed episodes all earned the same turn rewards)`
      : measuredCause(blame[against ?? weakest] ?? null, context.margin);

  const weights: Record<string, SeedEstimate | null> = {};
  const samplesGroups = samples.map((sample) => sample.groups);
  for (const estimator of estimators)
    weights[estimator] = seedBootstrap(samplesGroups, { statistic: relativeGrowth(estimator), seed });
  const headline = estimators.includes("grpo") ? "grpo" : estimators[0];
  const variance = weights[headline] ?? null;
  const longGroups = samplesGroups.flat().filter((group) => group.hops >= LONG_HOPS);
  const silentLong =
    longGroups.length === 0
      ? null
      : longGroups.filter((group) => group.weight[headline] === 0).length / longGroups.length;
  const varianceStatus = positiveStatus(variance, context.margin);
  const v: Verdict[] = [
    {
      id: "credit-fidelity",
      experiment: "fidelity",
      claim: `turn-level estimators (${turnLevel.join(", ")}) put the blame on the faulty turn of a failed ${config.credit.family} episode`,
      status: fidelityStatus,
      difference: weakest ? blame[weakest] : null,
      seeds: weakest ? (blame[weakest]?.seeds ?? []) : [],
      evidence: `blame on the first turn off every gold plan (other turns' mean advantage − its own, in RMS advantages; margin ${context.margin}), over ${failed.join(" / ")} failed ${config.credit.family} episodes at seeds ${seeds.join(" / ")}: ${estimators.map((estimator) => `${formatDifference(blame[estimator] ?? null, estimator)}, faulty turn strictly lowest in ${fixed(lowestShare(estimator), 2)}`).join("; ")}; GRPO's largest |blame| ${grpoMax.toExponential(1)} (0 by construction); deciding estimator ${weakest ?? "none"}`,
      cause: fidelityCause,
    },
    {
      id: "variance-grows-with-length",
      experiment: "fidelity",
      claim: `the policy-gradient estimate's variance grows with the chain length (${headline}: ${LONG_HOPS}+ hops vs 1-${SHORT_HOPS})`,
      status: varianceStatus,
      difference: variance,
      seeds: variance?.seeds ?? [],
      evidence: `relative growth (L − S)/(L + S) of the per-episode gradient weight Σ A² (raw advantages: no std division, no whitening), ${LONG_HOPS}+ hops vs 1-${SHORT_HOPS}; margin ${context.margin} means L ≥ ${fixed((1 + context.margin) / (1 - context.margin), 2)}·S: ${estimators.map((estimator) => formatDifference(weights[estimator] ?? null, estimator)).join("; ")}`,
      cause:
        silentLong !== null && silentLong >= 0.5
          ? `no learning signal: ${(100 * silentLong).toFixed(0)}% of the ${LONG_HOPS}+ hop groups had every rollout agree (weight 0 for ${headline}): long chains' gradients vanish rather than grow`
          : measuredCause(variance, context.margin),
    },
  ];
  finishVerdicts(v, context.margin, context.armGate);

  const byHops = [...new Set(samplesGroups.flat().map((group) => group.hops))].sort((a, b) => a - b);
  const weightAt = (estimator: string, hops: number) => {
    const groups = samplesGroups.flat().filter((group) => group.hops === hops);
    return groups.reduce((sum, group) => sum + group.weight[estimator], 0) / Math.max(1, groups.length);
  };
  const tokensAt = (hops: number) => {
    const groups = samplesGroups.flat().filter((group) => group.hops === hops);
    return groups.reduce((sum, group) => sum + group.tokens, 0) / Math.max(1, groups.length);
  };
  const blameChart = await verdictIntervalChart(
    estimators.map((estimator) => ({
      id: estimator,
      experiment: "fidelity",
      claim: "",
      evidence: "",
      status: positiveStatus(blame[estimator], context.margin),
      difference: blame[estimator],
      seeds: blame[estimator]?.seeds ?? [],
    })),
    context.margin,
    "blame on the faulty turn, per estimator (RMS advantages): interval and one dot per seed",
  );
  const weightChart = await barChart({
    title: "policy-gradient weight Σ A² per episode by chain length (raw advantages)",
    bars: byHops.flatMap((hops) =>
      estimators.map((estimator) => ({
        category: `${hops} hops`,
        value: weightAt(estimator, hops),
        group: estimator,
      })),
    ),
    xLabel: "chain length",
    yLabel: "mean Σ A² per episode",
  });
  const json = {
    estimators,
    episodes: samples.map((sample) => sample.episodes),
    failedChainEpisodes: failed,
    blame,
    lowestShare: Object.fromEntries(estimators.map((estimator) => [estimator, lowestShare(estimator)])),
    growth: weights,
    weightByHops: byHops.map((hops) => ({
      hops,
      tokens: tokensAt(hops),
      ...Object.fromEntries(estimators.map((estimator) => [estimator, weightAt(estimator, hops)])),
    })),
  };
  const section: Section = {
    title: "3b. The credit mechanism measured directly: blame on the faulty turn, variance by chain length",
    blocks: [
      {
        type: "paragraph",
        text: `No training: at each training seed (${seeds.join(", ")}) ${config.fidelity.tasksPerFamily} train tasks of each of ${config.fidelity.families.join(", ")} × ${config.fidelity.groupSize} rollouts from the strong base (temperature ${config.credit.temperature}, no tool noise, so every departure from a gold plan is the policy's), rewarded with ${config.credit.reward}, and every estimator's advantages on the same batch: MT-PPO (gae) with the zero value head the RL trainer gives a base without one (its first batch exactly). In each failed ${config.credit.family} episode the faulty turn is the first that takes no step of any gold plan (a search that does not return a needed document, a repeat, a wrong calc or answer).`,
      },
      ...(blameChart
        ? [
            {
              type: "svg" as const,
              svg: blameChart,
              caption: `Blame on the faulty turn per estimator; GRPO's is 0 by construction. One sample per training seed (${seeds.join(", ")}), ${config.preset} preset.`,
            },
          ]
        : []),
      {
        type: "table",
        caption: "Blame on the faulty turn, per estimator",
        columns: [
          "estimator",
          "blame [95% CI over seeds and tasks]",
          "per seed",
          "faulty turn strictly lowest",
        ],
        rows: estimators.map((estimator) => [
          estimator,
          formatDifference(blame[estimator] ?? null, "").trim(),
          seedList(blame[estimator]?.seeds ?? []),
          lowestShare(estimator),
        ]),
      },
      {
        type: "svg",
        svg: weightChart,
        caption: `Mean per-episode Σ A² (raw advantages), the samples of seeds ${seeds.join(", ")} pooled (${config.preset} preset). It tracks the second moment of an episode's policy-gradient term when the per-token score terms are of similar size; the per-token advantages' own variance is ≈ 1 by construction after std normalisation or whitening, so it says nothing about length.`,
      },
      {
        type: "table",
        caption: "Gradient weight by chain length",
        columns: ["hops", "policy tokens per episode", ...estimators],
        rows: json.weightByHops.map((row) => [
          row.hops,
          row.tokens,
          ...estimators.map((estimator) => (row as Record<string, number>)[estimator]),
        ]),
      },
      verdictBlock(v),
    ],
  };
  return { key: "fidelity", json, verdicts: v, sections: [section] };
}
