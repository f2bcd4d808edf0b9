/** The process's peak resident set so far, in MB (getrusage's maxrss): a run's memory high-water mark. */
export function peakRssMb(): number {
  return process.resourceUsage().maxRSS / 1024;
}
