/**
 * Presence-aware lists. A proto3 `repeated` field cannot tell an omitted list from `[]`; where the two
 * mean different things the field is a message named `...List` whose only field is `repeated ... values`.
 * Such a message has no JSON shape of its own: REST JSON and the config file write it as the bare array,
 * and the field being unset (omitted, or null in an update) is the third state.
 */
import type { DescField, DescMessage } from "@bufbuild/protobuf";

/** The `values` field of a presence-aware list message, or undefined for any other message. */
export function presenceListValues(desc: DescMessage): (DescField & { fieldKind: "list" }) | undefined {
  if (!desc.name.endsWith("List") || desc.fields.length !== 1) return undefined;
  const [field] = desc.fields;
  return field !== undefined && field.fieldKind === "list" && field.name === "values" ? field : undefined;
}

/** The message of each item when `desc` is a presence-aware list of messages. */
export function presenceListItemMessage(desc: DescMessage): DescMessage | undefined {
  const values = presenceListValues(desc);
  return values?.listKind === "message" ? values.message : undefined;
}
