/**
 * SSO browser login in Chromium against oidc-provider: /api/sso/login sends the browser to the provider
 * (authorization code + PKCE), /api/sso/callback sets the HttpOnly SameSite=Lax gw_session cookie and
 * returns to return_to; a listed admin's session opens the admin API, another user's does not, and
 * /api/sso/logout ends the session. The admin's password login keeps working beside it.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { SSO_OFF } from "../../src/config/sso-config.js";
import { GATEWAY_CLIENT_ID, GATEWAY_CLIENT_SECRET, startIdpFixture, type IdpFixture } from "../fixtures/idp-server.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { launchBrowser, type TestBrowser } from "../helpers/browser.js";
import { signInAtIdp } from "../helpers/idp-sign-in.js";

const PASSWORD = "admin-password-1";

let idp: IdpFixture;
let app: TestApp;
let browser: TestBrowser;

before(async () => {
  idp = await startIdpFixture({
    accounts: { root: { sub: "root", email: "root@example.com" }, alice: { sub: "alice", email: "alice@example.com" } },
  });
  app = await startApp({
    auth: { enabled: true, username: "admin", password: PASSWORD, sessionTtlMs: 3_600_000 },
    sso: { ...SSO_OFF, issuer: idp.issuer, clientId: GATEWAY_CLIENT_ID, clientSecret: GATEWAY_CLIENT_SECRET, adminEmails: ["root@example.com"] },
  });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await app?.stop();
  await idp?.close();
});

/** Signs `account` in through the provider's pages in a fresh page; returns the page, back at return_to. */
async function signIn(account: string, returnTo: string) {
  const page = await browser.context.newPage();
  await page.goto(`${app.url}/api/sso/login?return_to=${encodeURIComponent(returnTo)}`);
  await signInAtIdp(page, account, `${app.url}${returnTo}`);
  return page;
}

async function sessionCookie() {
  return (await browser.context.cookies(app.url)).find((c) => c.name === "gw_session");
}

describe("SSO login", () => {
  test("a return_to on another site is refused", async () => {
    const res = await api(app, "GET", `/api/sso/login?return_to=${encodeURIComponent("//evil.example.com/")}`);
    assert.equal(res.status, 400);
    assert.match(res.body.error.message, /return_to/);
  });

  test("a callback with an unknown state is refused", async () => {
    const res = await api(app, "GET", "/api/sso/callback?code=x&state=forged");
    assert.equal(res.status, 400);
    assert.equal(res.body.error.type, "sso_state_invalid");
  });

  test("signs a listed admin in: an HttpOnly SameSite=Lax gw_session cookie opens the admin API", async () => {
    const page = await signIn("root", "/health");
    const cookie = await sessionCookie();
    assert.ok(cookie, "no gw_session cookie");
    assert.equal(cookie.httpOnly, true);
    assert.equal(cookie.sameSite, "Lax");
    assert.equal(cookie.secure, false);
    const clients = await page.request.get(`${app.url}/api/mcp/clients`);
    assert.equal(clients.status(), 200, await clients.text());
    await page.close();
  });

  test("logout ends the session", async () => {
    const page = await browser.context.newPage();
    const out = await page.request.post(`${app.url}/api/sso/logout`);
    assert.equal(out.status(), 200);
    const clients = await page.request.get(`${app.url}/api/mcp/clients`);
    assert.equal(clients.status(), 401);
    await page.close();
  });

  test("a user who is not listed as an admin is signed in but does not open the admin API", async () => {
    // A fresh browser: no session left at the provider from the admin's login.
    await browser.context.clearCookies();
    const page = await signIn("alice", "/health");
    assert.ok(await sessionCookie());
    const clients = await page.request.get(`${app.url}/api/mcp/clients`);
    assert.equal(clients.status(), 401);
    await page.close();
  });

  test("the admin's password login keeps working beside SSO", async () => {
    const login = await api(app, "POST", "/api/session/login", { username: "admin", password: PASSWORD });
    assert.equal(login.status, 200);
    const clients = await api(app, "GET", "/api/mcp/clients", undefined, { authorization: `Bearer ${login.body.token as string}` });
    assert.equal(clients.status, 200);
  });
});
