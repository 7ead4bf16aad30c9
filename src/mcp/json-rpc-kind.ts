/**
 * What kind of JSON-RPC message a value is, by the rules of the MCP SDK's JSONRPCMessageSchema, checked by
 * hand: the schema parses a message with zod, which cost every message the MCP endpoints read more than the
 * rest of reading it. test/unit/mcp-json-rpc-kind.test.ts holds this to the SDK's schemas.
 */

/** A JSON-RPC message's kind; null for a value that is none of them. */
export type JsonRpcKind = "request" | "notification" | "result" | "error";

const RELATED_TASK_KEY = "io.modelcontextprotocol/related-task";

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A request id or progress token: a string or a safe integer. */
function isIdLike(value: unknown): boolean {
  return typeof value === "string" || Number.isSafeInteger(value);
}

/** The `_meta` of params or a result: an object whose progress token and related task, when present, are well formed. */
function isMeta(value: unknown): boolean {
  if (value === undefined) return true;
  if (!isRecord(value)) return false;
  const token = value["progressToken"];
  if (token !== undefined && !isIdLike(token)) return false;
  const task = value[RELATED_TASK_KEY];
  return task === undefined || (isRecord(task) && typeof task["taskId"] === "string");
}

/** Params of a request or notification, or a result: an object, its `_meta` well formed. */
function isParams(value: unknown): boolean {
  return isRecord(value) && isMeta(value["_meta"]);
}

/** Whether every key of `message` is one of `allowed` (the SDK's message schemas are strict). */
function onlyKeys(message: Record<string, unknown>, allowed: readonly string[]): boolean {
  for (const key in message) if (!allowed.includes(key)) return false;
  return true;
}

const REQUEST_KEYS = ["jsonrpc", "id", "method", "params"];
const NOTIFICATION_KEYS = ["jsonrpc", "method", "params"];
const RESULT_KEYS = ["jsonrpc", "id", "result"];
const ERROR_KEYS = ["jsonrpc", "id", "error"];

/** The kind of JSON-RPC message `value` is, or null when the SDK's JSONRPCMessageSchema would refuse it. */
export function jsonRpcKind(value: unknown): JsonRpcKind | null {
  if (!isRecord(value) || value["jsonrpc"] !== "2.0") return null;
  const id = value["id"];
  if ("method" in value) {
    if (typeof value["method"] !== "string") return null;
    const params = value["params"];
    if (params !== undefined && !isParams(params)) return null;
    if (id !== undefined) return isIdLike(id) && onlyKeys(value, REQUEST_KEYS) ? "request" : null;
    return onlyKeys(value, NOTIFICATION_KEYS) ? "notification" : null;
  }
  if ("result" in value) return isIdLike(id) && isParams(value["result"]) && onlyKeys(value, RESULT_KEYS) ? "result" : null;
  if ("error" in value) {
    const error = value["error"];
    const wellFormed = isRecord(error) && Number.isSafeInteger(error["code"]) && typeof error["message"] === "string";
    return wellFormed && (id === undefined || isIdLike(id)) && onlyKeys(value, ERROR_KEYS) ? "error" : null;
  }
  return null;
}
