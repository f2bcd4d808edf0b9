/**
 * `startDashboard`: the dashboard app on a local HTTP server (@hono/node-server). It binds
 * 127.0.0.1 unless told otherwise; any other address needs a token, because the runs' configs and
 * trajectories would otherwise be readable by anyone who can reach it. The stores are opened
 * read-only and closed with the server.
 */
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { isLoopback, TokenCheck } from "./access.ts";
import { dashboardApp } from "./app.ts";
import { RunCatalog } from "./run-catalog.ts";

export const DASHBOARD_DEFAULTS = { host: "127.0.0.1", port: 7860, runs: "runs" } as const;

export interface DashboardOptions {
  /** Folder searched for run stores (`*.sqlite`, any depth). */
  runs?: string;
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  /** Required on every request when set; mandatory off loopback. */
  token?: string;
}

export interface Dashboard {
  /** Base URL (without the token). */
  url: string;
  root: string;
  close(): Promise<void>;
}

export async function startDashboard(options: DashboardOptions = {}): Promise<Dashboard> {
  const host = options.host ?? DASHBOARD_DEFAULTS.host;
  const loopback = isLoopback(host);
  if (!loopback && !options.token) {
    throw new Error(
      `refusing to serve the dashboard on ${host} without --token: anyone who can reach it could read every run`,
    );
  }
  const token = options.token ? new TokenCheck(options.token) : undefined;
  const catalog = new RunCatalog(options.runs ?? DASHBOARD_DEFAULTS.runs);
  const app = dashboardApp({ catalog, token, loopbackOnly: loopback });
  const server = await new Promise<ReturnType<typeof serve>>((resolveServer, reject) => {
    const started = serve(
      { fetch: app.fetch, hostname: host, port: options.port ?? DASHBOARD_DEFAULTS.port },
      () => resolveServer(started),
    );
    started.once("error", reject);
  });
  const port = (server.address() as AddressInfo).port;
  const urlHost = host.includes(":") ? `[${host}]` : host;
  return {
    url: `http://${urlHost}:${port}`,
    root: catalog.root,
    close: () =>
      new Promise<void>((done) => {
        if ("closeAllConnections" in server) server.closeAllConnections();
        server.close(() => {
          catalog.close();
          done();
        });
      }),
  };
}
