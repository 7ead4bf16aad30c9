/**
 * Who may call each RPC, as its proto declares with the `(gw.api.v1.access)` method option. Nothing here
 * lists services or methods: the descriptors say it, and an RPC that says nothing is refused.
 */
import { getOption, type DescMethod } from "@bufbuild/protobuf";
import { Access, access } from "../../gen/gw/api/v1/access_pb.js";

/** Reading an option decodes it from the descriptor's options, so each method's answer is kept. */
const declared = new WeakMap<DescMethod, Access | undefined>();

/** The access `method` declares, or undefined when it declares none (or a value this build does not know). */
export function accessOf(method: DescMethod): Access | undefined {
  if (declared.has(method)) return declared.get(method);
  const value = getOption(method, access);
  const known = value === Access.ADMIN || value === Access.CALLER || value === Access.PUBLIC ? value : undefined;
  declared.set(method, known);
  return known;
}

/** The full name of a method as Connect routes it, e.g. `gw.admin.v1.SessionService/Login`. */
export function methodName(method: DescMethod): string {
  return `${method.parent.typeName}/${method.name}`;
}

/** Throws naming every method of `methods` that declares no access, so a gateway that would refuse them does not start. */
export function assertAccessDeclared(methods: Iterable<DescMethod>): void {
  const missing = [...new Set([...methods].filter((m) => accessOf(m) === undefined).map(methodName))];
  if (missing.length === 0) return;
  throw new Error(
    `every implemented RPC must declare who may call it with the (gw.api.v1.access) method option (ACCESS_ADMIN, ACCESS_CALLER or ACCESS_PUBLIC); missing on: ${missing.join(", ")}`,
  );
}
