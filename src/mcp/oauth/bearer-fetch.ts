/**
 * A fetch that puts an OAuth access token on every upstream request (`Authorization: Bearer`) and, when
 * the upstream answers 401, asks the token's source once for a new token and retries that request once.
 */
import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js";

/** Where a client's current access token comes from. */
export interface BearerSource {
  /** The token to send now: from memory, refreshed first when it expires within a minute; throws when the credential is dead. */
  token(): Promise<string>;
  /** The upstream rejected `sent`: resolves once a newer token is ready, throws when there is none to be had. */
  rejected(sent: string): Promise<void>;
}

function withBearer(init: RequestInit | undefined, token: string): RequestInit {
  const headers = new Headers(init?.headers);
  headers.set("authorization", `Bearer ${token}`);
  return { ...init, headers };
}

/** Wraps `base` so every request carries the source's token. */
export function bearerFetch(base: FetchLike, source: BearerSource): FetchLike {
  return async (url, init) => {
    const sent = await source.token();
    const res = await base(url, withBearer(init, sent));
    if (res.status !== 401) return res;
    await res.body?.cancel().catch(() => undefined);
    await source.rejected(sent);
    return base(url, withBearer(init, await source.token()));
  };
}
