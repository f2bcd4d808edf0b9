/**
 * Fault injection as a test harness. `AGENTRL_FAULTS` (off by default) names a seed and a rate per
 * infrastructure fault class, e.g.
 *
 *   AGENTRL_FAULTS="seed=7,upstream-5xx=0.1,sandbox-kill=0.1,verifier-timeout=0.05"
 *
 * Each adapter (the upstream clients, the sandboxed tools, the verifier call, the store's writes)
 * asks `injectFault(class, key)` before doing its work, with a stable key (episode id + call index),
 * and throws the `InjectedFault` it gets back. The decision is a pure function of (seed, class,
 * key), so a run under faults is reproducible and a test can rerun the same episodes fault-free.
 * Injected faults are infra failures labelled `injected: true`: the tests check that every one of
 * them ends up classified `infra`, never scored as the policy's failure.
 */
import { ClassifiedError, type Failure } from "../types/failure.ts";
import { hashString, mixSeeds } from "./random.ts";

export const FAULTS_ENV = "AGENTRL_FAULTS";

/** The fault classes, and the failure code each one is recorded under. */
export const FAULT_CODES = {
  "upstream-5xx": "upstream-5xx",
  "upstream-timeout": "upstream-timeout",
  "truncated-stream": "upstream-truncated",
  "malformed-json": "upstream-malformed",
  "sandbox-kill": "sandbox-died",
  "verifier-error": "verifier-error",
  "verifier-timeout": "verifier-timeout",
  "sqlite-write": "store-write-failed",
} as const;
export type FaultClass = keyof typeof FAULT_CODES;
export const FAULT_CLASSES = Object.keys(FAULT_CODES) as FaultClass[];

/** The faults of the upstream (model server) adapters. */
export const UPSTREAM_FAULTS: readonly FaultClass[] = [
  "upstream-5xx",
  "upstream-timeout",
  "truncated-stream",
  "malformed-json",
];
export const VERIFIER_FAULTS: readonly FaultClass[] = ["verifier-error", "verifier-timeout"];

export interface FaultPlan {
  readonly seed: number;
  /** Probability of injecting each class at one call (0 when the spec does not name it). */
  readonly rates: Readonly<Record<FaultClass, number>>;
}

/**
 * Parses a spec (`seed=N,<class>=<rate>,…`). Empty, `0` and `off` mean no faults (null). Throws on
 * an unknown class (naming it and listing the valid ones), a rate outside [0, 1], a malformed
 * entry or a missing seed.
 */
export function parseFaultSpec(spec: string, source = FAULTS_ENV): FaultPlan | null {
  const text = spec.trim();
  if (text === "" || text === "0" || text === "off") return null;
  const rates = Object.fromEntries(FAULT_CLASSES.map((name) => [name, 0])) as Record<FaultClass, number>;
  let seed: number | undefined;
  for (const entry of text.split(",")) {
    const match = /^\s*([a-z0-9-]+)\s*=\s*(\S+)\s*$/.exec(entry);
    if (!match) throw new Error(`${source}: "${entry.trim()}" is not <name>=<value> (spec "${text}")`);
    const [, name, value] = match;
    const number = Number(value);
    if (name === "seed") {
      if (!Number.isSafeInteger(number) || number < 0) {
        throw new Error(`${source}: seed must be a non-negative integer, got "${value}"`);
      }
      seed = number;
    } else if (name in FAULT_CODES) {
      if (!(number >= 0 && number <= 1)) {
        throw new Error(`${source}: the rate of ${name} must be in [0, 1], got "${value}"`);
      }
      rates[name as FaultClass] = number;
    } else {
      throw new Error(`${source}: unknown fault class "${name}"; valid: seed, ${FAULT_CLASSES.join(", ")}`);
    }
  }
  if (seed === undefined) throw new Error(`${source}: the spec needs a seed (seed=N), got "${text}"`);
  return { seed, rates };
}

let cached: { spec: string | undefined; plan: FaultPlan | null } | undefined;

/** The plan of `AGENTRL_FAULTS` (null when unset: the default). Re-read when the variable changes. */
export function activeFaultPlan(): FaultPlan | null {
  const spec = process.env[FAULTS_ENV];
  if (!cached || cached.spec !== spec) cached = { spec, plan: parseFaultSpec(spec ?? "") };
  return cached.plan;
}

/** Whether `plan` injects `faultClass` at the call named `key`: a pure function of the three. */
export function decides(plan: FaultPlan, faultClass: FaultClass, key: string): boolean {
  const rate = plan.rates[faultClass];
  if (rate <= 0) return false;
  const draw = mixSeeds(mixSeeds(plan.seed, hashString(faultClass)), hashString(key)) / 2 ** 32;
  return draw < rate;
}

/** The error an adapter throws for an injected fault: an infra failure labelled injected. */
export class InjectedFault extends ClassifiedError {
  readonly faultClass: FaultClass;
  readonly key: string;

  constructor(faultClass: FaultClass, key: string) {
    super(injectedFailure(faultClass, key));
    this.name = "InjectedFault";
    this.faultClass = faultClass;
    this.key = key;
  }
}

export function injectedFailure(faultClass: FaultClass, key: string): Failure {
  return {
    class: "infra",
    code: FAULT_CODES[faultClass],
    message: `injected ${faultClass} fault (${FAULTS_ENV}) at ${key}`,
    injected: true,
  };
}

/** Every fault injected in this process, in order: what tests compare the classified episodes with. */
const log: { faultClass: FaultClass; key: string }[] = [];

/**
 * The first of `classes` the active plan injects at `key` (null when none, or faults are off),
 * recorded in the process-wide log. Adapters throw the result (or translate it into the error
 * their transport would raise).
 */
export function injectFault(classes: FaultClass | readonly FaultClass[], key: string): InjectedFault | null {
  const plan = activeFaultPlan();
  if (!plan) return null;
  for (const faultClass of typeof classes === "string" ? [classes] : classes) {
    if (decides(plan, faultClass, key)) {
      log.push({ faultClass, key });
      return new InjectedFault(faultClass, key);
    }
  }
  return null;
}

/** Faults injected in this process so far, per class (the harness's figure). */
export function injectedFaultCounts(): Record<FaultClass, number> {
  return countByClass(log);
}

/** Counts of a list of injected faults per class (every class, 0 when absent). */
export function countByClass(faults: readonly { faultClass: FaultClass }[]): Record<FaultClass, number> {
  const counts = Object.fromEntries(FAULT_CLASSES.map((name) => [name, 0])) as Record<FaultClass, number>;
  for (const entry of faults) counts[entry.faultClass]++;
  return counts;
}

/** `upstream-5xx 3, verifier-error 1`: the classes present in a list of injected faults. */
export function describeFaults(faults: readonly { faultClass: FaultClass }[]): string {
  const present = Object.entries(countByClass(faults)).filter(([, count]) => count > 0);
  return present.length === 0 ? "none" : present.map(([name, count]) => `${name} ${count}`).join(", ");
}

/** The injected faults so far (class and key), in order. */
export function injectedFaults(): readonly { faultClass: FaultClass; key: string }[] {
  return [...log];
}

export function resetInjectedFaultCounts(): void {
  log.length = 0;
}

/** Runs `body` with `AGENTRL_FAULTS` set to `spec` (undefined: unset) and the tally reset; for tests. */
export async function withFaults<T>(spec: string | undefined, body: () => Promise<T>): Promise<T> {
  const before = process.env[FAULTS_ENV];
  if (spec === undefined) delete process.env[FAULTS_ENV];
  else process.env[FAULTS_ENV] = spec;
  resetInjectedFaultCounts();
  try {
    return await body();
  } finally {
    if (before === undefined) delete process.env[FAULTS_ENV];
    else process.env[FAULTS_ENV] = before;
  }
}
