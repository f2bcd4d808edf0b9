/**
 * Who may read the dashboard. On loopback (the default) only requests whose `Host` names a
 * loopback address are answered, so a web page elsewhere cannot read it through DNS rebinding.
 * With a token, a request needs it: `Authorization: Bearer <token>`, or the cookie the page sets
 * when it is first opened as `/?token=<token>` (Jupyter's scheme: a browser cannot send a header on
 * a navigation). Tokens are compared in constant time through their digests.
 */
import { createHash, timingSafeEqual } from "node:crypto";

export const LOOPBACK_HOSTS: ReadonlySet<string> = new Set(["127.0.0.1", "::1", "localhost"]);
export const TOKEN_COOKIE = "agentrl_ui_token";

const digest = (text: string) => createHash("sha256").update(text, "utf8").digest();

export function isLoopback(host: string): boolean {
  return LOOPBACK_HOSTS.has(host) || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** The host name of a `Host` header (`[::1]:8080` → `::1`, `localhost:80` → `localhost`). */
export function hostName(header: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(header);
  if (bracketed) return bracketed[1];
  return header.replace(/:\d+$/, "");
}

/** Reads one cookie from a `Cookie` header. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? "").split(";")) {
    const at = part.indexOf("=");
    if (at > 0 && part.slice(0, at).trim() === name) return decodeURIComponent(part.slice(at + 1).trim());
  }
  return undefined;
}

export class TokenCheck {
  readonly #digest: Buffer;

  constructor(token: string) {
    if (token.length < 8) throw new Error("the dashboard token must be at least 8 characters long");
    this.#digest = digest(token);
  }

  matches(candidate: string | undefined): boolean {
    return candidate !== undefined && timingSafeEqual(digest(candidate), this.#digest);
  }

  /** A request carries the token in its bearer header or its cookie. */
  allows(headers: { authorization?: string; cookie?: string }): boolean {
    const bearer = /^Bearer\s+(.+)$/i.exec(headers.authorization ?? "");
    return this.matches(bearer?.[1].trim()) || this.matches(cookieValue(headers.cookie, TOKEN_COOKIE));
  }
}
