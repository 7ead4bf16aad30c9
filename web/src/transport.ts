/** The one Connect transport of the dashboard: same origin, binary protocol, the admin session as a bearer token. */
import type { Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";

const TOKEN_KEY = "gw-admin-token";

/** The admin session token of this tab, if signed in. */
export function sessionToken(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

/** Stores (or with null, forgets) the admin session token of this tab. */
export function setSessionToken(token: string | null): void {
  if (token === null) sessionStorage.removeItem(TOKEN_KEY);
  else sessionStorage.setItem(TOKEN_KEY, token);
}

const bearer: Interceptor = (next) => async (req) => {
  const token = sessionToken();
  if (token !== null) req.header.set("authorization", `Bearer ${token}`);
  return next(req);
};

/** Talks to the gateway that served the page. */
export const transport = createConnectTransport({
  baseUrl: location.origin,
  useBinaryFormat: true,
  interceptors: [bearer],
});
