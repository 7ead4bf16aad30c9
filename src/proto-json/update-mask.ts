/**
 * Derives update_mask from the JSON keys a client sent, so that PUT and PATCH change exactly what the
 * body names: presence matters, `[]` is present, an omitted key is untouched.
 */
import type { DescMessage } from "@bufbuild/protobuf";
import { isJsonObject } from "./message-from-json.js";
import { isWellKnownMessage } from "./well-known.js";

/**
 * FieldMask paths (proto field names) for the keys of `json`, relative to `desc`. Keys holding an
 * object for a plain singular message field are followed down, so `{"client":{"a":1}}` gives
 * `client.a`; maps, lists and well-known types are leaves.
 */
export function updateMaskPaths(desc: DescMessage, json: Record<string, unknown>, prefix = ""): string[] {
  const paths: string[] = [];
  for (const [key, value] of Object.entries(json)) {
    const field = desc.fields.find((f) => f.name === key);
    if (field === undefined) continue;
    const path = prefix + key;
    if (field.fieldKind === "message" && !isWellKnownMessage(field.message) && isJsonObject(value)) {
      paths.push(...updateMaskPaths(field.message, value, `${path}.`));
    } else {
      paths.push(path);
    }
  }
  return paths;
}
