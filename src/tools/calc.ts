/**
 * `calc(expression)`: arithmetic through a real parser (jsep) and a whitelist evaluator over its
 * AST; model text is never evaluated as code. Allowed: number literals, unary `-` `+`, binary
 * `+ - * / % **`, parentheses. Everything else (names, calls, member access, strings, booleans,
 * arrays, ternaries, other operators) is an `error` result with a short canonical message, and so
 * are division by zero, magnitudes above 1e15 (integers stay exact below 2^53) and NaN.
 *
 * `**` binds tighter than `*` and is right-associative. jsep parses `-2 ** 2` as `(-2) ** 2`
 * (mathematics reads -(2²)), and drops parentheses from its AST, so any power whose base is a signed
 * number is refused as ambiguous rather than answered one way silently.
 *
 * Results are canonical text: integers plain (`141`, `-141`), other numbers rounded to `decimals`
 * places with the point as its own token (`3 . 5`, as `canonicalText` writes it); `value` holds the
 * unrounded number. Input may use that canonical spaced decimal too, so a policy can feed a result
 * back into calc.
 */
import jsep from "jsep";
import { z } from "zod";
import type { ToolResult } from "../types/tool.ts";
import { TOOL_MESSAGES } from "./messages.ts";
import type { CorruptibleTool } from "./noise.ts";

export interface CalcOptions {
  /** Return the absolute value (for "years between" tasks written in question order; default false). */
  unsigned?: boolean;
  /** Decimal places of non-integer results (default 4). */
  decimals?: number;
  /** Longest expression accepted, in characters (default 500). */
  maxLength?: number;
}

export const calcArguments = z.object({
  expression: z.string().describe("An arithmetic expression, for example 1991 - 1850."),
});
export type CalcArguments = z.infer<typeof calcArguments>;

export type Evaluation = { ok: true; value: number } | { ok: false; message: string };

/** Largest magnitude of a literal, an intermediate or a result. */
export const MAX_MAGNITUDE = 1e15;

const BINARY: Record<string, (a: number, b: number) => number> = {
  "+": (a, b) => a + b,
  "-": (a, b) => a - b,
  "*": (a, b) => a * b,
  "/": (a, b) => a / b,
  "%": (a, b) => a % b,
  "**": (a, b) => a ** b,
};

class EvaluationError extends Error {}

function fail(message: string): never {
  throw new EvaluationError(message);
}

function checked(value: number): number {
  if (Number.isNaN(value)) fail(TOOL_MESSAGES.notANumber);
  if (!Number.isFinite(value) || Math.abs(value) > MAX_MAGNITUDE) fail(TOOL_MESSAGES.numberTooLarge);
  return value === 0 ? 0 : value; // no -0
}

function evaluateNode(node: jsep.Expression): number {
  switch (node.type) {
    case "Literal": {
      const { value } = node as jsep.Literal;
      if (typeof value !== "number") fail(TOOL_MESSAGES.unsupportedExpression);
      return checked(value);
    }
    case "UnaryExpression": {
      const unary = node as jsep.UnaryExpression;
      if (unary.operator === "-") return checked(-evaluateNode(unary.argument));
      if (unary.operator === "+") return evaluateNode(unary.argument);
      return fail(TOOL_MESSAGES.unsupportedOperator);
    }
    case "BinaryExpression": {
      const binary = node as jsep.BinaryExpression;
      const apply = Object.hasOwn(BINARY, binary.operator) ? BINARY[binary.operator] : undefined;
      if (!apply) fail(TOOL_MESSAGES.unsupportedOperator);
      if (binary.operator === "**" && binary.left.type === "UnaryExpression")
        fail(TOOL_MESSAGES.ambiguousPower);
      const left = evaluateNode(binary.left);
      const right = evaluateNode(binary.right);
      if ((binary.operator === "/" || binary.operator === "%") && right === 0)
        fail(TOOL_MESSAGES.divisionByZero);
      return checked(apply(left, right));
    }
    case "Identifier":
      return fail(TOOL_MESSAGES.unknownName);
    case "CallExpression":
      return fail(TOOL_MESSAGES.functionsNotSupported);
    case "Compound":
      // `1 2` or `1,000`: two expressions side by side.
      return fail(TOOL_MESSAGES.invalidExpression);
    default:
      return fail(TOOL_MESSAGES.unsupportedExpression);
  }
}

/** Rewrites the forms a policy may write that jsep does not read: `3 . 5`, `×`, `÷`, `−`. */
function normalizeExpression(expression: string): string {
  return expression
    .replace(/(\d)\s+\.\s+(\d)/g, "$1.$2")
    .replace(/×/g, "*")
    .replace(/÷/g, "/")
    .replace(/−/g, "-");
}

/** Evaluates an arithmetic expression with the whitelist above; never throws. */
export function evaluateExpression(expression: string, maxLength = 500): Evaluation {
  const trimmed = expression.trim();
  if (!trimmed) return { ok: false, message: TOOL_MESSAGES.emptyExpression };
  if (trimmed.length > maxLength) return { ok: false, message: TOOL_MESSAGES.expressionTooLong };
  let ast: jsep.Expression;
  try {
    ast = jsep(normalizeExpression(trimmed));
  } catch {
    return { ok: false, message: TOOL_MESSAGES.invalidExpression };
  }
  try {
    return { ok: true, value: evaluateNode(ast) };
  } catch (error) {
    if (error instanceof EvaluationError) return { ok: false, message: error.message };
    // A stack overflow on absurd nesting, for instance.
    return { ok: false, message: TOOL_MESSAGES.invalidExpression };
  }
}

/** Canonical text of a number: `141`, `-141`, `3 . 5` (rounded to `decimals` places). */
export function formatNumber(value: number, decimals = 4): string {
  const scale = 10 ** decimals;
  const rounded = Math.round(value * scale) / scale;
  if (Number.isInteger(rounded)) return String(rounded === 0 ? 0 : rounded);
  const text = rounded.toFixed(decimals).replace(/0+$/, "");
  return text.replace(".", " . ");
}

export function createCalcTool(options: CalcOptions = {}): CorruptibleTool<CalcArguments> {
  const decimals = options.decimals ?? 4;
  if (!Number.isInteger(decimals) || decimals < 0 || decimals > 10) {
    throw new Error(`calc: decimals must be an integer in [0, 10], got ${decimals}`);
  }
  const maxLength = options.maxLength ?? 500;
  const unsigned = options.unsigned ?? false;

  const ok = (value: number): ToolResult => ({
    status: "ok",
    content: formatNumber(value, decimals),
    injected: false,
    value,
  });

  return {
    name: "calc",
    description: unsigned
      ? "Evaluate an arithmetic expression (+ - * / % ** and parentheses); returns the absolute value."
      : "Evaluate an arithmetic expression (+ - * / % ** and parentheses).",
    schema: calcArguments,
    textArgument: "expression",
    async call(args) {
      const evaluation = evaluateExpression(args.expression, maxLength);
      if (!evaluation.ok) return { status: "error", content: evaluation.message, injected: false };
      return ok(unsigned ? Math.abs(evaluation.value) : evaluation.value);
    },
    /** Off by a nonzero integer of up to about 10% of the value (at least 1). */
    corrupt(_args, real, rng) {
      if (real.status !== "ok" || real.value === undefined) return null;
      const size = rng.range(1, Math.max(1, Math.round(Math.abs(real.value) * 0.1)));
      let wrong = real.value + (rng.chance(0.5) ? size : -size);
      if (unsigned && wrong < 0) wrong = real.value + size;
      const { content, value } = ok(wrong);
      return { content, value };
    },
  };
}
