/**
 * A mixture of policies: each episode is handed to one component, drawn by weight from the episode
 * seed (`createRng(seed).fork("mixture")`), so an episode keeps its component for every turn.
 */
import { createRng } from "../../core/random.ts";
import type { Policy, PolicyContext, PolicyStep } from "../../types/policy.ts";

export interface MixtureComponent {
  weight: number;
  policy: Policy;
}

export function createMixturePolicy(id: string, components: readonly MixtureComponent[]): Policy {
  if (components.length === 0) throw new Error(`mixture ${id}: no components`);
  for (const { weight, policy } of components) {
    if (!(weight >= 0) || !Number.isFinite(weight))
      throw new Error(`mixture ${id}: weight of ${policy.id} must be >= 0, got ${weight}`);
    if (policy.protocol !== "text" || policy.tokenizer) {
      throw new Error(`mixture ${id}: component ${policy.id} must be a text policy without a tokenizer`);
    }
  }
  const total = components.reduce((sum, component) => sum + component.weight, 0);
  if (!(total > 0)) throw new Error(`mixture ${id}: weights sum to ${total}`);

  const componentOf = (context: PolicyContext): number => {
    let draw = createRng(context.seed).fork("mixture").next() * total;
    for (let i = 0; i < components.length; i++) {
      draw -= components[i].weight;
      if (draw < 0) return i;
    }
    return components.length - 1;
  };

  return {
    id,
    protocol: "text",
    async act(contexts, options) {
      const steps: PolicyStep[] = new Array(contexts.length);
      const groups = new Map<number, number[]>();
      contexts.forEach((context, i) => {
        const component = componentOf(context);
        groups.set(component, [...(groups.get(component) ?? []), i]);
      });
      await Promise.all(
        [...groups].map(async ([component, indices]) => {
          const out = await components[component].policy.act(
            indices.map((i) => contexts[i]),
            options,
          );
          indices.forEach((i, k) => {
            steps[i] = out[k];
          });
        }),
      );
      return steps;
    },
    release(episodeIds) {
      for (const { policy } of components) policy.release?.(episodeIds);
    },
  };
}
