import assert from "node:assert/strict";
import { test } from "node:test";
import { torchVersionProblem } from "./torch-reference.ts";

test("the references run on PyTorch 1.13 and later, and name an older version they refuse", () => {
  for (const ok of ["1.13.0", "1.13.1a0+git", "2.0.1", "2.13.0+cpu", "10.0"])
    assert.equal(torchVersionProblem(ok), null, ok);
  for (const old of ["1.12.1", "1.9.0+cu111", "0.4.1"]) {
    const problem = torchVersionProblem(old);
    assert.ok(problem, old);
    assert.match(problem, new RegExp(`PyTorch ${old.replace(/[.+]/g, "\\$&")} is too old`));
    assert.match(problem, />= 1\.13/);
  }
});
