/** The syntax of client.allowed_headers entries, one rule for the config file and PATCH /config. */

/** An HTTP header name (an RFC 9110 token without "*"), optionally ending in "*" to make it a prefix. */
const ENTRY = /^[!#$%&'+.^_`|~0-9A-Za-z-]+\*?$/;

/** Why `entry` cannot be an allowed_headers entry, or null when it can. */
export function allowedHeaderProblem(entry: string): string | null {
  if (entry === "*" || ENTRY.test(entry)) return null;
  return `"${entry}" is not a header name, a prefix ending in "*" (such as "x-stainless-*") or "*"`;
}
