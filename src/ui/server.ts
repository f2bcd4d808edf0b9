/**
 * `startDashboard`: the dashboard app on a local HTTP server (@hono/node-server), behind the door
 * checks every server shares (src/http/boundary.ts). It binds 127.0.0.1 unless told otherwise; any
 * other address needs a token (or `allowRemote`), because the runs' configs and trajectories would
 * otherwise be readable by anyone who can reach it. The stores are opened
 * read-only and closed with the server.
 */

import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { applyTimeouts, checkBind, HostPolicy } from "../http/boundary.ts";
import { TokenCheck } from "./access.ts";
import { dashboardApp } from "./app.ts";
import { RunCatalog } from "./run-catalog.ts";

export const DASHBOARD_DEFAULTS = { host: "127.0.0.1", port: 7860, runs: "runs" } as const;

export interface DashboardOptions {
  /** Folder searched for run stores (`*.sqlite`, any depth). */
  runs?: string;
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  /** Required on every request when set; mandatory off loopback unless `allowRemote`. */
  token?: string;
  /** Allow a non-loopback host without a token (warns). */
  allowRemote?: boolean;
  /** Host names answered besides loopback and the bound address (`--allow-host`). */
  allowHosts?: readonly string[];
  /** Warnings (default: stderr). */
  log?: (line: string) => void;
}

export interface Dashboard {
  /** Base URL (without the token). */
  url: string;
  root: string;
  close(): Promise<void>;
}

export async function startDashboard(options: DashboardOptions = {}): Promise<Dashboard> {
  const host = options.host ?? DASHBOARD_DEFAULTS.host;
  const warning = checkBind("agentrl ui", host, { token: options.token, insecure: options.allowRemote });
  if (warning) (options.log ?? ((line: string) => process.stderr.write(`${line}\n`)))(warning);
  const token = options.token ? new TokenCheck(options.token) : undefined;
  const catalog = new RunCatalog(options.runs ?? DASHBOARD_DEFAULTS.runs);
  const app = dashboardApp({ catalog, token, hosts: new HostPolicy(host, options.allowHosts) });
  const server = await new Promise<ReturnType<typeof serve>>((resolveServer, reject) => {
    const started = serve(
      { fetch: app.fetch, hostname: host, port: options.port ?? DASHBOARD_DEFAULTS.port },
      () => resolveServer(started),
    );
    applyTimeouts(started as Server);
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
