/**
 * An SSO browser login walked with plain HTTP against the IdP fixture: /api/sso/login, the provider's
 * sign-in and consent forms (each posted with the account), /api/sso/callback; answers the gw_session
 * cookie the gateway set, for tests that act as a signed-in browser without launching one.
 */
import assert from "node:assert/strict";

/** The `name=value` pairs of a response's Set-Cookie headers. */
function setCookies(res: Response): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of res.headers.getSetCookie()) {
    const [pair = ""] = line.split(";");
    const eq = pair.indexOf("=");
    if (eq > 0) out.set(pair.slice(0, eq).trim(), pair.slice(eq + 1).trim());
  }
  return out;
}

/** Follows the identity provider's redirects from `authorizeUrl`, signing in as `account`; returns the gateway callback URL it ends on. */
export async function signInAtProvider(authorizeUrl: string, account: string): Promise<URL> {
  const jar = new Map<string, string>();
  let next = new URL(authorizeUrl);
  for (let hop = 0; hop < 20; hop++) {
    if (next.pathname === "/api/sso/callback") return next;
    // The sign-in and consent pages are one form each: posting the account answers both.
    const form = next.pathname.startsWith("/interaction/");
    const res = await fetch(next, {
      method: form ? "POST" : "GET",
      redirect: "manual",
      headers: { cookie: [...jar].map(([name, value]) => `${name}=${value}`).join("; "), ...(form ? { "content-type": "application/x-www-form-urlencoded" } : {}) },
      ...(form ? { body: new URLSearchParams({ account }).toString() } : {}),
    });
    await res.text();
    for (const [name, value] of setCookies(res)) jar.set(name, value);
    const location = res.headers.get("location");
    assert.ok(location, `the provider answered ${res.status} without a redirect at ${next.pathname}`);
    next = new URL(location, next);
  }
  throw new Error("the provider never redirected back to the gateway");
}

/** Signs `account` in to the gateway at `gatewayUrl` through its SSO login; answers the `Cookie` header value of the session. */
export async function ssoSessionCookie(gatewayUrl: string, account: string): Promise<string> {
  const start = await fetch(`${gatewayUrl}/api/sso/login?return_to=%2Fhealth`, { redirect: "manual" });
  await start.text();
  const first = start.headers.get("location");
  assert.ok(first, `the SSO login answered ${start.status} without a redirect`);
  const callback = await signInAtProvider(new URL(first, gatewayUrl).href, account);
  const done = await fetch(callback, { redirect: "manual" });
  await done.text();
  const session = setCookies(done).get("gw_session");
  assert.ok(session, `the SSO callback answered ${done.status} without a gw_session cookie`);
  return `gw_session=${session}`;
}
