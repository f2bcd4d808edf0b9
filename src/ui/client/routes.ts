/** The page's addresses live in the hash: `#/<view>?<query>`; links are built and read here. */
import { type Query, queryString } from "./api.ts";

export interface Route {
  view: string;
  params: URLSearchParams;
}

export function currentRoute(): Route {
  const hash = location.hash.replace(/^#\/?/, "");
  const at = hash.indexOf("?");
  return {
    view: at < 0 ? hash : hash.slice(0, at),
    params: new URLSearchParams(at < 0 ? "" : hash.slice(at + 1)),
  };
}

export function link(view: string, query: Query = {}): string {
  const search = queryString(query);
  return `#/${view}${search ? `?${search}` : ""}`;
}
