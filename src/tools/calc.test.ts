import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { createRng } from "../core/random.ts";
import { canonicalText } from "../env/protocol.ts";
import { createCalcTool, evaluateExpression, formatNumber } from "./calc.ts";
import { callTool } from "./call-tool.ts";
import { TOOL_MESSAGE_WORDS } from "./messages.ts";

const calc = createCalcTool();
const run = (expression: string) => calc.call({ expression });

test("arithmetic: values and canonical content", async () => {
  const cases: [string, number, string][] = [
    ["1991 - 1850", 141, "141"],
    ["1850 - 1991", -141, "-141"],
    ["4213 + 977 + 90210", 95400, "95400"],
    ["2 * (3 + 4)", 14, "14"],
    ["2 * 3 + 4", 10, "10"],
    ["7 / 2", 3.5, "3 . 5"],
    ["1 / 3", 1 / 3, "0 . 3333"],
    ["-7 / 2", -3.5, "-3 . 5"],
    ["17 % 5", 2, "2"],
    ["2 ** 10", 1024, "1024"],
    ["2 ** 3 ** 2", 512, "512"],
    ["-(2 ** 2)", -4, "-4"],
    ["--3", 3, "3"],
    ["+5", 5, "5"],
    ["0 * -1", 0, "0"],
    ["3 . 5 * 2", 7, "7"],
    ["6 × 7 ÷ 2 − 1", 20, "20"],
    ["1e3 + .5", 1000.5, "1000 . 5"],
    ["  42  ", 42, "42"],
  ];
  for (const [expression, value, content] of cases) {
    assert.deepEqual(await run(expression), { status: "ok", content, injected: false, value }, expression);
  }
});

test("anything but arithmetic is an error with a short canonical message", async () => {
  const cases: [string, string][] = [
    ["", "error : empty expression"],
    ["constructor.constructor('return process')()", "error : functions not supported"],
    ["require('fs')", "error : functions not supported"],
    ["process.exit(1)", "error : functions not supported"],
    ["process.env", "error : unsupported expression"],
    ["a + 1", "error : unknown name"],
    ["this", "error : unsupported expression"],
    ["'a' + 1", "error : unsupported expression"],
    ["true + 1", "error : unsupported expression"],
    ["[1, 2]", "error : unsupported expression"],
    ["1 ? 2 : 3", "error : unsupported expression"],
    ["1 == 1", "error : unsupported operator"],
    ["2 ^ 3", "error : unsupported operator"],
    ["!1", "error : unsupported operator"],
    ["~1", "error : unsupported operator"],
    ["1 / 0", "error : division by zero"],
    ["5 % (2 - 2)", "error : division by zero"],
    ["0 / 0", "error : division by zero"],
    ["10 ** 400", "error : number too large"],
    ["2 ** 99999999", "error : number too large"],
    ["1e999", "error : number too large"],
    ["9999999999999999 + 1", "error : number too large"],
    ["(-8) ** 0.5", "error : ambiguous power"],
    ["-2 ** 2", "error : ambiguous power"],
    ["0.5 ** -2000", "error : number too large"],
    ["(0 - 8) ** 0.5", "error : not a number"],
    ["1 2", "error : invalid expression"],
    ["1,000", "error : invalid expression"],
    ["((1)", "error : invalid expression"],
    ["1 +", "error : invalid expression"],
    ["0x10", "error : invalid expression"],
    ["1".repeat(600), "error : expression too long"],
  ];
  for (const [expression, message] of cases) {
    assert.deepEqual(
      await run(expression),
      { status: "error", content: message, injected: false },
      expression,
    );
  }
  assert.equal((await callTool(calc, { expression: ["1"] })).content, "error : invalid argument expression");
});

test("deep nesting within the length limit does not crash", async () => {
  assert.equal((await run(`${"(".repeat(240)}1${")".repeat(240)}`)).content, "1");
  assert.equal((await run(`${"-".repeat(400)}1`)).content, "1");
});

test("formatNumber: integers plain, decimals rounded, point as its own token", () => {
  assert.equal(formatNumber(141), "141");
  assert.equal(formatNumber(-0), "0");
  assert.equal(formatNumber(2.5), "2 . 5");
  assert.equal(formatNumber(2 / 3), "0 . 6667");
  assert.equal(formatNumber(2.00001), "2");
  assert.equal(formatNumber(-0.00001), "0");
  assert.equal(formatNumber(1.23456, 2), "1 . 23");
  assert.equal(formatNumber(1e15), "1000000000000000");
});

test("unsigned calc returns absolute values", async () => {
  const unsigned = createCalcTool({ unsigned: true });
  assert.equal((await unsigned.call({ expression: "1850 - 1991" })).content, "141");
  assert.equal((await unsigned.call({ expression: "1850 - 1991" })).value, 141);
});

test("corrupt is off by a nonzero amount of up to ~10%, and only for ok results", async () => {
  const rng = createRng(11);
  const real = await run("1991 - 1850");
  const offsets = new Set<number>();
  for (let i = 0; i < 200; i++) {
    const wrong = calc.corrupt({ expression: "1991 - 1850" }, real, rng)!;
    const offset = wrong.value! - 141;
    assert.ok(offset !== 0 && Math.abs(offset) <= 14, String(offset));
    assert.equal(wrong.content, formatNumber(wrong.value!));
    offsets.add(offset);
  }
  assert.ok(offsets.has(1) && offsets.has(-1) && offsets.size > 10);
  assert.notEqual(calc.corrupt({ expression: "0" }, await run("0"), rng)!.value, 0);
  assert.equal(calc.corrupt({ expression: "1/0" }, await run("1/0"), rng), null);
});

// A naive reference: random expression trees over small integers, evaluated directly.
type Tree = number | { op: "+" | "-" | "*"; left: Tree; right: Tree } | { op: "neg"; arg: Tree };
const tree: fc.Arbitrary<Tree> = fc.letrec<{ tree: Tree }>((tie) => ({
  tree: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.integer({ min: 0, max: 999 }),
    fc.record({
      op: fc.constantFrom("+", "-", "*"),
      left: tie("tree"),
      right: tie("tree"),
    }) as fc.Arbitrary<Tree>,
    fc.record({ op: fc.constant("neg"), arg: tie("tree") }) as fc.Arbitrary<Tree>,
  ),
})).tree;

function render(node: Tree): string {
  if (typeof node === "number") return String(node);
  if (node.op === "neg") return `-(${render(node.arg)})`;
  return `(${render(node.left)} ${node.op} ${render(node.right)})`;
}

function reference(node: Tree): number {
  if (typeof node === "number") return node;
  if (node.op === "neg") return -reference(node.arg);
  const [a, b] = [reference(node.left), reference(node.right)];
  return node.op === "+" ? a + b : node.op === "-" ? a - b : a * b;
}

test("property: calc agrees with a direct evaluation of random expression trees", () => {
  fc.assert(
    fc.property(tree, (node) => {
      const expected = reference(node);
      const text = render(node);
      if (text.length > 500) return;
      const evaluation = evaluateExpression(text);
      if (Math.abs(expected) > 1e15) assert.equal(evaluation.ok, false);
      else assert.deepEqual(evaluation, { ok: true, value: expected === 0 ? 0 : expected });
    }),
    { numRuns: 300, seed: 7 },
  );
});

test("property: any string gives a result whose content is canonical tool text", async () => {
  const words = new Set(TOOL_MESSAGE_WORDS);
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(
        fc.string({ unit: "binary", maxLength: 60 }),
        fc
          .array(
            fc.constantFrom("1", "22", " ", "+", "-", "*", "/", "%", "**", "(", ")", ".", "e", "x", "'", ","),
            {
              maxLength: 30,
            },
          )
          .map((parts) => parts.join("")),
      ),
      async (expression) => {
        const result = await calc.call({ expression });
        assert.ok(result.status === "ok" || result.status === "error");
        assert.equal(canonicalText(result.content), result.content);
        for (const token of result.content.split(" "))
          assert.ok(words.has(token) || /^-?[\d.]+$/.test(token), token);
      },
    ),
    { numRuns: 500, seed: 3 },
  );
});
