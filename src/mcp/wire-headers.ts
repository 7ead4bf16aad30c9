/** Builds the headers sent upstream for a per-user call: static headers, overridden by the user's values. */

/**
 * Static admin headers plus the user's values; a static header whose name (case-insensitively) is a
 * per-user key is dropped, so the user's value is the one on the wire.
 */
export function perUserWireHeaders(
  staticHeaders: Record<string, string>,
  perUserKeys: readonly string[],
  userValues: Record<string, string>,
): Record<string, string> {
  const perUser = new Set(perUserKeys.map((k) => k.toLowerCase()));
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(staticHeaders)) {
    if (!perUser.has(name.toLowerCase())) out[name] = value;
  }
  for (const [name, value] of Object.entries(userValues)) out[name] = value;
  return out;
}
