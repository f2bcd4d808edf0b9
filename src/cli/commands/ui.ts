/**
 * `agentrl ui`: the local dashboard over every run store under a folder (src/ui/): runs, live
 * curves, pass@k, and a token-level view of trajectories. Read-only; 127.0.0.1 unless --host says
 * otherwise, and then a token is required.
 */
import type { Command } from "commander";
import { DASHBOARD_DEFAULTS, startDashboard } from "../../ui/server.ts";
import { parseNumber } from "./options.ts";

export function register(program: Command): void {
  program
    .command("ui")
    .description("a local read-only web dashboard over every run store under a folder")
    .option("--runs <dir>", "folder searched for run stores (*.sqlite, any depth)", DASHBOARD_DEFAULTS.runs)
    .option("--host <host>", "address to bind (another than loopback needs --token)", DASHBOARD_DEFAULTS.host)
    .option("--port <port>", "port (0 picks a free one)", String(DASHBOARD_DEFAULTS.port))
    .option("--token <token>", "require this token (default: $AGENTRL_UI_TOKEN); open /?token=<token>")
    .option("--json", "print {url, runs} as JSON once listening")
    .action(async (options) => {
      const token: string | undefined = options.token ?? process.env.AGENTRL_UI_TOKEN ?? undefined;
      const dashboard = await startDashboard({
        runs: options.runs,
        host: options.host,
        port: parseNumber("--port", options.port, { integer: true, min: 0, max: 65535 }),
        ...(token ? { token } : {}),
      });
      if (options.json) console.log(JSON.stringify({ url: dashboard.url, runs: dashboard.root }));
      else {
        const address = token ? `${dashboard.url}/?token=<token>` : `${dashboard.url}/`;
        console.error(`agentrl ui: ${dashboard.root} at ${address} (read-only); Ctrl-C to stop`);
      }
      await new Promise<void>((done) => {
        const stop = () => {
          process.off("SIGINT", stop);
          process.off("SIGTERM", stop);
          void dashboard.close().then(done);
        };
        process.on("SIGINT", stop);
        process.on("SIGTERM", stop);
      });
    });
}
