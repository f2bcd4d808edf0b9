/** Tools: the call wrapper, search and calc, the noise model, specs and the world's tool set. */
export {
  type CalcArguments,
  type CalcOptions,
  calcArguments,
  createCalcTool,
  evaluateExpression,
  formatNumber,
} from "./calc.ts";
export { callTool, describeArgumentError } from "./call-tool.ts";
export { type CodeArguments, type CodeToolOptions, codeArguments, createCodeTool } from "./code.ts";
export { argumentMessage, FORMAT_ERRORS, TOOL_MESSAGE_WORDS, TOOL_MESSAGES } from "./messages.ts";
export {
  type Corrupt,
  type CorruptibleTool,
  NOISE_MODES,
  type NoiseConfig,
  type NoiseMode,
  totalNoise,
  uniformNoise,
  validateNoise,
  withNoise,
} from "./noise.ts";
export {
  createPythonTool,
  type PythonArguments,
  type PythonToolOptions,
  pythonArguments,
} from "./python.ts";
export { type PythonSandboxOptions, PythonSandboxPool, sharedPythonPool } from "./python-sandbox.ts";
export {
  createSearchTool,
  type SearchArguments,
  type SearchOptions,
  searchArguments,
  type WorldDocument,
} from "./search.ts";
export { toolSpec } from "./spec.ts";
export { type WorldToolsOptions, worldTools } from "./world-tools.ts";
