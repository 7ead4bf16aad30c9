/**
 * Derives update_mask from the JSON keys a client sent, so that an update changes exactly what the body
 * names: presence matters, `[]` is present, an omitted key is untouched.
 */
import type { DescMessage } from "@bufbuild/protobuf";
import { isJsonObject } from "./message-from-json.js";
import { isWellKnownMessage } from "./well-known.js";

/**
 * FieldMask paths (proto field names) for the keys of `json`, relative to `desc`.
 * - `replace` (PUT): one path per top-level key, so a nested message the body names is replaced whole,
 *   as a read-modify-write client expects when it sends back what it read.
 * - `merge` (PATCH, in the manner of JSON merge patch): objects for plain singular message fields are
 *   followed down, so `{"client":{"a":1}}` gives `client.a` and the rest of `client` is kept.
 * Maps, lists and well-known types are always leaves.
 */
export function updateMaskPaths(desc: DescMessage, json: Record<string, unknown>, mode: "replace" | "merge", prefix = ""): string[] {
  const paths: string[] = [];
  for (const [key, value] of Object.entries(json)) {
    const field = desc.fields.find((f) => f.name === key);
    if (field === undefined) continue;
    const path = prefix + key;
    if (mode === "merge" && field.fieldKind === "message" && !isWellKnownMessage(field.message) && isJsonObject(value)) {
      paths.push(...updateMaskPaths(field.message, value, mode, `${path}.`));
    } else {
      paths.push(path);
    }
  }
  return paths;
}
