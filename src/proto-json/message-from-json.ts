/**
 * Reads REST JSON into a protobuf message: proto field names only, enums by their REST name, and a
 * 400 naming the full path for every unknown field, wrong type or out-of-range value. Well-known types
 * keep their standard proto JSON and go through protobuf-es.
 */
import { fromJson, type DescField, type DescMessage, type DescOneof, type JsonValue, type Registry } from "@bufbuild/protobuf";
import { reflect, type ReflectList, type ReflectMap, type ReflectMessage } from "@bufbuild/protobuf/reflect";
import { enumFromJson, scalarFromJson, scalarFromText } from "./scalar-input.js";
import { invalidRequest } from "./input-error.js";
import { presenceListValues } from "./presence-list.js";
import { isWellKnownMessage } from "./well-known.js";

/** What the reader needs besides the JSON. */
export interface JsonReadContext {
  /** Resolves google.protobuf.Any payloads. */
  readonly registry?: Registry | undefined;
  /** Top-level field names the body may not set, with the reason (e.g. bound to the URL path). */
  readonly reserved?: ReadonlyMap<string, string> | undefined;
}

/** Deep enough for every real message; bounds recursion on hostile input. */
const MAX_DEPTH = 64;

/** Merges a JSON object into `target`; `where` is the dotted path of target ("" at the request root). */
export function mergeMessageJson(target: ReflectMessage, json: unknown, where: string, ctx: JsonReadContext): void {
  mergeObject(target, json, where, ctx, 0);
}

function mergeObject(target: ReflectMessage, json: unknown, where: string, ctx: JsonReadContext, depth: number): void {
  if (!isJsonObject(json)) throw expectedObject(where, json);
  if (depth > MAX_DEPTH) throw invalidRequest(`${where}: JSON nested deeper than ${MAX_DEPTH} levels`, where);
  const fields = fieldsByName(target.desc);
  const oneofs = new Map<DescOneof, string>();
  for (const [key, value] of Object.entries(json)) {
    const path = where === "" ? key : `${where}.${key}`;
    const field = fields.get(key);
    if (field === undefined) throw unknownField(path, target.desc, key);
    const reserved = depth === 0 ? ctx.reserved?.get(key) : undefined;
    if (reserved !== undefined) throw invalidRequest(`field "${path}" ${reserved}`, path);
    // null means "not set" in proto JSON, except where null is itself a value.
    if (value === null && !acceptsNull(field)) continue;
    if (field.oneof !== undefined) {
      const other = oneofs.get(field.oneof);
      if (other !== undefined) {
        throw invalidRequest(`${path}: only one of "${other}" and "${key}" may be set (oneof ${field.oneof.name})`, path);
      }
      oneofs.set(field.oneof, key);
    }
    setField(target, field, value, path, ctx, depth);
  }
}

function setField(target: ReflectMessage, field: DescField, value: unknown, path: string, ctx: JsonReadContext, depth: number): void {
  switch (field.fieldKind) {
    case "scalar":
      target.set(field, scalarFromJson(field.scalar, field.longAsString, value, path));
      return;
    case "enum":
      target.set(field, enumValue(field.enum.typeName, value, () => enumFromJson(field.enum, value, path)));
      return;
    case "message":
      target.set(field, messageValue(field.message, value, path, ctx, depth));
      return;
    case "list": {
      if (!Array.isArray(value)) throw invalidRequest(`${path}: expected an array, got ${kindOf(value)}`, path);
      const list = target.get(field) as ReflectList;
      value.forEach((item: unknown, i) => {
        const at = `${path}[${i}]`;
        switch (field.listKind) {
          case "scalar":
            list.add(scalarFromJson(field.scalar, field.longAsString, item, at));
            break;
          case "enum":
            list.add(enumValue(field.enum.typeName, item, () => enumFromJson(field.enum, item, at)));
            break;
          case "message":
            list.add(messageValue(field.message, item, at, ctx, depth));
            break;
        }
      });
      return;
    }
    case "map": {
      if (!isJsonObject(value)) throw invalidRequest(`${path}: expected an object, got ${kindOf(value)}`, path);
      const map = target.get(field) as ReflectMap;
      for (const [rawKey, item] of Object.entries(value)) {
        const at = `${path}[${JSON.stringify(rawKey)}]`;
        const key = scalarFromText(field.mapKey, false, rawKey, `${at} (key)`);
        if (item === null) throw invalidRequest(`${at}: a map value cannot be null`, at);
        switch (field.mapKind) {
          case "scalar":
            map.set(key, scalarFromJson(field.scalar, false, item, at));
            break;
          case "enum":
            map.set(key, enumValue(field.enum.typeName, item, () => enumFromJson(field.enum, item, at)));
            break;
          case "message":
            map.set(key, messageValue(field.message, item, at, ctx, depth));
            break;
        }
      }
      return;
    }
  }
}

/** Reads a JSON value as a message of type `desc` (standard proto JSON for well-known types). */
export function messageFromJson(desc: DescMessage, json: unknown, where: string, ctx: JsonReadContext): ReflectMessage {
  return messageValue(desc, json, where, ctx, 0);
}

function messageValue(desc: DescMessage, value: unknown, path: string, ctx: JsonReadContext, depth: number): ReflectMessage {
  if (isWellKnownMessage(desc)) {
    try {
      return reflect(desc, fromJson(desc, value as JsonValue, { registry: ctx.registry }));
    } catch (err) {
      throw invalidRequest(`${path}: ${err instanceof Error ? err.message : String(err)}`, path);
    }
  }
  const values = presenceListValues(desc);
  if (values !== undefined) {
    // Written as the bare array; items keep the field's own path (`mcp_configs[0]`).
    const list = reflect(desc);
    setField(list, values, value, path, ctx, depth + 1);
    return list;
  }
  if (value === null) throw invalidRequest(`${path}: expected an object, got null`, path);
  const child = reflect(desc);
  mergeObject(child, value, path, ctx, depth + 1);
  return child;
}

/** google.protobuf.NullValue is the one enum whose JSON is null; the rest go by their REST names. */
function enumValue(typeName: string, value: unknown, byName: () => number): number {
  return typeName === "google.protobuf.NullValue" && value === null ? 0 : byName();
}

function acceptsNull(field: DescField): boolean {
  return (
    (field.fieldKind === "message" && field.message.typeName === "google.protobuf.Value") ||
    (field.fieldKind === "enum" && field.enum.typeName === "google.protobuf.NullValue")
  );
}

function unknownField(path: string, desc: DescMessage, key: string) {
  const camel = desc.fields.find((f) => f.jsonName === key && f.name !== key);
  const hint = camel === undefined ? "" : `; field names are snake_case: "${camel.name}"`;
  return invalidRequest(`unknown field "${path}"${hint}`, path);
}

function expectedObject(where: string, json: unknown) {
  const subject = where === "" ? "request body" : where;
  return invalidRequest(`${subject}: expected a JSON object, got ${kindOf(json)}`, where === "" ? undefined : where);
}

const fieldIndex = new WeakMap<DescMessage, ReadonlyMap<string, DescField>>();

function fieldsByName(desc: DescMessage): ReadonlyMap<string, DescField> {
  let index = fieldIndex.get(desc);
  if (index === undefined) {
    index = new Map(desc.fields.map((f) => [f.name, f]));
    fieldIndex.set(desc, index);
  }
  return index;
}

/** Whether a parsed JSON value is an object (not null, not an array). */
export function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function kindOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return "an object";
  if (typeof value === "string") return "a string";
  if (typeof value === "number") return "a number";
  return `a ${typeof value}`;
}
