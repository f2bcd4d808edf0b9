/** The orchestration step (the full preset): shipped orchestrators vs a single agent and fixed plans. */
import { runOrchestraExperiment } from "../../orchestra/experiment.ts";
import type { StageSpec } from "../stages.ts";
import { STAGE_SECONDS } from "./costs.ts";
import type { SeedPlan } from "./plan.ts";

/** The orchestration experiment, when `orchestra.enabled`. */
export function orchestraStages(plan: SeedPlan): StageSpec[] {
  const { config } = plan;
  const stages: StageSpec[] = [];
  if (config.orchestra.enabled) {
    const orchestra = config.orchestra;
    stages.push({
      name: "orchestra",
      after: [],
      config: { orchestra, seed: config.seed },
      cost: STAGE_SECONDS.orchestra(
        orchestra.tasks * orchestra.values.length * 5 * 2 * (orchestra.orchestrators.length + 3),
      ),
      async run(context) {
        const steps = 5 * orchestra.values.length * 2;
        let done = 0;
        const result = await runOrchestraExperiment({
          orchestrators: orchestra.orchestrators,
          values: orchestra.values,
          tasks: orchestra.tasks,
          seed: config.seed,
          temperature: orchestra.temperature,
          onProgress: (message) => context.progress(Math.min(0.99, done++ / steps), message),
        });
        return result;
      },
    });
  }
  return stages;
}
