/** Reading the caller's virtual key from request headers, for /v1 and Connect handlers alike. */

/** What tells an IdP bearer token (a signed-in user's identity) from a virtual key; absent when SSO is off. */
export interface IdpBearers {
  /** True when the token is one of the configured identity provider's. */
  claimsIssuer(token: string): boolean;
}

/** Headers a virtual key may arrive in, in precedence order. */
export const VIRTUAL_KEY_HEADERS = ["x-gw-vk", "authorization", "x-api-key", "x-goog-api-key"] as const;

/** `Authorization: Bearer <token>` in any case and spacing. */
const BEARER = /^Bearer\s+(.+)$/i;

/** The token of an Authorization value, or undefined; the usual spelling is read without the regular expression. */
function bearerToken(value: string): string | undefined {
  if (value.startsWith("Bearer ")) return value.slice(7).trim();
  return BEARER.exec(value)?.[1]?.trim();
}

/** The credential from the first header that carries one, or null; `get` reads one header by lowercase name. */
export function credentialFromHeaders(get: (name: string) => string | null | undefined, isIdpToken?: (token: string) => boolean): string | null {
  for (const name of VIRTUAL_KEY_HEADERS) {
    const raw = get(name)?.trim();
    if (raw === undefined || raw === "") continue;
    if (name !== "authorization") return raw;
    const token = bearerToken(raw);
    // An IdP bearer token is the caller's user identity, checked before any handler runs; never a key.
    if (token && isIdpToken?.(token) !== true) return token;
  }
  return null;
}
