/**
 * A doctor run's verdict on its run page: ready or not, one row per check (`agentrl doctor`'s
 * report is the run's summary), and what to change. The full page is the run's report link.
 */
import { h } from "./dom.ts";

interface DoctorSummary {
  ready?: boolean;
  checks?: { id: string; ok: boolean; skipped?: boolean; detail: string }[];
  verdict?: { changes?: { kind: string; text: string }[] };
}

export function doctorPanel(summary: Record<string, unknown> | null): HTMLElement | null {
  const report = summary as DoctorSummary | null;
  if (!report?.checks) return null;
  const changes = report.verdict?.changes ?? [];
  return h(
    "section",
    { class: "doctor" },
    h("h2", {}, report.ready ? "doctor: ready" : "doctor: not ready"),
    h(
      "table",
      {},
      ...report.checks.map((check) =>
        h(
          "tr",
          { class: "doctor-check" },
          h("td", {}, check.id),
          h(
            "td",
            { class: `status status-${check.skipped ? "interrupted" : check.ok ? "completed" : "failed"}` },
            check.skipped ? "skipped" : check.ok ? "pass" : "fail",
          ),
          h("td", {}, check.detail),
        ),
      ),
    ),
    changes.length > 0
      ? h("ul", {}, ...changes.map((change) => h("li", {}, `${change.kind}: ${change.text}`)))
      : null,
  );
}
