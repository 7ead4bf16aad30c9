/**
 * The one update-mask rule of every admin update, whatever the protocol: a path naming a field takes
 * that field's value from the request, and a field that is a message is replaced whole (absent from
 * the request: cleared); a dotted path (`network_config.base_url`) changes only that sub-field.
 * Output-only fields (google.api.field_behavior) are ignored, so a read sent back as an update works;
 * immutable fields may be sent back unchanged but not changed.
 */
import { clone, equals, getOption, type DescField, type DescMessage, type Message } from "@bufbuild/protobuf";
import { reflect, type ReflectMessage } from "@bufbuild/protobuf/reflect";
import { invalidField } from "../errors.js";
import { FieldBehavior, field_behavior } from "../../gen/google/api/field_behavior_pb.js";

/**
 * Reading an option decodes the descriptor's options into a new message each time, and a REST answer asks
 * for every field of every message it writes: each field's answer is kept (descriptors never change).
 */
const declared = new WeakMap<DescField, readonly FieldBehavior[]>();

/** The declared behaviours of a field. */
export function fieldBehaviors(field: DescField): readonly FieldBehavior[] {
  let behaviors = declared.get(field);
  if (behaviors === undefined) {
    behaviors = Object.freeze(getOption(field, field_behavior));
    declared.set(field, behaviors);
  }
  return behaviors;
}

/** Whether the gateway sets the field and ignores it on input. */
export function isOutputOnly(field: DescField): boolean {
  return fieldBehaviors(field).includes(FieldBehavior.OUTPUT_ONLY);
}

/** Whether the field is taken on input and never returned. */
export function isInputOnly(field: DescField): boolean {
  return fieldBehaviors(field).includes(FieldBehavior.INPUT_ONLY);
}

/** Whether the field is fixed at creation. */
export function isImmutable(field: DescField): boolean {
  return fieldBehaviors(field).includes(FieldBehavior.IMMUTABLE);
}

/** Whether a request must set the field at creation. */
export function isRequired(field: DescField): boolean {
  return fieldBehaviors(field).includes(FieldBehavior.REQUIRED);
}

/**
 * `current` with every path of `paths` taken from `patch`; neither input is changed. An empty mask, an
 * unknown path or a changed immutable field is a 400 naming it. `what` names the entity in messages
 * ("a provider").
 */
export function applyFieldMask<T extends Message>(desc: DescMessage, current: T, patch: T, paths: readonly string[], what: string): T {
  if (paths.length === 0) throw invalidField("update_mask", "names no field: send at least one field to change");
  const next = clone(desc, current) as T;
  const target = reflect(desc, next);
  const source = reflect(desc, patch);
  for (const path of paths) applyPath(target, source, path, what);
  return next;
}

function applyPath(target: ReflectMessage, source: ReflectMessage | undefined, path: string, what: string): void {
  const parts = path.split(".");
  let at: ReflectMessage = target;
  let from = source;
  for (const [i, name] of parts.entries()) {
    const field = at.desc.fields.find((f) => f.name === name);
    const prefix = parts.slice(0, i + 1).join(".");
    if (field === undefined) {
      throw invalidField("update_mask", `"${path}" is not a field of ${i === 0 ? what : parts.slice(0, i).join(".")}`);
    }
    if (isOutputOnly(field)) return;
    // An immutable field is compared whole, even under a dotted path into it.
    if (isImmutable(field)) {
      if (!sameValue(at, from, field)) throw invalidField(prefix, "is immutable after creation; delete this one and create it again to change it");
      return;
    }
    if (i === parts.length - 1) {
      if (from !== undefined && from.isSet(field)) at.set(field, from.get(field));
      else at.clear(field);
      return;
    }
    if (field.fieldKind !== "message") {
      throw invalidField("update_mask", `"${path}": ${prefix} is not a message, so it has no field "${parts[i + 1] ?? ""}"`);
    }
    if (!at.isSet(field)) at.set(field, reflect(field.message));
    at = at.get(field) as ReflectMessage;
    from = from !== undefined && from.isSet(field) ? (from.get(field) as ReflectMessage) : undefined;
  }
}

/** Whether `field` holds the same value in both (unset on one side equals unset on the other only). */
function sameValue(a: ReflectMessage, b: ReflectMessage | undefined, field: DescField): boolean {
  const left = reflect(a.desc);
  const right = reflect(a.desc);
  if (a.isSet(field)) left.set(field, a.get(field));
  if (b !== undefined && b.isSet(field)) right.set(field, b.get(field));
  return equals(a.desc, left.message, right.message);
}
