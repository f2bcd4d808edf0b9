/**
 * The verdict: ready when every check passed, else each failed check's reason and what to change,
 * ordered so the first change is the one to make first: broken tasks and a farmable reward make
 * every later measurement meaningless, an unreproducible environment or inexact tokens corrupt
 * the training data, and only then do the base, the task selection and G matter.
 */
import { CHANGE_KINDS, type Change, type DoctorCheck, type Verdict } from "./types.ts";

export function verdictOf(checks: readonly DoctorCheck[]): Verdict {
  const failed = checks.filter((check) => !check.ok);
  const seen = new Set<string>();
  const changes: Change[] = [];
  for (const kind of CHANGE_KINDS) {
    for (const check of failed) {
      for (const change of check.changes) {
        if (change.kind !== kind || seen.has(change.text)) continue;
        seen.add(change.text);
        changes.push(change);
      }
    }
  }
  return {
    ready: failed.length === 0,
    reasons: failed.map((check) => `${check.id}: ${check.detail}`),
    changes,
  };
}
