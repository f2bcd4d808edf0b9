/**
 * Which rollout servers an agent-server request may name (`upstream.base_url`). A prefix is a URL:
 * a base URL is allowed when it has the prefix's scheme, host and port exactly, and its path is
 * the prefix's path or below it (segment-wise), so `http://gpu-1:8000` does not let through
 * `http://gpu-1:8000.evil.example` or `http://gpu-1:80001`. A port of `*` (`http://10.0.0.5:*`,
 * `http://[fd00::5]:*`) allows any port of that host: verl starts its rollout servers on ports it
 * picks.
 *
 * `--upstream-allow-local` adds any port of every address of this host's network interfaces
 * (`localUpstreamPrefixes`). That is where verl's rollout servers listen: each takes
 * `ray.util.get_node_ip_address()` as its address (verl-project/verl
 * verl/workers/rollout/vllm_rollout/vllm_async_server.py: v0.7.1 bec9ef74 :138, v0.8.0 7aed6b23
 * :143, v0.9.0 483b8a00 :164, main 1dda039b :165; SGLang's async_sglang_server.py main :190 alike)
 * and binds its HTTP server to exactly that address (verl/workers/rollout/utils.py `run_uvicorn`,
 * `uvicorn.Config(app, host=server_address, …)`: v0.7.1 :62, main :69), which only succeeds on an
 * address of a local interface. Ray picks it by the route to the outside (or `--node-ip-address`),
 * not by the host name, so it can differ from `hostname -i` (127.0.1.1 on Debian hosts, another
 * card on a multi-homed node); the interfaces always hold it, whatever Ray chose, without asking a
 * Ray cluster that may not be up yet when the agent-server starts.
 */
import { type NetworkInterfaceInfo, networkInterfaces } from "node:os";

/** A host's network interfaces, as `os.networkInterfaces()` answers (a test gives a double). */
export type HostInterfaces = () => NodeJS.Dict<NetworkInterfaceInfo[]>;

/**
 * `http://<address>:*` for every address of the host's interfaces (IPv6 in brackets). IPv6
 * link-local addresses (fe80::/10) are left out: they need a zone (`%eth0`) a URL cannot carry
 * portably, and Ray never picks one.
 */
export function localUpstreamPrefixes(interfaces: HostInterfaces = networkInterfaces): string[] {
  const prefixes = new Set<string>();
  for (const addresses of Object.values(interfaces()))
    for (const { address, family } of addresses ?? []) {
      const v6 = family === "IPv6" || (family as unknown) === 6;
      if (v6 && /^fe[89ab]/i.test(address)) continue;
      prefixes.add(v6 ? `http://[${address}]:*` : `http://${address}:*`);
    }
  return [...prefixes];
}

/** The allowlist of an agent-server: its own upstream, the given prefixes, and this host's addresses when asked. */
export function rolloutAllowlist(
  options: { upstream?: string; upstreamAllow?: readonly string[]; upstreamAllowLocal?: boolean },
  interfaces: HostInterfaces = networkInterfaces,
): UpstreamAllowlist {
  return new UpstreamAllowlist([
    ...(options.upstream ? [options.upstream] : []),
    ...(options.upstreamAllow ?? []),
    ...(options.upstreamAllowLocal ? localUpstreamPrefixes(interfaces) : []),
  ]);
}

interface Prefix {
  url: URL;
  anyPort: boolean;
  text: string;
}

export class UpstreamAllowlist {
  readonly prefixes: readonly Prefix[];

  constructor(prefixes: readonly string[]) {
    this.prefixes = prefixes.map((text) => {
      const anyPort = /^https?:\/\/([^/:[\]]+|\[[0-9A-Fa-f:.]+\]):\*(\/|$)/.test(text);
      const url = parseHttpUrl(anyPort ? text.replace(":*", "") : text);
      if (!url)
        throw new Error(
          `--upstream-allow: "${text}" is not an http(s) URL prefix (e.g. http://10.0.0.5:8000/v1, or http://10.0.0.5:* for any port; an IPv6 address in brackets: http://[fd00::5]:*)`,
        );
      return { url, anyPort, text: text.replace(/\/+$/, "") };
    });
  }

  allows(baseURL: string): boolean {
    const url = parseHttpUrl(baseURL);
    if (!url) return false;
    return this.prefixes.some(
      (prefix) =>
        (prefix.anyPort
          ? prefix.url.protocol === url.protocol && prefix.url.hostname === url.hostname
          : prefix.url.origin === url.origin) &&
        underPath(trimmed(url.pathname), trimmed(prefix.url.pathname)),
    );
  }

  /** The refusal message for a base URL that `allows` rejects. */
  refusal(baseURL: string): string {
    const allowed = this.prefixes.map((prefix) => prefix.text);
    return (
      `upstream.base_url "${baseURL}" is not allowed: the agent-server calls only ` +
      (allowed.length
        ? `${allowed.join(", ")} (--upstream, --upstream-allow)`
        : "rollout servers given with --upstream or --upstream-allow (none given)")
    );
  }
}

function parseHttpUrl(text: string): URL | null {
  try {
    const url = new URL(text);
    return url.protocol === "http:" || url.protocol === "https:" ? url : null;
  } catch {
    return null;
  }
}

const trimmed = (path: string) => path.replace(/\/+$/, "");

function underPath(path: string, prefix: string): boolean {
  return prefix === "" || path === prefix || path.startsWith(`${prefix}/`);
}
