/**
 * Reads an admin entity (a provider, a virtual key, an MCP client) from JSON exactly as the API reads its
 * body, for the places that take the same entity from elsewhere (the config file): the same field names,
 * types, enum names and 400s, so the file and the API cannot drift apart. Output-only fields are
 * dropped, as an update drops them, so what a GET shows can be pasted into the file.
 */
import type { DescMessage } from "@bufbuild/protobuf";
import { reflect } from "@bufbuild/protobuf/reflect";
import { isOutputOnly } from "./field-mask.js";
import { isJsonObject, mergeMessageJson } from "./message-from-json.js";
import { presenceListItemMessage } from "./presence-list.js";
import { isWellKnownMessage } from "./well-known.js";

/**
 * Checks `json` as a `desc` and returns it without output-only fields (at any depth); the values keep
 * their JSON form. Throws the API's 400, whose `field` is the path relative to `json`.
 */
export function readEntityJson(desc: DescMessage, json: unknown): Record<string, unknown> {
  mergeMessageJson(reflect(desc), json, "", {});
  return withoutOutputOnly(desc, json as Record<string, unknown>);
}

function withoutOutputOnly(desc: DescMessage, json: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(json)) {
    const field = desc.fields.find((f) => f.name === key);
    if (field === undefined || isOutputOnly(field)) continue;
    const declared = field.fieldKind === "message" || (field.fieldKind === "list" && field.listKind === "message") ? field.message : undefined;
    // A presence-aware list is the bare array of its items.
    const message = declared === undefined ? undefined : (presenceListItemMessage(declared) ?? declared);
    if (message === undefined || isWellKnownMessage(message)) out[key] = value;
    else if (Array.isArray(value)) out[key] = value.map((item: unknown) => (isJsonObject(item) ? withoutOutputOnly(message, item) : item));
    else out[key] = isJsonObject(value) ? withoutOutputOnly(message, value) : value;
  }
  return out;
}

/** Splits a field path such as `keys[0].aliases["gpt-4o"]` into its keys and indexes. */
export function fieldPathSegments(path: string): (string | number)[] {
  const segments: (string | number)[] = [];
  const token = /\.?([^.[\]"]+)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]/gy;
  let match: RegExpExecArray | null;
  while ((match = token.exec(path)) !== null) {
    if (match[1] !== undefined) segments.push(match[1]);
    else if (match[2] !== undefined) segments.push(Number(match[2]));
    else if (match[3] !== undefined) segments.push(JSON.parse(match[3]) as string);
    if (token.lastIndex === path.length) break;
  }
  return segments;
}
