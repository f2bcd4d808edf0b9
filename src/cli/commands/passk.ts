/**
 * `agentrl passk`: the unbiased pass@k of one task from its counts (n samples, c correct), and
 * pass^k beside it (all k samples correct, C(c,k)/C(n,k)), at one k or over the whole k grid
 * (1, 2, 4, …, n).
 *
 *   agentrl passk --n 5 --c 2 --k 3          → 0.9        (one number, for scripts; --hat: pass^k)
 *   agentrl passk --n 5 --c 3 --k 2 --hat    → 0.3
 *   agentrl passk --n 16 --c 3 --json        → [{"k":1,"passAtK":0.1875,"passHatK":0.1875}, …]
 */
import { type Command, InvalidArgumentError } from "commander";
import { kGrid, passAtK, passHatK } from "../../eval/passk.ts";

function parseCount(name: string) {
  return (text: string): number => {
    const value = Number(text);
    if (!/^\s*\d+\s*$/.test(text) || !Number.isSafeInteger(value)) {
      throw new InvalidArgumentError(`--${name} must be a non-negative integer.`);
    }
    return value;
  };
}

/** Round away float noise (1 - 0.1 = 0.9000000000000000222 prints as 0.9). */
const tidy = (value: number) => Number(value.toPrecision(12));

export function register(program: Command): void {
  program
    .command("passk")
    .description(
      "Unbiased pass@k of one task from its counts (arXiv:2504.13837): 1 - C(n-c,k)/C(n,k); and pass^k (all k correct): C(c,k)/C(n,k)",
    )
    .requiredOption("--n <count>", "number of samples drawn for the task", parseCount("n"))
    .requiredOption("--c <count>", "number of those samples that were correct", parseCount("c"))
    .option("--k <count>", "k to evaluate (default: the grid 1, 2, 4, …, n)", parseCount("k"))
    .option("--hat", "with --k: print pass^k (all k samples correct) instead of pass@k")
    .option("--json", "print JSON instead of plain numbers")
    .action((options: { n: number; c: number; k?: number; hat?: boolean; json?: boolean }) => {
      const ks = options.k === undefined ? kGrid(options.n) : [options.k];
      const points = ks.map((k) => ({
        k,
        passAtK: tidy(passAtK(options.n, options.c, k)),
        passHatK: tidy(passHatK(options.n, options.c, k)),
      }));
      if (options.json) {
        const payload = options.k === undefined ? points : { n: options.n, c: options.c, ...points[0] };
        console.log(JSON.stringify(payload));
      } else if (options.k !== undefined) {
        console.log(String(options.hat ? points[0].passHatK : points[0].passAtK));
      } else {
        for (const point of points)
          console.log(`pass@${point.k}\t${point.passAtK}\tpass^${point.k}\t${point.passHatK}`);
      }
    });
}
