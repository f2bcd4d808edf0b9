/** The dashboard's JSON API, from the page: GET with query parameters, errors as exceptions. */
export class ApiError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

export type Query = Record<string, string | number | boolean | readonly string[] | undefined>;

export function queryString(query: Query): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value === undefined || value === "") continue;
    if (Array.isArray(value)) for (const item of value) params.append(name, item);
    else params.append(name, String(value));
  }
  return params.toString();
}

export async function getJson<T>(path: string, query: Query = {}): Promise<T> {
  const search = queryString(query);
  const response = await fetch(search ? `${path}?${search}` : path, {
    headers: { accept: "application/json" },
  });
  const body = (await response.json().catch(() => ({}))) as { error?: string };
  if (!response.ok)
    throw new ApiError(response.status, body.error ?? `${response.status} ${response.statusText}`);
  return body as T;
}
