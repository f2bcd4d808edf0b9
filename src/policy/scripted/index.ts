/** Scripted text-protocol policies: the expert, flawed behaviours, mixtures and the name registry. */
export {
  type Agent,
  type AgentAction,
  type AgentContext,
  type AgentFactory,
  createScriptedPolicy,
  nextAction,
  renderAction,
} from "./agent.ts";
export {
  BEHAVIOUR_PRESETS,
  type BehaviourOptions,
  createBehaviourPolicy,
  MENTAL_MATH_ACCURACY,
} from "./behaviour.ts";
export { createExpertPolicy, DEFAULT_MAX_RETRIES, type ExpertOptions, expertAgent } from "./expert.ts";
export { createMixturePolicy, type MixtureComponent } from "./mixture.ts";
export {
  MIXED_COMPONENTS,
  SCRIPTED_POLICY_NAMES,
  type ScriptedPolicyName,
  scriptedPolicy,
} from "./registry.ts";
export { findDocument, guessNumber, observationHasNumber, slipDigit } from "./skills.ts";
