/** The relay's hand-written JSON-RPC message check gives the SDK's schemas' answer on valid and invalid messages alike. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { isJSONRPCErrorResponse, isJSONRPCNotification, isJSONRPCRequest, isJSONRPCResultResponse, JSONRPCMessageSchema } from "@modelcontextprotocol/sdk/types.js";
import { jsonRpcKind } from "../../src/mcp/json-rpc-kind.js";

/** The kind the SDK's guards give, tried in the order its Protocol tries them. */
function sdkKind(value: unknown): string | null {
  if (isJSONRPCResultResponse(value)) return "result";
  if (isJSONRPCErrorResponse(value)) return "error";
  if (isJSONRPCRequest(value)) return "request";
  if (isJSONRPCNotification(value)) return "notification";
  return null;
}

const IDS: unknown[] = [1, 0, -3, "a", "", 1.5, null, true, {}, [], Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER + 2, Number.NaN, Number.POSITIVE_INFINITY];
const METAS: unknown[] = [
  {},
  { progressToken: 3 },
  { progressToken: "t" },
  { progressToken: 2.5 },
  { progressToken: null },
  { progressToken: {} },
  { other: 1 },
  { "io.modelcontextprotocol/related-task": { taskId: "x" } },
  { "io.modelcontextprotocol/related-task": { taskId: 4 } },
  { "io.modelcontextprotocol/related-task": "x" },
  { "io.modelcontextprotocol/related-task": { taskId: "x", extra: true } },
  null,
  [],
  "meta",
];
const PARAMS: unknown[] = [{}, { name: "t", arguments: { a: 1 } }, [], null, "p", 3, ...METAS.map((_meta) => ({ _meta, x: 1 }))];
const ERRORS: unknown[] = [
  { code: -32600, message: "m" },
  { code: -32600, message: "m", data: { any: [1] } },
  { code: -32600, message: "m", extra: 1 },
  { code: 1.5, message: "m" },
  { code: "1", message: "m" },
  { code: 1 },
  { message: "m" },
  { code: Number.MAX_SAFE_INTEGER + 2, message: "m" },
  null,
  [],
  "e",
];

/** Every sample: each part of each kind varied, plus messages with missing, extra or clashing members. */
function samples(): unknown[] {
  const out: unknown[] = [null, undefined, 1, "x", [], [{ jsonrpc: "2.0", method: "m" }], {}];
  for (const jsonrpc of ["2.0", "1.0", 2, undefined]) {
    out.push({ jsonrpc, method: "m" }, { jsonrpc, id: 1, method: "m" }, { jsonrpc, id: 1, result: {} }, { jsonrpc, id: 1, error: { code: 1, message: "m" } });
  }
  for (const id of IDS) {
    out.push({ jsonrpc: "2.0", id, method: "tools/call" }, { jsonrpc: "2.0", id, result: {} }, { jsonrpc: "2.0", id, error: { code: 1, message: "m" } });
  }
  for (const method of ["tools/call", "", 3, null, undefined]) out.push({ jsonrpc: "2.0", id: 1, method }, { jsonrpc: "2.0", method });
  for (const params of [...PARAMS, undefined]) out.push({ jsonrpc: "2.0", id: 7, method: "m", params }, { jsonrpc: "2.0", method: "m", params });
  for (const result of [...PARAMS, undefined]) out.push({ jsonrpc: "2.0", id: 7, result });
  for (const error of [...ERRORS, undefined]) out.push({ jsonrpc: "2.0", id: 7, error }, { jsonrpc: "2.0", error });
  out.push(
    { jsonrpc: "2.0", id: 1, method: "m", extra: 1 },
    { jsonrpc: "2.0", method: "m", extra: 1 },
    { jsonrpc: "2.0", id: 1, result: {}, extra: 1 },
    { jsonrpc: "2.0", id: 1, error: { code: 1, message: "m" }, extra: 1 },
    { jsonrpc: "2.0", id: 1, method: "m", result: {} },
    { jsonrpc: "2.0", id: 1, result: {}, error: { code: 1, message: "m" } },
    { jsonrpc: "2.0", method: "m", error: { code: 1, message: "m" } },
    { jsonrpc: "2.0", id: undefined, method: "m" },
    { jsonrpc: "2.0", id: 1 },
    { jsonrpc: "2.0" },
    { jsonrpc: "2.0", id: 1, result: { content: [{ type: "text", text: "hi" }], isError: false, _meta: { progressToken: 1 } } },
  );
  return out;
}

describe("the relay's JSON-RPC message check", () => {
  test("gives each sample the kind the SDK's guards give it", () => {
    const all = samples();
    assert.ok(all.length > 150);
    for (const value of all) {
      assert.equal(jsonRpcKind(value), sdkKind(value), `for ${JSON.stringify(value)}`);
      assert.equal(jsonRpcKind(value) !== null, JSONRPCMessageSchema.safeParse(value).success, `JSONRPCMessageSchema for ${JSON.stringify(value)}`);
    }
  });

  test("finds messages of every kind among the samples, and refusals", () => {
    const kinds = new Set(samples().map(jsonRpcKind));
    assert.deepEqual([...kinds].sort(), ["error", "notification", "request", "result", null].sort());
  });
});
