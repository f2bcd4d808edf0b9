/**
 * Progress with an ETA for long jobs, on stderr (stdout stays clean for `--json`). A TTY gets a
 * live bar (cli-progress); logs and CI get one line every few seconds.
 */
import cliProgress from "cli-progress";

export interface Progress {
  update(done: number, extra?: Record<string, string | number>): void;
  stop(): void;
}

export function createProgress(label: string, total: number, options: { quiet?: boolean } = {}): Progress {
  if (options.quiet) return { update() {}, stop() {} };
  if (process.stderr.isTTY) {
    const bar = new cliProgress.SingleBar(
      {
        format: `${label} [{bar}] {percentage}% | {value}/{total} | ETA {eta_formatted} | {info}`,
        stream: process.stderr,
        hideCursor: true,
        etaBuffer: 50,
      },
      cliProgress.Presets.shades_classic,
    );
    bar.start(total, 0, { info: "" });
    return {
      update: (done, extra) => bar.update(done, { info: formatExtra(extra) }),
      stop: () => bar.stop(),
    };
  }
  const started = Date.now();
  let lastPrint = 0;
  let last = 0;
  const print = (done: number, extra?: Record<string, string | number>) => {
    const elapsed = (Date.now() - started) / 1000;
    const eta = done > 0 ? (elapsed / done) * (total - done) : Number.NaN;
    const etaText = Number.isFinite(eta) ? `${eta.toFixed(0)}s` : "?";
    process.stderr.write(
      `${label}: ${done}/${total} (${((100 * done) / Math.max(1, total)).toFixed(0)}%) elapsed ${elapsed.toFixed(0)}s ETA ${etaText} ${formatExtra(extra)}\n`,
    );
  };
  return {
    update(done, extra) {
      last = done;
      const now = Date.now();
      if (now - lastPrint >= 5000 || done === total) {
        lastPrint = now;
        print(done, extra);
      }
    },
    stop() {
      if (lastPrint === 0 || last !== total) print(last);
    },
  };
}

function formatExtra(extra?: Record<string, string | number>): string {
  if (!extra) return "";
  return Object.entries(extra)
    .map(([key, value]) => `${key}=${typeof value === "number" ? Number(value.toFixed(3)) : value}`)
    .join(" ");
}
