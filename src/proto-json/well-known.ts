/** Which messages keep their standard proto JSON instead of the bridge's own mapping. */
import type { DescMessage } from "@bufbuild/protobuf";

/**
 * Every google.protobuf message (Timestamp, Struct, Value, FieldMask, Duration, wrappers, Any, Empty)
 * has a special JSON form that clients already know; the bridge hands those to protobuf-es untouched.
 */
export function isWellKnownMessage(desc: DescMessage): boolean {
  return desc.typeName.startsWith("google.protobuf.");
}

/** The full name of google.protobuf.FieldMask, the type update_mask must have to be derived. */
export const FIELD_MASK_TYPE = "google.protobuf.FieldMask";
