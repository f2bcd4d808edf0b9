import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { pathToFileURL } from "node:url";
import { crc32 } from "node:zlib";
import { withFaults } from "../core/faults.ts";
import { callTool } from "./call-tool.ts";
import { createPythonTool } from "./python.ts";
import { PythonSandboxPool } from "./python-sandbox.ts";

/** A zip of stored (uncompressed) files: enough for a pure-Python wheel. */
function storedZip(files: Record<string, string>): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const [name, text] of Object.entries(files)) {
    const data = Buffer.from(text);
    const path = Buffer.from(name);
    const crc = crc32(data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(data.length, 18);
    local.writeUInt32LE(data.length, 22);
    local.writeUInt16LE(path.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(data.length, 20);
    central.writeUInt32LE(data.length, 24);
    central.writeUInt16LE(path.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, path, data);
    centrals.push(central, path);
    offset += local.length + path.length + data.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(centrals.length / 2, 8);
  end.writeUInt16LE(centrals.length / 2, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}

// A local wheel folder (pure Python, installed offline into every interpreter).
const wheels = mkdtempSync(join(tmpdir(), "agentrl-wheels-"));
const info = "agentrl_demo-1.0.dist-info";
writeFileSync(
  join(wheels, "agentrl_demo-1.0-py3-none-any.whl"),
  storedZip({
    "agentrl_demo/__init__.py": "def triple(x):\n    return 3 * x\n",
    [`${info}/METADATA`]: "Metadata-Version: 2.1\nName: agentrl_demo\nVersion: 1.0\n",
    [`${info}/WHEEL`]: "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    [`${info}/RECORD`]: "",
  }),
);

// One warm pool for the file: each call still gets its own fresh process (the pool refills).
const pool = new PythonSandboxPool({ poolSize: 2, memoryBytes: 128 * 1024 * 1024, wheelsDir: wheels });
const python = createPythonTool({ pool, timeoutMs: 3000, maxOutputChars: 200 });
const run = (code: string) => python.call({ code });

// A loopback server the guest tries to reach: no byte may arrive.
let server: Server;
let port = 0;
let received = 0;
before(async () => {
  server = createServer((socket) => socket.on("data", (data) => (received += data.length)));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as { port: number }).port;
  await pool.warm();
});
after(() => {
  pool.close();
  rmSync(wheels, { recursive: true, force: true });
  server.close();
});

test("printed output and the last expression's repr come back; errors name the line", async () => {
  assert.deepEqual(await run("import math\nprint('fact', math.factorial(5))\n6 * 7"), {
    status: "ok",
    content: "fact 120\n=> 42",
    injected: false,
  });
  assert.deepEqual(await run("x = 1"), { status: "empty", content: "(no output)", injected: false });
  assert.deepEqual(await run("print('before')\n\n1 / 0"), {
    status: "error",
    content: "before\nZeroDivisionError: division by zero (line 3)",
    injected: false,
  });
  assert.equal((await run("def f(:\n  pass")).status, "error");
  // A wheel from the local folder is importable (loaded offline at start).
  assert.equal((await run("import agentrl_demo\nagentrl_demo.triple(14)")).content, "=> 42");
  // State does not survive a call: each runs in a fresh interpreter.
  await run("import builtins; builtins.leak = 1");
  assert.equal((await run("hasattr(__import__('builtins'), 'leak')")).content, "=> False");
});

test("escapes: host globals, the Function constructor, sockets, files and processes are out of reach", async () => {
  const probe = `
out = []
def t(name, f):
    try:
        out.append(name + " OPEN " + repr(f())[:60])
    except BaseException as e:
        out.append(name + " blocked")
def js_process():
    import js
    return js.process.pid
def pyodide_js_globals():
    import pyodide_js
    return pyodide_js.setStdout.constructor("return process.pid")()
def proxy_constructor():
    from pyodide.ffi import to_js
    return to_js({}).constructor.constructor("return process.getBuiltinModule('fs')")()
def builtin_fs():
    from pyodide.ffi import to_js
    return to_js([]).constructor.constructor("return globalThis")().process.getBuiltinModule("fs")
def real_socket():
    import sys
    for name in ["socket", "_socket", "select", "selectors"]:
        sys.modules.pop(name, None)
    import socket
    s = socket.create_connection(("127.0.0.1", ${port}), timeout=1)
    s.sendall(b"escaped")
    return s
def urlopen():
    import urllib.request
    return urllib.request.urlopen("http://127.0.0.1:${port}/", timeout=1).read()
def host_file():
    with open("${process.cwd()}/package.json") as f:
        return f.read()
def subprocess_run():
    import subprocess
    return subprocess.run(["id"], capture_output=True)
for name, f in [("js", js_process), ("pyodide_js", pyodide_js_globals), ("constructor", proxy_constructor),
                ("getBuiltinModule", builtin_fs), ("socket", real_socket), ("urlopen", urlopen),
                ("host_file", host_file), ("subprocess", subprocess_run)]:
    t(name, f)
print("\\n".join(out))
`;
  // Imports (urllib, subprocess) take a while on a loaded machine: a longer limit for this probe.
  const patient = createPythonTool({ pool, timeoutMs: 20_000, maxOutputChars: 2000 });
  const result = await patient.call({ code: probe });
  assert.equal(result.status, "ok", result.content);
  assert.deepEqual(result.content.split("\n"), [
    "js blocked",
    "pyodide_js blocked",
    "constructor blocked",
    "getBuiltinModule blocked",
    "socket blocked",
    "urlopen blocked",
    "host_file blocked",
    "subprocess blocked",
  ]);
  // Writing works, but only into the in-memory file system that dies with the process.
  assert.equal((await run("open('/tmp/x', 'w').write('hi')\nopen('/tmp/x').read()")).content, "=> 'hi'");
  assert.equal((await run("import os; os.path.exists('/tmp/x')")).content, "=> False");
  await new Promise((resolve) => setTimeout(resolve, 200));
  assert.equal(received, 0, "a byte reached the loopback server");
});

test("control: the same escapes work in plain Pyodide, so the probes above test something", () => {
  // Plain Pyodide in a throwaway child process (never in this process): js is the host's globals,
  // and a proxy's constructor is the host's Function.
  const pyodide = pathToFileURL(createRequire(import.meta.url).resolve("pyodide/pyodide.mjs")).href;
  const script = [
    `const { loadPyodide } = await import(${JSON.stringify(pyodide)});`,
    "const py = await loadPyodide({ stdout: (line) => console.log(line) });",
    "py.runPython(process.argv[1]);",
  ].join("\n");
  const probe = `
import js
print("js", js.process.pid > 0)
from pyodide.ffi import to_js
fs = to_js({}).constructor.constructor("return process.getBuiltinModule('fs')")()
print("fs", fs.existsSync("${process.cwd()}/package.json"))
`;
  const plain = spawnSync(process.execPath, ["--input-type=module", "-e", script, probe], {
    encoding: "utf8",
    timeout: 60_000,
  });
  assert.equal(plain.stdout.trim(), "js True\nfs True", plain.stderr);
});

test("a runaway loop is a timeout, a huge allocation or deep recursion an error, floods are cut; the host is unharmed", async () => {
  const before = process.memoryUsage().rss;
  let ticks = 0;
  const ticker = setInterval(() => ticks++, 20);
  const loop = await run("print('spinning')\nwhile True: pass");
  clearInterval(ticker);
  assert.deepEqual(loop, {
    status: "timeout",
    content: "spinning\nerror: timed out after 3000 ms",
    injected: false,
  });
  assert.ok(ticks >= 20, `host timers fired ${ticks} times during the guest's loop`);
  for (const program of ["x = bytearray(10**9)", "x = [0] * (10**9)"]) {
    const result = await run(program);
    assert.equal(result.status, "error", program);
    assert.match(result.content, /MemoryError/, program);
  }
  const growing = await run("a = []\nwhile True: a.append(bytearray(10**6))");
  assert.ok(growing.status === "error" || growing.status === "timeout", growing.content);
  const recursion = await run("def f(n):\n    return f(n + 1) + 1\nf(0)");
  assert.deepEqual(recursion, {
    status: "error",
    content: "RecursionError: maximum recursion depth exceeded (line 2)",
    injected: false,
  });
  const flood = await run("for i in range(10**4): print('line', i)\n'done'");
  assert.equal(flood.status, "ok");
  const lines = flood.content.split("\n");
  assert.deepEqual(lines.slice(-2), ["[output truncated]", "=> 'done'"]);
  assert.ok(flood.content.length < 260, `content has ${flood.content.length} characters`);
  const long = await run("print('y' * 10**7)");
  assert.ok(long.content.length < 260);
  assert.equal((await run("6 * 7")).content, "=> 42");
  const grown = (process.memoryUsage().rss - before) / 2 ** 20;
  assert.ok(grown < 200, `host resident memory grew by ${grown.toFixed(0)} MiB`);
});

test("through callTool: schema errors, empty or oversized programs, abort", async () => {
  assert.equal((await callTool(python, { program: "1" })).content, "error : missing argument code");
  assert.deepEqual(await run("  "), { status: "error", content: "error: empty program", injected: false });
  const small = createPythonTool({ pool, maxCodeLength: 5 });
  assert.equal((await small.call({ code: "1 + 1 + 1" })).status, "error");
  const controller = new AbortController();
  const pending = callTool(python, { code: "while True: pass" }, { signal: controller.signal });
  setTimeout(() => controller.abort(), 300);
  assert.equal((await pending).content, "error : cancelled");
  assert.throws(() => createPythonTool({ pool, timeoutMs: 0 }), /timeoutMs must be a positive integer/);
});

test("AGENTRL_FAULTS sandbox-kill: the child is really killed; the call is an infra failure, not noise; the pool recovers", async () => {
  await withFaults("seed=1,sandbox-kill=1", async () => {
    const killed = await callTool(python, { code: "print(1)" }, { key: "episode:0" });
    assert.deepEqual(
      [killed.status, killed.injected, killed.failure?.class, killed.failure?.code],
      ["error", false, "infra", "sandbox-died"],
    );
    assert.equal(killed.failure?.injected, true);
    // Without a call key nothing is injected, and the pool still serves.
    const fine = await callTool(python, { code: "print(2)" });
    assert.equal(fine.content.trim(), "2");
  });
});
