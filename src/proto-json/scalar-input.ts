/**
 * Turns one client-sent value (a JSON value, or the text of a path or query parameter) into a field's
 * scalar or enum value, with a 400 that names where the value was and what was expected.
 */
import { ScalarType, type DescEnum } from "@bufbuild/protobuf";
import type { ScalarValue } from "@bufbuild/protobuf/reflect";
import { base64Decode } from "@bufbuild/protobuf/wire";
import { enumInputValues } from "./enum-names.js";
import { invalidRequest } from "./input-error.js";

const INT32 = { min: -(2n ** 31n), max: 2n ** 31n - 1n, name: "int32" };
const UINT32 = { min: 0n, max: 2n ** 32n - 1n, name: "uint32" };
const INT64 = { min: -(2n ** 63n), max: 2n ** 63n - 1n, name: "int64" };
const UINT64 = { min: 0n, max: 2n ** 64n - 1n, name: "uint64" };
const FLOAT32_MAX = 3.4028234663852886e38;
const DECIMAL_INTEGER = /^-?[0-9]+$/;
const DECIMAL_NUMBER = /^-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?$/;
const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Converts a JSON value; `where` names it in errors, e.g. `client.tool_sync_interval`. */
export function scalarFromJson(type: ScalarType, longAsString: boolean, value: unknown, where: string): ScalarValue {
  switch (type) {
    case ScalarType.STRING:
      if (typeof value !== "string") throw expected(where, "a string", value);
      if (LONE_SURROGATE.test(value)) throw invalidRequest(`${where}: text contains an unpaired UTF-16 surrogate`, where);
      // PostgreSQL cannot store or look up a NUL, so no field of the gateway's can hold one.
      if (value.includes("\u0000")) throw invalidRequest(`${where}: text contains a NUL character (U+0000)`, where);
      return value;
    case ScalarType.BOOL:
      if (typeof value !== "boolean") throw expected(where, "a boolean", value);
      return value;
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return Number(integer(value, INT32, where));
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return Number(integer(value, UINT32, where));
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64: {
      const n = integer(value, INT64, where);
      return longAsString ? n.toString() : n;
    }
    case ScalarType.UINT64:
    case ScalarType.FIXED64: {
      const n = integer(value, UINT64, where);
      return longAsString ? n.toString() : n;
    }
    case ScalarType.DOUBLE:
      return float(value, where, false);
    case ScalarType.FLOAT:
      return float(value, where, true);
    case ScalarType.BYTES:
      if (typeof value !== "string" || !BASE64.test(value)) throw expected(where, "a base64 string", value);
      return base64Decode(value);
  }
}

/** Converts the text of a path or query parameter. */
export function scalarFromText(type: ScalarType, longAsString: boolean, text: string, where: string): ScalarValue {
  if (type === ScalarType.BOOL) {
    if (text === "true") return true;
    if (text === "false") return false;
    throw invalidRequest(`${where}: expected true or false, got "${text}"`, where);
  }
  return scalarFromJson(type, longAsString, text, where);
}

/** Converts an enum value sent as its REST name (e.g. "per_user_headers"). */
export function enumFromJson(desc: DescEnum, value: unknown, where: string): number {
  const names = enumInputValues(desc);
  const found = typeof value === "string" ? names.get(value) : undefined;
  if (found !== undefined) return found.number;
  const allowed = [...names.keys()].map((n) => `"${n}"`).join(", ");
  throw invalidRequest(`${where}: expected one of ${allowed}, got ${show(value)}`, where);
}

function integer(value: unknown, range: { min: bigint; max: bigint; name: string }, where: string): bigint {
  let n: bigint;
  if (typeof value === "number") {
    if (!Number.isInteger(value)) throw expected(where, `an integer (${range.name})`, value);
    if (!Number.isSafeInteger(value)) {
      throw invalidRequest(`${where}: ${value} is not exactly representable; send it as a decimal string`, where);
    }
    n = BigInt(value);
  } else if (typeof value === "string" && DECIMAL_INTEGER.test(value)) {
    // Past 40 digits nothing fits in 64 bits; refusing early keeps BigInt off megabyte-long strings.
    if (value.length > 40) throw invalidRequest(`${where}: ${show(value)} is out of range for ${range.name}`, where);
    n = BigInt(value);
  } else {
    throw expected(where, `an integer (${range.name})`, value);
  }
  if (n < range.min || n > range.max) {
    throw invalidRequest(`${where}: ${n} is out of range for ${range.name} (${range.min} to ${range.max})`, where);
  }
  return n;
}

function float(value: unknown, where: string, single: boolean): number {
  let n: number;
  if (typeof value === "number") n = value;
  else if (value === "NaN") return NaN;
  else if (value === "Infinity") return Infinity;
  else if (value === "-Infinity") return -Infinity;
  else if (typeof value === "string" && DECIMAL_NUMBER.test(value)) n = Number(value);
  else throw expected(where, "a number", value);
  if (!Number.isFinite(n) || (single && Math.abs(n) > FLOAT32_MAX)) {
    throw invalidRequest(`${where}: ${show(value)} is out of range for ${single ? "float" : "double"}`, where);
  }
  return n;
}

function expected(where: string, what: string, value: unknown) {
  return invalidRequest(`${where}: expected ${what}, got ${show(value)}`, where);
}

/** A short description of what the client sent, for error messages. */
function show(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return "an object";
  if (typeof value === "string") return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value);
  return String(value);
}
