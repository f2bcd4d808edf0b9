/** How the dashboard writes numbers, times and durations. */
export function formatNumber(value: number | string | null | undefined): string {
  if (value === null || value === undefined) return "–";
  if (typeof value === "string") return value;
  if (Number.isInteger(value)) return String(value);
  const magnitude = Math.abs(value);
  return magnitude !== 0 && (magnitude < 1e-3 || magnitude >= 1e5)
    ? value.toExponential(2)
    : value.toFixed(3);
}

export function formatDuration(seconds: number): string {
  if (seconds < 60) return `${seconds.toFixed(1)} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ${Math.round(seconds % 60)} s`;
  return `${Math.floor(seconds / 3600)} h ${Math.round((seconds % 3600) / 60)} min`;
}

export function formatTime(iso: string): string {
  return iso.replace("T", " ").replace(/\.\d+Z$/, "Z");
}

/** `a=1 b=grpo …`: the scalar fields of a config, for one table cell. */
export function configLine(config: Record<string, unknown>, max = 6): string {
  const parts = Object.entries(config)
    .filter(([, value]) => value === null || typeof value !== "object")
    .map(([name, value]) => `${name}=${String(value)}`);
  return parts.length > max ? `${parts.slice(0, max).join(" ")} …` : parts.join(" ");
}

/** The dashboard's address of a report page found under the runs folder. */
export function reportHref(path: string): string {
  return `/reports/${path.split("/").map(encodeURIComponent).join("/")}`;
}
