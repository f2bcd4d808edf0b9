/**
 * W + s·B·A for every adapted projection, as one program on ONNX Runtime (host arrays in and out,
 * as the engine's programs): the same result as lora.ts's `mergeLora` (within float32 rounding:
 * the product is summed in float32 here), built once per adapter shape and run each GRPO step to
 * sample from the merged weights. On the host `mergeLora` took seconds per step at 135M; here it
 * is one batch of small matrix products.
 */
import type { JaxArray } from "../src/engine/jax.ts";
import { np } from "../src/engine/jax.ts";
import { abstractInput, buildProgram } from "../src/engine/onnx/jit.ts";
import type { HostData } from "../src/engine/onnx/runtime.ts";
import type { HostTensor } from "../src/engine/tree.ts";
import type { HfModelConfig } from "../src/policy/hf/config.ts";
import { type LoraConfig, loraParamShapes, loraScale } from "../src/policy/hf/lora.ts";

export type LoraMerger = (
  base: Record<string, HostTensor>,
  adapter: Record<string, HostTensor>,
) => Record<string, HostTensor>;

export function createLoraMerger(
  config: LoraConfig,
  model: HfModelConfig,
  base: Record<string, HostTensor>,
): { merge: LoraMerger; dispose(): void } {
  const shapes = loraParamShapes(config, model);
  const aPaths = shapes.filter((s) => s.part === "a").map((s) => s.path);
  const weightPaths = aPaths.map((path) => path.slice(0, -2));
  const scale = loraScale(config);
  const abstract = (paths: string[], of: (path: string) => number[]) =>
    paths.map((path) => abstractInput(of(path), "float32"));
  const shapeOf = Object.fromEntries(shapes.map((s) => [s.path, s.shape]));
  const f = (ws: JaxArray[], as: JaxArray[], bs: JaxArray[]) =>
    ws.map((w, i) => w.add(np.matmul(bs[i], as[i]).mul(scale)));
  const built = buildProgram(
    f,
    [
      abstract(weightPaths, (p) => [...base[p].shape]),
      abstract(aPaths, (p) => shapeOf[p]),
      abstract(aPaths, (p) => shapeOf[`${p.slice(0, -2)}.b`]),
    ],
    3 * aPaths.length,
    `lora-merge ${JSON.stringify(config)} ${JSON.stringify(model)}`,
    { name: "lora-merge" },
  );
  if (built.kind === "fallback") throw new Error(`lora merge: ${built.reason}`);
  const program = built.program;
  return {
    merge(tensors, adapter) {
      const out = program.run([
        ...weightPaths.map((p) => tensors[p].data as HostData),
        ...aPaths.map((p) => adapter[p].data as HostData),
        ...aPaths.map((p) => adapter[`${p.slice(0, -2)}.b`].data as HostData),
      ]);
      const merged = { ...tensors };
      weightPaths.forEach((p, i) => {
        merged[p] = {
          dtype: "float32",
          shape: [...tensors[p].shape],
          data: out[i] as Float32Array<ArrayBuffer>,
        };
      });
      return merged;
    },
    dispose: () => program.dispose(),
  };
}
