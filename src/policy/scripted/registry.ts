/**
 * Scripted policies by name. `mixed` reproduces the pretraining mix of behaviours: careful tool use
 * with varied strategies, guessing, vague queries, slips and giving up (MIXED_COMPONENTS).
 */
import type { Policy } from "../../types/policy.ts";
import { BEHAVIOUR_PRESETS, type BehaviourOptions, createBehaviourPolicy } from "./behaviour.ts";
import { createExpertPolicy } from "./expert.ts";
import { createMixturePolicy } from "./mixture.ts";

export const SCRIPTED_POLICY_NAMES = [
  "expert",
  "expert-adapt",
  "guesser",
  "vague",
  "sloppy",
  "quitter",
  "mixed",
] as const;
export type ScriptedPolicyName = (typeof SCRIPTED_POLICY_NAMES)[number];

/** Components of `mixed`: weight and behaviour of each (weights sum to 1). */
export const MIXED_COMPONENTS: readonly { weight: number; options: BehaviourOptions }[] = [
  // Correct tool use, with operands looked up in varied order and the odd redundant search.
  { weight: 0.35, options: { id: "careful", reorder: 0.5, recheck: 0.1 } },
  { weight: 0.2, options: BEHAVIOUR_PRESETS.vague },
  { weight: 0.15, options: BEHAVIOUR_PRESETS.guesser },
  { weight: 0.15, options: BEHAVIOUR_PRESETS.sloppy },
  { weight: 0.15, options: BEHAVIOUR_PRESETS.quitter },
];

export function scriptedPolicy(name: string): Policy {
  switch (name) {
    case "expert":
      return createExpertPolicy();
    case "expert-adapt":
      return createExpertPolicy({ id: "expert-adapt", recovery: "adapt" });
    case "guesser":
    case "vague":
    case "sloppy":
    case "quitter":
      return createBehaviourPolicy(BEHAVIOUR_PRESETS[name]);
    case "mixed":
      return createMixturePolicy(
        "mixed",
        MIXED_COMPONENTS.map(({ weight, options }) => ({ weight, policy: createBehaviourPolicy(options) })),
      );
    default:
      throw new Error(`unknown scripted policy "${name}" (valid: ${SCRIPTED_POLICY_NAMES.join(", ")})`);
  }
}
