/**
 * The one generic enum rule of the REST JSON: a value's public name is the lowercase suffix after
 * the enum's shared prefix (CONNECTION_TYPE_HTTP <-> "http", AUTH_TYPE_PER_USER_HEADERS <->
 * "per_user_headers"). The REST bridge uses it for JSON; the services use it to move between proto enums
 * and the domain's string unions.
 */
import type { DescEnum, DescEnumValue } from "@bufbuild/protobuf";

/** The public name of one enum value. */
export function enumValueRestName(value: DescEnumValue): string {
  // protobuf-es reports sharedPrefix in lower case ("connection_type_").
  const prefix = value.parent.sharedPrefix;
  const name = value.name.toLowerCase();
  return prefix !== undefined && name.startsWith(prefix) ? name.slice(prefix.length) : name;
}

/**
 * Whether a value may be sent by a client: the zero `*_UNSPECIFIED` value only exists so that "not
 * set" has a number, so a client that means it omits the field instead.
 */
export function isInputEnumValue(value: DescEnumValue): boolean {
  return !(value.number === 0 && /(^|_)UNSPECIFIED$/.test(value.name));
}

const inputNames = new WeakMap<DescEnum, ReadonlyMap<string, DescEnumValue>>();

/** Public name -> value for the values a client may send. */
export function enumInputValues(desc: DescEnum): ReadonlyMap<string, DescEnumValue> {
  let names = inputNames.get(desc);
  if (names === undefined) {
    names = new Map(desc.values.filter(isInputEnumValue).map((v) => [enumValueRestName(v), v]));
    inputNames.set(desc, names);
  }
  return names;
}

/** The public name for a number, or undefined for a number the enum does not declare. */
export function enumNumberRestName(desc: DescEnum, number: number): string | undefined {
  const value = desc.value[number];
  return value === undefined ? undefined : enumValueRestName(value);
}

/** The number of the value a client may send under this public name, or undefined. */
export function enumInputNumber(desc: DescEnum, name: string): number | undefined {
  return enumInputValues(desc).get(name)?.number;
}
