/**
 * Who may read the dashboard, beyond the door checks every server shares (src/http/boundary.ts:
 * Host and Origin must be loopback or allowed, so a web page cannot read it through DNS
 * rebinding). With a token, a request needs it: `Authorization: Bearer <token>`, or the cookie the page sets
 * when it is first opened as `/?token=<token>` (Jupyter's scheme: a browser cannot send a header on
 * a navigation). Tokens are compared in constant time through their digests.
 */
import { createHash, timingSafeEqual } from "node:crypto";

export const TOKEN_COOKIE = "agentrl_ui_token";

const digest = (text: string) => createHash("sha256").update(text, "utf8").digest();

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
