/** The embedded world: generator, documents, tasks, splits, answer checking and vocabulary. */
export { checkAnswer, normalizeAnswer } from "./answer.ts";
export { findTemplate, TEMPLATES } from "./catalogue.ts";
export { type NameOf, type ParsedDocument, parseDocuments, renderDocument } from "./documents.ts";
export { entityId, generateWorld, LATEST_YEAR, resolveWorldConfig } from "./generate.ts";
export { type NamePools, namePools, POOL_SIZES } from "./names.ts";
export { areNearDuplicates, nearDuplicateOf } from "./near-duplicates.ts";
export { splitOfWorld, TEST_WORLD_MODULUS, worldSeeds } from "./split.ts";
export {
  buildTask,
  generateTasks,
  TASK_TEMPLATES,
  type TaskOptions,
  taskFromId,
  taskId,
  taskPlan,
  taskWorldConfig,
} from "./tasks.ts";
export { TEMPLATE_WORDS } from "./template-words.ts";
export { type PlanChain, readAttribute, type TaskPlan, type TaskTemplate } from "./templates.ts";
export {
  ATTRIBUTES,
  type Attribute,
  type City,
  type Company,
  type Country,
  DEFAULT_WORLD_CONFIG,
  ENTITY_TYPES,
  type Entity,
  type EntityType,
  isLinkAttribute,
  type LinkAttribute,
  type NumberAttribute,
  type Person,
  type World,
  type WorldConfig,
  type WorldDocument,
  type WorldSplit,
} from "./types.ts";
export { worldVocabulary } from "./vocabulary.ts";
export { entitiesOfType, entityById, firstName, indexWorld, type WorldIndex } from "./world-index.ts";
