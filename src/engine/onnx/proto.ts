/**
 * Serialises a graph (nodes, initializers, inputs, outputs) to ONNX model bytes with the
 * compiled ONNX protobuf schema (`onnx-buf`, published from the jax-js repository) and
 * `@bufbuild/protobuf`. IR version 8, opset 18, plus Microsoft's contrib domain for FusedMatMul.
 */
import { create, toBinary } from "@bufbuild/protobuf";
import {
  type AttributeProto,
  AttributeProto_AttributeType,
  GraphProtoSchema,
  ModelProtoSchema,
  NodeProtoSchema,
  type TensorProto,
  TensorProto_DataLocation,
  TensorProto_DataType,
  TensorProtoSchema,
  type ValueInfoProto,
  ValueInfoProtoSchema,
} from "onnx-buf";

/** Element types the converter emits. */
export type OnnxDType = "float32" | "float64" | "int32" | "int64" | "bool";

const ELEMENT_TYPE: Record<OnnxDType, TensorProto_DataType> = {
  float32: TensorProto_DataType.FLOAT,
  float64: TensorProto_DataType.DOUBLE,
  int32: TensorProto_DataType.INT32,
  int64: TensorProto_DataType.INT64,
  bool: TensorProto_DataType.BOOL,
};

/** ONNX's element-type number of a dtype (the `to` attribute of Cast). */
export function elementType(dtype: OnnxDType): number {
  return ELEMENT_TYPE[dtype];
}

export type AttributeValue = number | number[] | string | { float: number } | { ints: number[] };

export interface OnnxNode {
  op: string;
  domain?: string;
  inputs: string[];
  outputs: string[];
  attributes?: Record<string, AttributeValue>;
}

export interface OnnxTensor {
  name: string;
  dtype: OnnxDType;
  shape: number[];
  data: Float32Array | Float64Array | Int32Array | BigInt64Array | Uint8Array;
  /**
   * Stored outside the model: its bytes are not copied into the protobuf, the model names them
   * (location = the tensor's name) and the session is handed `data` as that external file
   * (`externalData` in runtime.ts). Large weights baked into a program go this way.
   */
  external?: boolean;
}

export interface OnnxValueInfo {
  name: string;
  dtype: OnnxDType;
  shape: number[];
}

export interface OnnxGraph {
  nodes: OnnxNode[];
  initializers: OnnxTensor[];
  inputs: OnnxValueInfo[];
  outputs: OnnxValueInfo[];
}

function attribute(name: string, value: AttributeValue): AttributeProto {
  const base = { name } as Partial<AttributeProto>;
  if (typeof value === "string")
    return {
      ...base,
      type: AttributeProto_AttributeType.STRING,
      s: new TextEncoder().encode(value),
    } as never;
  if (typeof value === "number") {
    if (!Number.isInteger(value))
      return { ...base, type: AttributeProto_AttributeType.FLOAT, f: value } as never;
    return { ...base, type: AttributeProto_AttributeType.INT, i: BigInt(value) } as never;
  }
  if (Array.isArray(value))
    return { ...base, type: AttributeProto_AttributeType.INTS, ints: value.map(BigInt) } as never;
  if ("float" in value) return { ...base, type: AttributeProto_AttributeType.FLOAT, f: value.float } as never;
  return { ...base, type: AttributeProto_AttributeType.INTS, ints: value.ints.map(BigInt) } as never;
}

function tensorProto(tensor: OnnxTensor): TensorProto {
  if (tensor.external)
    return create(TensorProtoSchema, {
      name: tensor.name,
      dims: tensor.shape.map(BigInt),
      dataType: ELEMENT_TYPE[tensor.dtype],
      dataLocation: TensorProto_DataLocation.EXTERNAL,
      externalData: [
        { key: "location", value: tensor.name },
        { key: "offset", value: "0" },
        { key: "length", value: String(tensor.data.byteLength) },
      ],
    });
  const bytes = new Uint8Array(
    tensor.data.buffer as ArrayBuffer,
    tensor.data.byteOffset,
    tensor.data.byteLength,
  );
  return create(TensorProtoSchema, {
    name: tensor.name,
    dims: tensor.shape.map(BigInt),
    dataType: ELEMENT_TYPE[tensor.dtype],
    rawData: bytes,
  });
}

function valueInfo(info: OnnxValueInfo): ValueInfoProto {
  return create(ValueInfoProtoSchema, {
    name: info.name,
    type: {
      value: {
        case: "tensorType",
        value: {
          elemType: ELEMENT_TYPE[info.dtype],
          shape: { dim: info.shape.map((d) => ({ value: { case: "dimValue" as const, value: BigInt(d) } })) },
        },
      },
    },
  });
}

/** The model's bytes, ready for `InferenceSession` (ir_version 8, opset 18 + com.microsoft 1). */
export function encodeModel(graph: OnnxGraph, name = "agentrl"): Uint8Array {
  const model = create(ModelProtoSchema, {
    irVersion: 8n,
    producerName: "agentrl",
    opsetImport: [
      { domain: "", version: 18n },
      { domain: "com.microsoft", version: 1n },
    ],
    graph: create(GraphProtoSchema, {
      name,
      node: graph.nodes.map((node, index) =>
        create(NodeProtoSchema, {
          name: `n${index}`,
          opType: node.op,
          domain: node.domain ?? "",
          input: node.inputs,
          output: node.outputs,
          attribute: Object.entries(node.attributes ?? {}).map(([key, value]) => attribute(key, value)),
        }),
      ),
      initializer: graph.initializers.map(tensorProto),
      input: graph.inputs.map(valueInfo),
      output: graph.outputs.map(valueInfo),
    }),
  });
  return toBinary(ModelProtoSchema, model);
}
