/**
 * The cache of optimised models: a program built once is loaded from the cache by the next build
 * (as another process would), gives the same outputs, and a damaged cache file is rebuilt.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { type JaxArray, np } from "../jax.ts";
import { onnxJit } from "./jit.ts";
import { defaultSpin, defaultThreads } from "./runtime.ts";

const f = (x: JaxArray, w: JaxArray) => [np.exp(np.matmul(x, w).mul(0.5)).sum(-1)];

function run(): { values: number[]; cached: boolean | undefined } {
  const program = onnxJit(f);
  const x = np.array([1, 2, 3, 4, 5, 6], { shape: [2, 3] });
  const w = np.array([0.1, -0.2, 0.3, 0.4, -0.5, 0.6], { shape: [3, 2] });
  const [out] = program(x, w) as unknown as JaxArray[];
  const values = Array.from(out.dataSync() as Float32Array);
  const [info] = program.programs();
  program.dispose();
  assert.equal(info.kind, "onnx", info.reason);
  return { values, cached: info.cached };
}

test("an optimised program is cached on disk, reloaded with the same outputs, and rebuilt when damaged", () => {
  const dir = mkdtempSync(join(tmpdir(), "agentrl-ort-cache-"));
  const before = process.env.AGENTRL_ORT_CACHE;
  process.env.AGENTRL_ORT_CACHE = dir;
  try {
    const first = run();
    assert.equal(first.cached, false);
    const files = readdirSync(dir);
    assert.equal(files.length, 1, `one model in the cache, got ${files}`);
    assert.match(files[0], /^[0-9a-f]{40}\.onnx$/);

    const second = run();
    assert.equal(second.cached, true);
    assert.deepEqual(second.values, first.values);

    writeFileSync(join(dir, files[0]), "not a model");
    const third = run();
    assert.equal(third.cached, false, "a damaged file is not loaded");
    assert.deepEqual(third.values, first.values);
    assert.equal(run().cached, true, "the rebuilt model replaced the damaged one");

    process.env.AGENTRL_ORT_CACHE = "off";
    assert.equal(run().cached, false);
  } finally {
    if (before === undefined) delete process.env.AGENTRL_ORT_CACHE;
    else process.env.AGENTRL_ORT_CACHE = before;
    rmSync(dir, { recursive: true, force: true });
  }
});

test("ONNX Runtime settings from the environment: defaults, valid values, and a clear error naming the variable", () => {
  const saved = { threads: process.env.AGENTRL_ORT_THREADS, spin: process.env.AGENTRL_ORT_SPIN };
  try {
    delete process.env.AGENTRL_ORT_THREADS;
    delete process.env.AGENTRL_ORT_SPIN;
    assert.equal(defaultThreads(), 2);
    assert.equal(defaultSpin(), true);
    process.env.AGENTRL_ORT_THREADS = "1";
    process.env.AGENTRL_ORT_SPIN = "0";
    assert.equal(defaultThreads(), 1);
    assert.equal(defaultSpin(), false);
    process.env.AGENTRL_ORT_THREADS = "two";
    process.env.AGENTRL_ORT_SPIN = "yes";
    assert.throws(() => defaultThreads(), /AGENTRL_ORT_THREADS must be a positive integer, got "two"/);
    assert.throws(() => defaultSpin(), /AGENTRL_ORT_SPIN must be 0 or 1, got "yes"/);
  } finally {
    for (const [key, value] of [
      ["AGENTRL_ORT_THREADS", saved.threads],
      ["AGENTRL_ORT_SPIN", saved.spin],
    ] as const) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  }
});

test("ONNX Runtime's telemetry stays off: no device id or event database in the home folder", (t) => {
  const home = mkdtempSync(join(tmpdir(), "agentrl-ort-home-"));
  t.after(() => rmSync(home, { recursive: true, force: true }));
  const runtime = new URL("./runtime.ts", import.meta.url).href;
  const script = `
    const { OrtProgram } = await import(${JSON.stringify(runtime)});
    const { encodeModel } = await import(${JSON.stringify(new URL("./proto.ts", import.meta.url).href)});
    const io = [{ name: "x", dtype: "float32", shape: [2] }];
    const graph = { nodes: [{ op: "Neg", inputs: ["x"], outputs: ["y"] }], initializers: [], inputs: io,
      outputs: [{ name: "y", dtype: "float32", shape: [2] }] };
    const program = new OrtProgram(encodeModel(graph), graph.inputs, graph.outputs);
    console.log(Array.from(program.run([Float32Array.of(1, -2)])[0]).join(","));`;
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, AGENTRL_ORT_CACHE: "off" };
  delete env.ORT_DISABLE_TELEMETRY;
  const out = execFileSync(process.execPath, ["--input-type=module", "-e", script], {
    env,
    encoding: "utf8",
  });
  assert.equal(out.trim(), "-1,2");
  assert.deepEqual(readdirSync(home), [], "nothing written to the home folder");
});
