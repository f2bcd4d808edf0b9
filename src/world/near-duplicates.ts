/**
 * Near-duplicate names of cities and companies: one name is the other plus one trailing letter
 * (`zenda` / `zendar`). The name pools create them only in designated pairs.
 */

/** One character appended: `zenda` → `zendar`, `brosil` → `brosila`. */
export function nearDuplicateOf(name: string): string {
  return /[aeiou]$/.test(name) ? name + "r" : name + "a";
}

/** True when one name is the other with one more trailing letter (the only kind of near-duplicate). */
export function areNearDuplicates(a: string, b: string): boolean {
  return (a.length === b.length + 1 && a.startsWith(b)) || (b.length === a.length + 1 && b.startsWith(a));
}
