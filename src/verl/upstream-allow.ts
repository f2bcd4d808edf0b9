/**
 * Which rollout servers an agent-server request may name (`upstream.base_url`). A prefix is a URL:
 * a base URL is allowed when it has the prefix's scheme, host and port exactly, and its path is
 * the prefix's path or below it (segment-wise), so `http://gpu-1:8000` does not let through
 * `http://gpu-1:8000.evil.example` or `http://gpu-1:80001`. A port of `*` (`http://10.0.0.5:*`)
 * allows any port of that host: verl starts its rollout servers on ports it picks.
 */
interface Prefix {
  url: URL;
  anyPort: boolean;
  text: string;
}

export class UpstreamAllowlist {
  readonly prefixes: readonly Prefix[];

  constructor(prefixes: readonly string[]) {
    this.prefixes = prefixes.map((text) => {
      const anyPort = /^https?:\/\/[^/:]+:\*(\/|$)/.test(text);
      const url = parseHttpUrl(anyPort ? text.replace(":*", "") : text);
      if (!url)
        throw new Error(
          `--upstream-allow: "${text}" is not an http(s) URL prefix (e.g. http://10.0.0.5:8000/v1, or http://10.0.0.5:* for any port)`,
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
