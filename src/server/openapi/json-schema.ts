/** Small builders for the hand-written JSON Schemas of the OpenAPI document. */
import type { Schema } from "../rest/openapi.js";

/** A string, with what it holds when that is worth saying. */
export function text(description?: string): Schema {
  return description === undefined ? { type: "string" } : { type: "string", description };
}

/** A string that is always `value`. */
export function constant(value: string): Schema {
  return { type: "string", const: value };
}

/** An integer. */
export const INTEGER: Schema = { type: "integer" };

/** A boolean. */
export const BOOLEAN: Schema = { type: "boolean" };

/** Any JSON object. */
export const ANY_OBJECT: Schema = { type: "object", additionalProperties: true };

/** A list of `items`. */
export function arrayOf(items: Schema, extra: Schema = {}): Schema {
  return { type: "array", items, ...extra };
}

/** An object with these properties that may carry others too (wire objects grow new fields). */
export function openObject(properties: Record<string, Schema>, required: readonly string[] = [], description?: string): Schema {
  return {
    type: "object",
    ...(required.length === 0 ? {} : { required }),
    ...(description === undefined ? {} : { description }),
    properties,
    additionalProperties: true,
  };
}
