/**
 * A checkpoint folder's byte-level BPE tokenizer (`tokenizer.json`) and chat template as GGUF keys,
 * as llama.cpp's convert_hf_to_gguf.py writes them (`_set_vocab_gpt2` and gguf-py's SpecialVocab):
 *
 * - `tokenizer.ggml.model` "gpt2"; `tokenizer.ggml.pre` names llama.cpp's pre-tokenizer regex:
 *   "qwen2" (single digits) or "llama-bpe" (digits in threes), read here from tokenizer.json's
 *   Split regex (convert recognises it by hashing a sample's ids; the same two regexes give the
 *   same names); any other pre-tokenizer is refused by name;
 * - `tokens` for every id of the model's embedding (ids past the tokenizer's are `[PAD<id>]`,
 *   type UNUSED), `token_type`: NORMAL for the vocabulary, CONTROL for special added tokens (and
 *   ones that look special: `<|…|>`), USER_DEFINED for the other added tokens (`<tool_call>`,
 *   `<think>`: llama.cpp, as Hugging Face's tokenizers, matches them in any text);
 * - `merges` as "left right" strings (a space inside a part written as U+0120, as convert does);
 * - the special ids: `bos`, `eos`, `unknown`, `seperator` (llama.cpp's spelling), `padding`,
 *   `mask`, each from tokenizer_config.json's `<kind>_token` when it is an added token, else
 *   config.json's `<kind>_token_id`; `add_bos_token`/`add_eos_token`/`add_sep_token` from a
 *   TemplateProcessing post-processor that writes them (Llama 3's `<|begin_of_text|>`) and from
 *   tokenizer_config.json's `add_<kind>_token`, which wins;
 * - `tokenizer.chat_template`: chat_template.jinja, else tokenizer_config.json's `chat_template`
 *   (transformers 5's order, which `--policy hf:` renders; convert prefers the config's field; a
 *   folder has one or the other). A list of named templates writes its `default` there and the
 *   others as `tokenizer.chat_template.<name>`, listed in `tokenizer.chat_templates`.
 *
 * One step of convert's is left out: it re-encodes an added token marked `normalized: false`
 * through transformers and writes the decoded text, which for the tokenizers read here is the
 * token itself.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { HfModelConfig } from "./config.ts";
import { type GgufValue, gguf } from "./gguf-writer.ts";

/** gguf-py's TokenType. */
export const TOKEN_TYPE = { normal: 1, unknown: 2, control: 3, userDefined: 4, unused: 5, byte: 6 } as const;

/** The Split regexes of the pre-tokenizers recognised, with llama.cpp's name for each. */
export const BPE_PRE_TOKENIZERS: Record<string, string> = {
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+":
    "qwen2",
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+":
    "llama-bpe",
};

type Json = Record<string, unknown>;

function readJson(path: string): Json | undefined {
  if (!existsSync(path)) return undefined;
  try {
    return JSON.parse(readFileSync(path, "utf8")) as Json;
  } catch (error) {
    throw new Error(`export gguf: ${path}: ${(error as Error).message}`);
  }
}

/**
 * llama.cpp's name of tokenizer.json's pre-tokenizer: a Split on one of the recognised regexes,
 * then ByteLevel without its own regex. Throws naming what it found.
 */
export function bpePreTokenizer(tokenizerJson: Json, source: string): string {
  const pre = tokenizerJson.pre_tokenizer as Json | null;
  const steps = (pre?.type === "Sequence" ? (pre.pretokenizers as Json[]) : pre ? [pre] : []) ?? [];
  const split = steps[0];
  const regex = (split?.pattern as Json | undefined)?.Regex;
  const byteLevel = steps[1];
  const name = typeof regex === "string" ? BPE_PRE_TOKENIZERS[regex] : undefined;
  if (
    steps.length !== 2 ||
    split?.type !== "Split" ||
    split.behavior !== "Isolated" ||
    split.invert === true ||
    byteLevel?.type !== "ByteLevel" ||
    byteLevel.use_regex === true ||
    name === undefined
  )
    throw new Error(
      `export gguf: ${source}: pre_tokenizer ${JSON.stringify(pre).slice(0, 200)} is not one llama.cpp's tokenizer is known here to reproduce; recognised: a Split on the regex of ${[...new Set(Object.values(BPE_PRE_TOKENIZERS))].join(" or ")}, then ByteLevel`,
    );
  return name;
}

/** A special token's text: a string, or an AddedToken object's `content`. */
const tokenText = (value: unknown): string | undefined =>
  typeof value === "string"
    ? value
    : typeof (value as Json | null)?.content === "string"
      ? ((value as Json).content as string)
      : undefined;

/** convert's `does_token_look_special`. */
function looksSpecial(token: string): boolean {
  return (
    ["<pad>", "<mask>", "<2mass>", "[@BOS@]"].includes(token) ||
    (token.startsWith("<|") && token.endsWith("|>")) ||
    (token.startsWith("<｜") && token.endsWith("｜>")) ||
    (token.startsWith("<unused") && token.endsWith(">"))
  );
}

/** The special-token kinds SpecialVocab reads, with llama.cpp's key of each id. */
const SPECIAL_KINDS = {
  bos: "bos_token_id",
  eos: "eos_token_id",
  unk: "unknown_token_id",
  sep: "seperator_token_id",
  pad: "padding_token_id",
  cls: undefined,
  mask: "mask_token_id",
} as const;
type SpecialKind = keyof typeof SPECIAL_KINDS;

/**
 * The add-a-token flags a TemplateProcessing post-processor implies, as SpecialVocab reads it: the
 * single template's leading special token adds bos (when it is the bos token), its trailing one
 * eos; a separator between A and B in the pair template adds sep.
 */
function templateFlags(
  tokenizerJson: Json,
  bos: string | undefined,
  eos: string | undefined,
  sep: string | undefined,
): Json {
  const flags: Json = {};
  const post = tokenizerJson.post_processor as Json | null;
  const processors = (post?.type === "Sequence" ? (post.processors as Json[]) : post ? [post] : []) ?? [];
  const special = (item: Json | undefined) =>
    (item?.SpecialToken as Json | undefined)?.id as string | undefined;
  const sequence = (item: Json | undefined) => (item?.Sequence as Json | undefined)?.id as string | undefined;
  for (const processor of processors) {
    if (processor.type !== "TemplateProcessing") continue;
    const single = (processor.single as Json[] | undefined) ?? [];
    let pair = (processor.pair as Json[] | undefined) ?? [];
    if (single.length < 2) continue;
    const first = special(single[0]);
    const last = special(single.at(-1));
    if (first) flags.bos = first === bos;
    if (last) flags.eos = last === eos;
    if (first && special(pair[0]) === first) pair = pair.slice(1);
    if (last && special(pair.at(-1)) === last) pair = pair.slice(0, -1);
    if (sequence(pair[0]) !== "A" || sequence(pair.at(-1)) !== "B" || pair.length < 3) continue;
    const middle = pair.slice(1, -1);
    const separators = [sep, eos];
    flags.sep =
      (separators.includes(special(middle[0])) && !last) ||
      (middle.length === 2 && separators.includes(special(middle[1])));
  }
  return flags;
}

/** The chat template(s) of a folder, as the `tokenizer.chat_template*` keys. */
export function chatTemplateMetadata(folder: string, tokenizerConfig: Json): Map<string, GgufValue> {
  const kv = new Map<string, GgufValue>();
  const jinja = join(folder, "chat_template.jinja");
  const template = existsSync(jinja) ? readFileSync(jinja, "utf8") : tokenizerConfig.chat_template;
  if (typeof template === "string") {
    kv.set("tokenizer.chat_template", gguf.str(template));
  } else if (Array.isArray(template)) {
    const names: string[] = [];
    for (const choice of template as Json[]) {
      const name = String(choice.name ?? "").replace(/[^A-Za-z0-9]/g, "_");
      if (!name || typeof choice.template !== "string") continue;
      if (name === "default") kv.set("tokenizer.chat_template", gguf.str(choice.template));
      else {
        names.push(name);
        kv.set(`tokenizer.chat_template.${name}`, gguf.str(choice.template));
      }
    }
    if (names.length > 0) kv.set("tokenizer.chat_templates", gguf.strs(names));
  }
  return kv;
}

export interface GgufTokenizer {
  metadata: Map<string, GgufValue>;
  /** Tokens in tokenizer.json (added ones included); the rest of the embedding's ids are padding. */
  tokenizerSize: number;
  pre: string;
}

/** The `tokenizer.*` keys of a checkpoint folder with a BPE tokenizer.json, for `config`'s embedding. */
export function bpeTokenizerMetadata(folder: string, config: HfModelConfig): GgufTokenizer {
  const path = join(folder, "tokenizer.json");
  const tokenizerJson = readJson(path);
  if (!tokenizerJson) throw new Error(`export gguf: ${folder} has no tokenizer.json`);
  const model = tokenizerJson.model as Json;
  if (model?.type !== "BPE")
    throw new Error(`export gguf: ${path}: model type ${JSON.stringify(model?.type)}; only BPE is written`);
  const pre = bpePreTokenizer(tokenizerJson, path);
  // llama.cpp's BPE tokenizer applies no normalizer: NFC (Qwen's) changes only text not already
  // composed, and convert writes nothing for it; another normalizer would change the ids.
  const normalizer = (tokenizerJson.normalizer as Json | null)?.type;
  if (normalizer !== undefined && normalizer !== "NFC")
    throw new Error(
      `export gguf: ${path}: normalizer ${normalizer} is not applied by llama.cpp's BPE tokenizer`,
    );
  const tokenizerConfig = readJson(join(folder, "tokenizer_config.json")) ?? {};
  const modelConfig = readJson(join(folder, "config.json")) ?? {};

  const byId = new Map<number, string>();
  for (const [token, id] of Object.entries(model.vocab as Record<string, number>)) byId.set(id, token);
  const added = new Map<number, Json>();
  for (const token of (tokenizerJson.added_tokens as Json[] | undefined) ?? []) {
    added.set(token.id as number, token);
    byId.set(token.id as number, token.content as string);
  }
  let largest = -1;
  for (const id of byId.keys()) largest = Math.max(largest, id);
  if (largest >= config.vocabSize)
    throw new Error(
      `export gguf: ${path} has token id ${largest}; the model's embedding has ${config.vocabSize} rows`,
    );
  const tokens: string[] = [];
  const types: number[] = [];
  for (let id = 0; id < config.vocabSize; id++) {
    const token = byId.get(id);
    const addedToken = added.get(id);
    if (token === undefined) {
      tokens.push(`[PAD${id}]`);
      types.push(TOKEN_TYPE.unused);
    } else if (addedToken) {
      const control = addedToken.special === true || looksSpecial(token);
      tokens.push(control ? token : token.replaceAll("\u2581", " "));
      types.push(control ? TOKEN_TYPE.control : TOKEN_TYPE.userDefined);
    } else {
      tokens.push(token);
      types.push(TOKEN_TYPE.normal);
    }
  }
  const merges = ((model.merges as (string | [string, string])[]) ?? []).map((merge) =>
    typeof merge === "string" ? merge : merge.map((part) => part.replaceAll(" ", "\u0120")).join(" "),
  );

  const kv = new Map<string, GgufValue>();
  kv.set("tokenizer.ggml.model", gguf.str("gpt2"));
  kv.set("tokenizer.ggml.pre", gguf.str(pre));
  kv.set("tokenizer.ggml.tokens", gguf.strs(tokens));
  kv.set("tokenizer.ggml.token_type", gguf.i32s(types));
  // llama.cpp refuses a BPE vocabulary without merges (convert writes the file all the same).
  if (merges.length === 0) throw new Error(`export gguf: ${path} has no merges; llama.cpp's BPE needs them`);
  kv.set("tokenizer.ggml.merges", gguf.strs(merges));
  // Special ids: the config's named token when it is an added token, else config.json's id.
  const addedIdOf = new Map(
    [...added.values()].map((token) => [token.content as string, token.id as number]),
  );
  const ids = new Map<SpecialKind, number>();
  for (const kind of Object.keys(SPECIAL_KINDS) as SpecialKind[]) {
    const text = tokenText(tokenizerConfig[`${kind}_token`]);
    const fromConfig = text === undefined ? undefined : addedIdOf.get(text);
    const fromModel = modelConfig[`${kind}_token_id`];
    const id = fromConfig ?? (Number.isInteger(fromModel) ? (fromModel as number) : undefined);
    if (id !== undefined) ids.set(kind, id);
  }
  for (const [kind, id] of ids) {
    const key = SPECIAL_KINDS[kind];
    if (key) kv.set(`tokenizer.ggml.${key}`, gguf.u32(id));
  }
  const flags = templateFlags(
    tokenizerJson,
    tokenText(tokenizerConfig.bos_token),
    tokenText(tokenizerConfig.eos_token),
    tokenText(tokenizerConfig.sep_token),
  );
  for (const kind of ["bos", "eos", "sep"] as const) {
    const stated = tokenizerConfig[`add_${kind}_token`];
    const flag = typeof stated === "boolean" ? stated : flags[kind];
    if (typeof flag === "boolean") kv.set(`tokenizer.ggml.add_${kind}_token`, gguf.bool(flag));
  }
  if (config.architecture === "LlamaForCausalLM" && typeof tokenizerConfig.add_prefix_space === "boolean")
    kv.set("tokenizer.ggml.add_space_prefix", gguf.bool(tokenizerConfig.add_prefix_space));
  for (const [key, value] of chatTemplateMetadata(folder, tokenizerConfig)) kv.set(key, value);
  return { metadata: kv, tokenizerSize: byId.size, pre };
}
