/** The report's boundary section draws pass^k beside pass@k: its chart and a table of both per model. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { passAtKCurve } from "../../eval/passk.ts";
import { passHatKBlocks } from "./boundary.ts";
import { hatCurveAt } from "./context.ts";

test("pass^k blocks: a pass^k chart and the hand-worked pass@k / pass^k table", async () => {
  // n = 4. base: c = 1, 2 → pass^2 = (0 + C(2,2)/C(4,2))/2 = 1/12, pass^4 = 0.
  // RL: c = 4, 3 → pass^2 = (1 + C(3,2)/C(4,2))/2 = 3/4, pass^4 = 1/2.
  const base = passAtKCurve([
    { n: 4, c: 1 },
    { n: 4, c: 2 },
  ]);
  const rl = passAtKCurve(
    [
      { n: 4, c: 4 },
      { n: 4, c: 3 },
    ],
    { bootstrap: { resamples: 20 } },
  );
  const blocks = await passHatKBlocks(
    [
      { name: "base", curve: base },
      { name: "RL", curve: rl },
    ],
    "caption",
  );
  const [chart, table] = blocks;
  assert.equal(chart.type, "svg");
  assert.match(chart.type === "svg" ? chart.svg : "", /pass\^k/);
  assert.equal(table.type, "table");
  if (table.type !== "table") return;
  assert.deepEqual(table.columns, ["k", "pass@k base", "pass^k base", "pass@k RL", "pass^k RL"]);
  const close = (actual: unknown, expected: number) =>
    assert.ok(Math.abs((actual as number) - expected) < 1e-12, `${actual} ≠ ${expected}`);
  const [k1, k2, k4] = table.rows;
  assert.deepEqual([k1[0], k2[0], k4[0]], [1, 2, 4]);
  close(k1[2], 3 / 8); // pass^1 = pass@1 = (1/4 + 2/4)/2
  close(k2[2], 1 / 12);
  close(k2[4], 3 / 4);
  close(k4[2], 0);
  close(k4[4], 1 / 2);
  close(k4[3], 1); // pass@4 of RL
  assert.equal(hatCurveAt(rl, 4), 1 / 2);
  assert.equal(hatCurveAt([{ k: 1, passAtK: 0.5 }], 1), null, "a curve stored before pass^k");
  const stale = await passHatKBlocks([{ name: "old", curve: [{ k: 1, passAtK: 0.5 }] }], "caption");
  assert.deepEqual(
    stale.map((block) => block.type),
    ["paragraph"],
    "no empty chart for curves without pass^k",
  );
});
