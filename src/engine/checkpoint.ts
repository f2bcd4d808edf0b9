/**
 * Checkpoint directories: safetensors files for tensors, one JSON manifest for everything else
 * (model config, tokenizer, training state), and a `SHA256SUMS` file (`sha256sum -c` format) over
 * all of them, verified on load so a corrupted or truncated file is a clear error naming the file.
 *
 *   <dir>/checkpoint.json       { format, version, tensorFiles, ...manifest }
 *   <dir>/<name>.safetensors    one per tensor group (e.g. model, optimizer)
 *   <dir>/SHA256SUMS            "<hex>  <file>" for each file above
 *
 * Saving writes a sibling temporary directory and renames it into place, so a crash mid-save
 * leaves the previous checkpoint intact. The directory is replaced as a whole.
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { decodeSafetensors, encodeSafetensors } from "./safetensors.ts";
import type { HostTensor } from "./tree.ts";

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

export const CHECKPOINT_FORMAT = "agentrl-checkpoint";
export const CHECKPOINT_VERSION = 1;
export const MANIFEST_FILE = "checkpoint.json";
export const CHECKSUM_FILE = "SHA256SUMS";

export interface CheckpointContent {
  /** Free JSON (config, tokenizer, training state…); `format`, `version`, `tensorFiles` are reserved. */
  manifest: Record<string, JsonValue>;
  /** Tensor groups by name: `{ model: {...}, optimizer: {...} }` → model.safetensors, optimizer.safetensors. */
  tensors: Record<string, Record<string, HostTensor>>;
}

/** A checkpoint directory is missing, corrupted or of another format. */
export class CheckpointError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "CheckpointError";
  }
}

function sha256(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

const RESERVED = ["format", "version", "tensorFiles"];

/** Writes a checkpoint directory atomically (replacing `dir` if it exists). */
export async function saveCheckpoint(dir: string, content: CheckpointContent): Promise<void> {
  for (const key of RESERVED) {
    if (key in content.manifest) throw new Error(`saveCheckpoint: manifest key "${key}" is reserved`);
  }
  const files = new Map<string, Uint8Array>();
  const tensorFiles: string[] = [];
  for (const [group, tensors] of Object.entries(content.tensors)) {
    if (!/^[a-z0-9_-]+$/i.test(group))
      throw new Error(`saveCheckpoint: tensor group name "${group}" must be [a-z0-9_-]+`);
    const file = `${group}.safetensors`;
    tensorFiles.push(file);
    files.set(file, encodeSafetensors(tensors));
  }
  const manifest = {
    format: CHECKPOINT_FORMAT,
    version: CHECKPOINT_VERSION,
    tensorFiles,
    ...content.manifest,
  };
  files.set(MANIFEST_FILE, new TextEncoder().encode(`${JSON.stringify(manifest, null, 2)}\n`));
  const sums = [...files].map(([file, bytes]) => `${sha256(bytes)}  ${file}`).join("\n");
  files.set(CHECKSUM_FILE, new TextEncoder().encode(`${sums}\n`));

  await writeFolderAtomically(dir, async (temporary) => {
    for (const [file, bytes] of files) await writeFile(join(temporary, file), bytes);
  });
}

/**
 * Writes a whole folder atomically: `write` fills a temporary folder beside `dir`, which is then
 * swapped in for it, so `dir` is always complete, the old or the new (and the old is removed).
 */
export async function writeFolderAtomically(
  dir: string,
  write: (temporary: string) => Promise<void>,
): Promise<void> {
  const parent = dirname(dir);
  await mkdir(parent, { recursive: true });
  const suffix = `${process.pid}-${randomBytes(4).toString("hex")}`;
  const temporary = join(parent, `.${basename(dir)}.tmp-${suffix}`);
  await mkdir(temporary);
  try {
    await write(temporary);
    const previous = join(parent, `.${basename(dir)}.old-${suffix}`);
    const exists = await stat(dir).then(
      () => true,
      () => false,
    );
    if (exists) await rename(dir, previous);
    await rename(temporary, dir);
    if (exists) await rm(previous, { recursive: true, force: true });
  } catch (error) {
    await rm(temporary, { recursive: true, force: true });
    throw error;
  }
}

async function readRequired(dir: string, file: string): Promise<Uint8Array> {
  try {
    return new Uint8Array(await readFile(join(dir, file)));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new CheckpointError(`checkpoint ${dir}: cannot read ${file} (${code ?? (error as Error).message})`);
  }
}

/** Reads and verifies a checkpoint directory. */
export async function loadCheckpoint(dir: string): Promise<CheckpointContent> {
  const sumsText = new TextDecoder().decode(await readRequired(dir, CHECKSUM_FILE));
  const expected = new Map<string, string>();
  for (const line of sumsText.split("\n")) {
    if (line.trim() === "") continue;
    const match = /^([0-9a-f]{64}) {2}(\S+)$/.exec(line);
    if (!match) throw new CheckpointError(`checkpoint ${dir}: malformed line in ${CHECKSUM_FILE}: "${line}"`);
    expected.set(match[2], match[1]);
  }
  if (!expected.has(MANIFEST_FILE))
    throw new CheckpointError(`checkpoint ${dir}: ${CHECKSUM_FILE} does not list ${MANIFEST_FILE}`);

  const verified = async (file: string): Promise<Uint8Array> => {
    const sum = expected.get(file);
    if (!sum) throw new CheckpointError(`checkpoint ${dir}: ${file} is not listed in ${CHECKSUM_FILE}`);
    const bytes = await readRequired(dir, file);
    const actual = sha256(bytes);
    if (actual !== sum) {
      throw new CheckpointError(
        `checkpoint ${dir}: ${file} is corrupted or truncated (SHA-256 ${actual.slice(0, 12)}…, expected ${sum.slice(0, 12)}…, ${bytes.length} bytes)`,
      );
    }
    return bytes;
  };

  let manifest: Record<string, JsonValue>;
  try {
    manifest = JSON.parse(new TextDecoder().decode(await verified(MANIFEST_FILE)));
  } catch (error) {
    if (error instanceof CheckpointError) throw error;
    throw new CheckpointError(`checkpoint ${dir}: ${MANIFEST_FILE} is not valid JSON`);
  }
  if (manifest.format !== CHECKPOINT_FORMAT || manifest.version !== CHECKPOINT_VERSION) {
    throw new CheckpointError(
      `checkpoint ${dir}: ${MANIFEST_FILE} has format ${JSON.stringify(manifest.format)} version ${JSON.stringify(manifest.version)}, expected ${CHECKPOINT_FORMAT} ${CHECKPOINT_VERSION}`,
    );
  }
  const tensorFiles = manifest.tensorFiles;
  if (
    !Array.isArray(tensorFiles) ||
    !tensorFiles.every((f) => typeof f === "string" && f.endsWith(".safetensors"))
  ) {
    throw new CheckpointError(`checkpoint ${dir}: ${MANIFEST_FILE} has no valid tensorFiles list`);
  }
  const tensors: Record<string, Record<string, HostTensor>> = {};
  for (const file of tensorFiles as string[]) {
    const bytes = await verified(file);
    try {
      tensors[file.replace(/\.safetensors$/, "")] = decodeSafetensors(bytes, join(dir, file)).tensors;
    } catch (error) {
      throw new CheckpointError(`checkpoint ${dir}: ${(error as Error).message}`);
    }
  }
  const rest: Record<string, JsonValue> = { ...manifest };
  for (const key of RESERVED) delete rest[key];
  return { manifest: rest, tensors };
}
