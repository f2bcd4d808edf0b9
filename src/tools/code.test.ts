import assert from "node:assert/strict";
import { test } from "node:test";
import { callTool } from "./call-tool.ts";
import { createCodeTool } from "./code.ts";

const code = createCodeTool({ timeoutMs: 400, maxOutputChars: 200 });
const run = (program: string) => code.call({ code: program });

test("printed output and the completion value come back", async () => {
  const result = await run(
    "const xs = [3, 1, 2].sort(); console.log('sorted', xs, { n: xs.length }); xs[0] * 14",
  );
  assert.deepEqual(result, { status: "ok", content: 'sorted [1,2,3] {"n":3}\n=> 14', injected: false });
  assert.equal((await run("'abc'")).content, '=> "abc"');
  assert.equal((await run("10n ** 20n")).content, "=> 100000000000000000000n");
  // Promises are settled before the value is read.
  assert.equal((await run("(async () => { await null; return 7 })()")).content, "=> 7");
  assert.deepEqual(await run("let unused = 1"), { status: "empty", content: "(no output)", injected: false });
});

test("uncaught errors are error results with the message and line", async () => {
  assert.deepEqual(await run("\n\nnotDefined()"), {
    status: "error",
    content: "ReferenceError: 'notDefined' is not defined (line 3)",
    injected: false,
  });
  const partial = await run("console.log('before'); throw new TypeError('boom')");
  assert.equal(partial.status, "error");
  assert.equal(partial.content, "before\nTypeError: boom (line 1)");
  assert.equal((await run("Promise.reject(new RangeError('no'))")).content, "RangeError: no (line 1)");
  assert.equal((await run("throw 5")).content, "Uncaught 5");
});

test("no host capabilities: require, process, fetch, import() and timers do not exist", async () => {
  const kinds = await run(
    "[typeof require, typeof process, typeof fetch, typeof setTimeout, typeof module, typeof Deno].join(' ')",
  );
  assert.equal(kinds.content, '=> "undefined undefined undefined undefined undefined undefined"');
  assert.match((await run("require('fs')")).content, /ReferenceError: 'require' is not defined/);
  assert.match((await run("process.exit(1)")).content, /ReferenceError: 'process' is not defined/);
  assert.match((await run("fetch('http://127.0.0.1/')")).content, /ReferenceError: 'fetch' is not defined/);
  const dynamicImport = await run("import('node:fs')");
  assert.equal(dynamicImport.status, "error");
  assert.match(dynamicImport.content, /could not load module/);
  // The only global the guest is given is console.
  assert.equal((await run("Object.keys(globalThis).join(',')")).content, '=> "console"');
});

test("a runaway loop is a timeout, a huge allocation or deep recursion an error; the host is unaffected", async () => {
  const before = process.memoryUsage().rss;
  const started = performance.now();
  const loop = await run("while (true) {}");
  assert.equal(loop.status, "timeout");
  assert.equal(loop.content, "error: timed out after 400 ms");
  // The host's event loop kept running while the guest spun (the guest is in a worker).
  let ticks = 0;
  const ticker = setInterval(() => ticks++, 20);
  const again = await run("for (;;) { Math.random(); }");
  clearInterval(ticker);
  assert.equal(again.status, "timeout");
  assert.ok(ticks >= 5, `host timers fired ${ticks} times during the guest's loop`);

  for (const program of ["'x'.repeat(1e9)", "new ArrayBuffer(1e9)"]) {
    const result = await run(program);
    assert.equal(result.status, "error", program);
    assert.match(result.content, /out of memory|invalid array buffer length|RangeError/, program);
  }
  // Filling a billion slots grows one element at a time: it reaches the memory limit (error), or on
  // a loaded machine the deadline first (timeout, seen in CI-like runs at load 15); never a result.
  const filled = await run("new Array(1e9).fill(0)");
  assert.ok(filled.status === "error" || filled.status === "timeout", filled.content);
  assert.match(filled.content, /out of memory|RangeError|timed out/);
  // Growing without bound hits the memory limit (error) or, if the collector thrashes first, the deadline.
  const growing = await run("const a = []; while (true) a.push(new Array(1e5).fill(1));");
  assert.ok(growing.status === "error" || growing.status === "timeout", growing.content);
  const recursion = await run("function f() { return f() + 1 } f()");
  assert.deepEqual(recursion, {
    status: "error",
    content: "InternalError: stack overflow (line 1)",
    injected: false,
  });
  assert.equal((await run("/(a+)+b/.test('a'.repeat(40))")).status, "timeout");

  // Each call ran in its own worker, which exited: the host holds none of the guests' memory.
  assert.equal((await run("6 * 7")).content, "=> 42");
  const grown = (process.memoryUsage().rss - before) / 2 ** 20;
  assert.ok(grown < 200, `host resident memory grew by ${grown.toFixed(0)} MiB`);
  assert.ok(performance.now() - started < 20_000);
});

test("console output is truncated at the limit; state does not leak between calls", async () => {
  // What is tested is the truncation, not speed: 10,000 console.log calls took more than the
  // 400 ms above when the suite's other files kept both cores busy.
  const roomy = createCodeTool({ timeoutMs: 10_000, maxOutputChars: 200 });
  const run = (program: string) => roomy.call({ code: program });
  const flood = await run("for (let i = 0; i < 1e4; i++) console.log('line', i); 'done'");
  assert.equal(flood.status, "ok");
  const lines = flood.content.split("\n");
  assert.equal(lines.at(-1), '=> "done"');
  assert.equal(lines.at(-2), "[output truncated]");
  assert.ok(flood.content.length < 260, `content has ${flood.content.length} characters`);
  const long = await run("console.log('y'.repeat(1e7)); 'x'.repeat(1e6)");
  assert.equal(long.status, "ok");
  assert.ok(long.content.startsWith("y".repeat(200)));
  assert.ok(long.content.endsWith(`=> "${"x".repeat(199)} [truncated]`), long.content.slice(-60));
  assert.ok(long.content.length < 500);
  await run("globalThis.leak = 1");
  assert.equal((await run("typeof leak")).content, '=> "undefined"');
});

test("through callTool: schema errors, empty or oversized programs, abort", async () => {
  assert.equal((await callTool(code, { program: "1" })).content, "error : missing argument code");
  assert.deepEqual(await run("   "), { status: "error", content: "error: empty program", injected: false });
  const small = createCodeTool({ maxCodeLength: 10 });
  assert.equal((await small.call({ code: "1 + 1 + 1 + 1" })).status, "error");
  const controller = new AbortController();
  const pending = callTool(code, { code: "while (true) {}" }, { signal: controller.signal });
  setTimeout(() => controller.abort(), 50);
  assert.equal((await pending).content, "error : cancelled");
  assert.throws(() => createCodeTool({ timeoutMs: 0 }), /timeoutMs must be an integer/);
  assert.throws(
    () => createCodeTool({ stackBytes: 2 ** 24 }),
    /stackBytes must be an integer in \[1, 1048576\]/,
  );
});
