/** Artifacts: files a run produced (checkpoints, reports, datasets), registered by kind and step. */
import type { Database } from "./database.ts";
import { decodeJson, encodeJson } from "./json-codec.ts";
import type { ArtifactInput, ArtifactRecord } from "./types.ts";

const SQL = {
  insert: `INSERT INTO artifacts (run_id, kind, path, step, meta, created_at) VALUES (?, ?, ?, ?, ?, ?)
           RETURNING *`,
  all: "SELECT * FROM artifacts WHERE run_id = ? ORDER BY seq",
  byKind: "SELECT * FROM artifacts WHERE run_id = ? AND kind = ? ORDER BY seq",
  deleteAfterStep: "DELETE FROM artifacts WHERE run_id = ? AND step > ?",
} as const;

function rowToArtifact(row: Record<string, unknown>): ArtifactRecord {
  return {
    seq: Number(row.seq),
    runId: String(row.run_id),
    kind: String(row.kind),
    path: String(row.path),
    step: row.step === null ? null : Number(row.step),
    meta: row.meta === null ? null : (decodeJson(String(row.meta)) as Record<string, unknown>),
    createdAt: String(row.created_at),
  };
}

export function addArtifact(database: Database, runId: string, artifact: ArtifactInput): ArtifactRecord {
  if (artifact.step !== undefined && !Number.isSafeInteger(artifact.step)) {
    throw new Error(`artifact step must be an integer, got ${artifact.step}`);
  }
  const row = database
    .statement(SQL.insert)
    .get(
      runId,
      artifact.kind,
      artifact.path,
      artifact.step ?? null,
      artifact.meta === undefined ? null : encodeJson(artifact.meta),
      new Date().toISOString(),
    );
  return rowToArtifact(row!);
}

/** Artifacts of the run in registration order, optionally of one kind. */
export function artifacts(database: Database, runId: string, kind?: string): ArtifactRecord[] {
  const rows =
    kind === undefined
      ? database.statement(SQL.all).all(runId)
      : database.statement(SQL.byKind).all(runId, kind);
  return rows.map(rowToArtifact);
}

/** Forgets (does not delete the files of) artifacts of steps after `step`. */
export function deleteArtifactsAfterStep(database: Database, runId: string, step: number): number {
  return Number(database.statement(SQL.deleteAfterStep).run(runId, step).changes);
}
