/**
 * `agentrl ui`: the local dashboard over every run store under a folder (src/ui/): runs, live
 * curves, pass@k, and a token-level view of trajectories. Read-only; 127.0.0.1 unless --host says
 * otherwise, and then a token is required.
 */
import type { Command } from "commander";
import { DASHBOARD_DEFAULTS, startDashboard } from "../../ui/server.ts";
import { addServerOptions, serverOptions } from "./options.ts";

export function register(program: Command): void {
  const command = program
    .command("ui")
    .description(
      "a local read-only web dashboard over every run store under a folder (open /?token=<token>)",
    );
  addServerOptions(command, {
    host: DASHBOARD_DEFAULTS.host,
    port: DASHBOARD_DEFAULTS.port,
    tokenEnv: "AGENTRL_UI_TOKEN",
  })
    .option("--runs <dir>", "folder searched for run stores (*.sqlite, any depth)", DASHBOARD_DEFAULTS.runs)
    .option("--json", "print {url, runs} as JSON once listening")
    .action(async (options) => {
      const listen = serverOptions(options, "AGENTRL_UI_TOKEN");
      const token = listen.token;
      const dashboard = await startDashboard({ runs: options.runs, ...listen });
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
