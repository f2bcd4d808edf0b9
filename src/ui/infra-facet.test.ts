import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { createRunDirectory } from "../store/index.ts";
import { numberedTrajectory } from "../store/test-trajectories.ts";
import { infraFailure } from "../types/failure.ts";
import { trajectoryFacets } from "./trajectory-query.ts";

test("the dashboard's run facets count the infra-failed episodes", (t) => {
  const root = mkdtempSync(join(tmpdir(), "agentrl-ui-infra-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const { store, run } = createRunDirectory({ root, id: "e", kind: "eval", config: {} });
  try {
    store.addTrajectory(run.id, numberedTrajectory(1));
    store.addTrajectory(run.id, {
      ...numberedTrajectory(2),
      failure: infraFailure("upstream-5xx", "HTTP 503"),
    });
    store.addTrajectory(run.id, {
      ...numberedTrajectory(3),
      failure: { class: "agent", code: "agent-threw", message: "x" },
    });
    const facets = trajectoryFacets(store, run.id);
    assert.equal(facets.total, 3);
    assert.equal(facets.infraFailures, 1);
  } finally {
    store.close();
  }
});
