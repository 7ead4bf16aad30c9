/**
 * Writes a response message as REST JSON: standard proto JSON with proto field names and every
 * implicit default present, then enums renamed to their REST names and 64-bit integers written as
 * numbers whenever they are exact. Well-known types keep their standard proto JSON.
 */
import { ScalarType, toJson, type DescEnum, type DescField, type DescMessage, type JsonValue, type Message, type Registry } from "@bufbuild/protobuf";
import { enumValueRestName } from "./enum-names.js";
import { isInputOnly } from "./field-mask.js";
import { presenceListValues } from "./presence-list.js";
import { isWellKnownMessage } from "./well-known.js";

type JsonObject = { [key: string]: JsonValue };

/** The REST JSON of a message. */
export function messageToRestJson(desc: DescMessage, message: Message, registry?: Registry): JsonValue {
  const json = toJson(desc, message, { useProtoFieldName: true, alwaysEmitImplicit: true, registry });
  if (!isWellKnownMessage(desc) && isObject(json)) adaptMessage(desc, json);
  return json;
}

function adaptMessage(desc: DescMessage, json: JsonObject): void {
  for (const field of desc.fields) {
    const value = json[field.name];
    if (value === undefined) continue;
    // An input-only field is never an answer; emitted as an empty default it would come back in a
    // read-modify-write as if the client had sent it.
    if (isInputOnly(field)) {
      delete json[field.name];
      continue;
    }
    switch (field.fieldKind) {
      case "scalar":
        json[field.name] = adaptScalar(field.scalar, value);
        break;
      case "enum":
        json[field.name] = adaptEnum(field.enum, value);
        break;
      case "message": {
        const values = presenceListValues(field.message);
        if (values !== undefined && isObject(value)) {
          // A presence-aware list is written as its bare array.
          const items = value[values.name] ?? [];
          json[field.name] = items;
          adaptItems(values, items);
        } else {
          adaptNested(field.message, value);
        }
        break;
      }
      case "list":
        adaptItems(field, value);
        break;
      case "map":
        if (!isObject(value)) break;
        for (const [key, item] of Object.entries(value)) {
          if (field.mapKind === "scalar") value[key] = adaptScalar(field.scalar, item);
          else if (field.mapKind === "enum") value[key] = adaptEnum(field.enum, item);
          else adaptNested(field.message, item);
        }
        break;
    }
  }
}

function adaptItems(field: DescField & { fieldKind: "list" }, value: JsonValue): void {
  if (!Array.isArray(value)) return;
  for (let i = 0; i < value.length; i++) {
    const item = value[i] as JsonValue;
    if (field.listKind === "scalar") value[i] = adaptScalar(field.scalar, item);
    else if (field.listKind === "enum") value[i] = adaptEnum(field.enum, item);
    else adaptNested(field.message, item);
  }
}

function adaptNested(desc: DescMessage, value: JsonValue): void {
  if (!isWellKnownMessage(desc) && isObject(value)) adaptMessage(desc, value);
}

function adaptScalar(type: ScalarType, value: JsonValue): JsonValue {
  if (typeof value !== "string" || !is64Bit(type)) return value;
  const n = Number(value);
  return Number.isSafeInteger(n) ? n : value;
}

function adaptEnum(desc: DescEnum, value: JsonValue): JsonValue {
  if (typeof value !== "string" || desc.typeName === "google.protobuf.NullValue") return value;
  const known = desc.values.find((v) => v.name === value);
  return known === undefined ? value : enumValueRestName(known);
}

function is64Bit(type: ScalarType): boolean {
  return (
    type === ScalarType.INT64 ||
    type === ScalarType.UINT64 ||
    type === ScalarType.SINT64 ||
    type === ScalarType.FIXED64 ||
    type === ScalarType.SFIXED64
  );
}

function isObject(value: JsonValue): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
