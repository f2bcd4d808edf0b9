/**
 * The task-source and tool flags `eval` and `doctor` share: `--tasks` is a count of world tasks
 * (with `--split`, `--family`, `--task-seed`) or a task file (with `--verifier` and the tools
 * `--code`, `--python`, `--python-wheels`, `--mcp-command`/`--mcp-url`/`--mcp-token`). Flags of the
 * other kind are refused by name.
 */
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import type { Command } from "commander";
import type { EvalTaskSource } from "../../eval/eval-tasks.ts";
import type { EvalMcpSetup, EvalToolSetup } from "../../eval/eval-tools.ts";
import { readTaskFile } from "../../tasks/index.ts";
import { TASK_FAMILIES, type TaskFamily } from "../../types/task.ts";
import { VERIFIER_NAMES, type VerifierName } from "../../verify/index.ts";
import { parseChoice, parseNumber } from "./options.ts";

export interface TaskSourceFlags {
  tasks: string;
  split: string;
  family?: string;
  taskSeed: string;
  verifier?: string;
  code?: boolean;
  python?: boolean;
  pythonWheels?: string;
  mcpCommand?: string;
  mcpUrl?: string;
  mcpToken?: string;
}

/** Options that only make sense with world tasks, and those that need a task file. */
const WORLD_ONLY = ["split", "family", "taskSeed"] as const;
const FILE_ONLY = ["verifier", "code", "python", "pythonWheels", "mcpCommand", "mcpUrl", "mcpToken"] as const;

/** Declares the task-file flags (`--verifier` and the tools) on `command`, the same for every command that reads task files. */
export function withTaskFileOptions(command: Command): Command {
  return command
    .option("--verifier <name>", `answer check of a task file (${VERIFIER_NAMES.join(", ")})`)
    .option("--code", "task files: offer the sandboxed JavaScript code tool")
    .option("--python", "task files: offer the sandboxed Python tool (Pyodide in a locked-down process)")
    .option(
      "--python-wheels <dir>",
      "--python: a folder of pure-Python wheels installed offline (e.g. sympy)",
    )
    .option(
      "--mcp-command <cmd>",
      'task files: offer the tools of an MCP server started by this command (stdio), e.g. "npx agentrl mcp serve"',
    )
    .option("--mcp-url <url>", "task files: offer the tools of an MCP server at this Streamable HTTP URL")
    .option("--mcp-token <token>", "bearer token for --mcp-url, never stored (default: $AGENTRL_MCP_TOKEN)");
}

/** `--max-turn-tokens` from `maxTurnTokens`. */
export function flagOf(name: string): string {
  return `--${name.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`)}`;
}

/** `--tasks` is a count of world tasks when it is a whole number, else the path of a task file. */
export function isTaskCount(raw: string): boolean {
  return /^\s*\d+\s*$/.test(raw);
}

/**
 * Splits a command line into words the way a POSIX shell would for plain words, '…' and "…"
 * quoting and backslash escapes, without running a shell (no variables, globs or pipes).
 */
export function splitCommandLine(line: string): string[] {
  const words: string[] = [];
  let word = "";
  let inWord = false;
  let quote: "'" | '"' | null = null;
  for (let i = 0; i < line.length; i++) {
    const char = line[i];
    if (quote === "'") {
      if (char === "'") quote = null;
      else word += char;
    } else if (quote === '"') {
      if (char === '"') quote = null;
      else if (char === "\\" && i + 1 < line.length && '"\\$`'.includes(line[i + 1])) word += line[++i];
      else word += char;
    } else if (char === "'" || char === '"') {
      quote = char;
      inWord = true;
    } else if (char === "\\" && i + 1 < line.length) {
      word += line[++i];
      inWord = true;
    } else if (/\s/.test(char)) {
      if (inWord) words.push(word);
      word = "";
      inWord = false;
    } else {
      word += char;
      inWord = true;
    }
  }
  if (quote) throw new Error(`--mcp-command: unclosed ${quote} quote in ${JSON.stringify(line)}`);
  if (inWord) words.push(word);
  return words;
}

/** The tool setup of a task file from the flags (none by default); `token`: the MCP server's. */
export function toolSetupOf(raw: TaskSourceFlags, token: string | undefined): EvalToolSetup {
  if (raw.mcpCommand !== undefined && raw.mcpUrl !== undefined) {
    throw new Error("give --mcp-command or --mcp-url, not both");
  }
  let mcp: EvalMcpSetup | null = null;
  if (raw.mcpCommand !== undefined) {
    const [command, ...args] = splitCommandLine(raw.mcpCommand);
    if (!command)
      throw new Error('--mcp-command needs a command, e.g. --mcp-command "npx agentrl mcp serve"');
    mcp = { command, args };
  } else if (raw.mcpUrl !== undefined) {
    let url: URL;
    try {
      url = new URL(raw.mcpUrl);
    } catch {
      throw new Error(`--mcp-url must be an http(s) URL, got "${raw.mcpUrl}"`);
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      throw new Error(`--mcp-url must be an http(s) URL, got "${raw.mcpUrl}"`);
    }
    mcp = { url: raw.mcpUrl, token: token !== undefined };
  }
  if (raw.pythonWheels !== undefined && !raw.python) throw new Error("--python-wheels needs --python");
  return {
    code: Boolean(raw.code),
    ...(raw.python ? { python: true } : {}),
    ...(raw.pythonWheels !== undefined ? { pythonWheels: resolve(raw.pythonWheels) } : {}),
    mcp,
  };
}

/** The tasks the flags name, with a task file's verifier and tools; flags of the other kind refused. */
export async function taskSourceOf(
  raw: TaskSourceFlags,
  command: Command,
  mcpToken: string | undefined,
): Promise<{ tasks: EvalTaskSource; verifier?: VerifierName; toolSetup?: EvalToolSetup }> {
  if (!isTaskCount(raw.tasks)) {
    const worldOnly = WORLD_ONLY.filter((name) => command.getOptionValueSource(name) === "cli");
    if (worldOnly.length > 0) {
      throw new Error(`${worldOnly.map(flagOf).join(", ")} only apply to world tasks, not to a task file`);
    }
    if (raw.verifier === undefined) {
      throw new Error(
        `a task file needs --verifier <name> (one of ${VERIFIER_NAMES.join(", ")}) to check answers`,
      );
    }
    const verifier = parseChoice<VerifierName>("--verifier", raw.verifier, VERIFIER_NAMES);
    if (!existsSync(raw.tasks)) {
      throw new Error(`--tasks: no such file "${raw.tasks}" (give a number of world tasks or a task file)`);
    }
    const toolSetup = toolSetupOf(raw, mcpToken);
    return {
      tasks: { type: "given", tasks: await readTaskFile(raw.tasks), name: raw.tasks },
      verifier,
      toolSetup,
    };
  }
  const fileOnly = FILE_ONLY.filter((name) => raw[name] !== undefined);
  if (fileOnly.length > 0) {
    throw new Error(
      `${fileOnly.map(flagOf).join(", ")} need a task file (--tasks <file>); world tasks use the world's tools and answer check`,
    );
  }
  const family = raw.family ? parseChoice<TaskFamily>("--family", raw.family, TASK_FAMILIES) : undefined;
  return {
    tasks: {
      type: "world",
      split: parseChoice("--split", raw.split, ["train", "test"] as const),
      count: parseNumber("--tasks", raw.tasks, { integer: true, min: 1 }),
      seed: parseNumber("--task-seed", raw.taskSeed, { integer: true, min: 0 }),
      ...(family ? { family } : {}),
    },
  };
}
