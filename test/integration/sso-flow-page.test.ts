/**
 * The per-user flow page for a user-mode flow (one bound to an SSO user), in Chromium against oidc-provider:
 * a visitor without an SSO session is sent to the SSO login and back to the page, the bound user then sees
 * the form and saves through their gw_session cookie, and a user signed in as someone else is refused. The
 * same session lists only that user's own per-user credentials.
 */
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import { SSO_OFF } from "../../src/config/sso-config.js";
import { GATEWAY_CLIENT_ID, GATEWAY_CLIENT_SECRET, startIdpFixture, type IdpFixture } from "../fixtures/idp-server.js";
import { startMcpFixture, type McpFixture } from "../fixtures/mcp-server.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { launchBrowser, type TestBrowser } from "../helpers/browser.js";
import { signInAtIdp } from "../helpers/idp-sign-in.js";

const PASSWORD = "admin-password-1";
const ALICE = { sub: "alice", email: "alice@example.com" };
const ROOT = { sub: "root", email: "root@example.com" };
const CAROL = { sub: "carol", email: "carol@example.com" };

let idp: IdpFixture;
let mcp: McpFixture;
let app: TestApp;
let browser: TestBrowser;

function execute(token: string) {
  return api(app, "POST", "/v1/mcp/tool/execute", { id: "c1", type: "function", function: { name: "crm-echo", arguments: "{\"text\":\"x\"}" } }, { authorization: `Bearer ${token}` });
}

/** Opens a user-mode flow for `user` (their IdP token calls the tool without a credential); answers the page's path and query. */
async function flowPage(user: { sub: string; email: string }): Promise<string> {
  const opened = await execute(await idp.userToken(user));
  assert.equal(opened.status, 401, JSON.stringify(opened.body));
  const url = new URL(opened.body.mcp_auth_required.submit_url);
  assert.equal(url.hash, "", "a user-mode link carries no temp token");
  return url.pathname + url.search;
}

before(async () => {
  idp = await startIdpFixture({ accounts: { root: ROOT, alice: ALICE, carol: CAROL } });
  mcp = await startMcpFixture({ acceptHeader: { name: "x-user-token", values: ["sample", "alice-secret"] } });
  app = await startApp({
    auth: { enabled: true, username: "admin", password: PASSWORD, sessionTtlMs: 3_600_000 },
    sso: { ...SSO_OFF, issuer: idp.issuer, clientId: GATEWAY_CLIENT_ID, clientSecret: GATEWAY_CLIENT_SECRET, adminEmails: [ROOT.email] },
  });
  const session = (await api(app, "POST", "/api/session/login", { username: "admin", password: PASSWORD })).body.token;
  const created = await api(app, "POST", "/api/mcp/client", {
    name: "crm", connection_type: "http", connection_string: mcp.httpUrl, auth_type: "per_user_headers",
    per_user_header_keys: ["x-user-token"], user_headers: { "x-user-token": "sample" }, tools_to_execute: ["*"], allow_on_all_virtual_keys: true,
  }, { authorization: `Bearer ${session}` });
  assert.equal(created.status, 200, JSON.stringify(created.body));
  browser = await launchBrowser();
});

beforeEach(async () => {
  // Each test starts signed out, at the gateway and at the provider.
  await browser.context.clearCookies();
});

after(async () => {
  await browser?.close();
  await app?.stop();
  await mcp?.close();
  await idp?.close();
});

describe("the flow page of a user-mode flow", () => {
  test("sends a visitor without an SSO session to the SSO login with the page as return_to", async () => {
    const pagePath = await flowPage(CAROL);
    const res = await fetch(`${app.url}${pagePath}`, { redirect: "manual" });
    assert.equal(res.status, 302);
    const location = new URL(res.headers.get("location") ?? "", app.url);
    assert.equal(location.pathname, "/api/sso/login");
    assert.equal(location.searchParams.get("return_to"), pagePath);
  });

  test("the bound user signs in through SSO, comes back to the form and saves with their session", async () => {
    const pagePath = await flowPage(ALICE);
    const page = await browser.context.newPage();
    await page.goto(`${app.url}${pagePath}`);
    assert.ok(page.url().startsWith(idp.issuer), `not sent to the IdP: ${page.url()}`);
    await signInAtIdp(page, "alice", `${app.url}${pagePath}`);
    await page.locator("#signed-in").waitFor();
    assert.match(await page.locator("#signed-in").innerText(), /alice@example\.com/);
    assert.equal(await page.locator("#password").count(), 0, "an SSO user is asked for a password");
    await page.locator("#header-0").fill("alice-secret");
    await page.locator("#save").click();
    await page.locator("#saved").waitFor();
    const call = await execute(await idp.userToken(ALICE));
    assert.equal(call.status, 200, JSON.stringify(call.body));
    await page.close();
  });

  test("a user signed in as someone else is refused with a page naming both users", async () => {
    const pagePath = await flowPage(CAROL);
    const page = await browser.context.newPage();
    await page.goto(`${app.url}/api/sso/login?return_to=${encodeURIComponent("/health")}`);
    await signInAtIdp(page, "root", `${app.url}/health`);
    const res = await page.goto(`${app.url}${pagePath}`);
    assert.equal(res?.status(), 403);
    const text = await page.locator("main").innerText();
    assert.match(text, /binds a credential to user “carol@example\.com”/);
    assert.match(text, /signed in as “root@example\.com”/);
    assert.equal(await page.locator("#submit-form").count(), 0);
    await page.close();
  });
});

describe("the per-user credential list behind an SSO session", () => {
  /** Gives `user` a stored credential (through the submission API with their IdP token) unless they have one. */
  async function ensureCredential(user: { sub: string; email: string }): Promise<void> {
    const token = await idp.userToken(user);
    const opened = await execute(token);
    if (opened.status === 200) return;
    const flow = new URL(opened.body.mcp_auth_required.submit_url).searchParams.get("flow") ?? "";
    const saved = await api(app, "PUT", `/api/mcp/per-user-headers/flows/${flow}`, { headers: { "x-user-token": "sample" } }, { authorization: `Bearer ${token}` });
    assert.equal(saved.status, 200, JSON.stringify(saved.body));
  }

  test("shows a signed-in user who is not an admin only their own credentials", async () => {
    await ensureCredential(ALICE);
    await ensureCredential(CAROL);
    const page = await browser.context.newPage();
    await page.goto(`${app.url}/api/sso/login?return_to=${encodeURIComponent("/health")}`);
    await signInAtIdp(page, "carol", `${app.url}/health`);
    const res = await page.request.get(`${app.url}/api/mcp/sessions`);
    assert.equal(res.status(), 200, await res.text());
    const body = (await res.json()) as { sessions: { identity_kind: string; identity: string }[] };
    assert.deepEqual(body.sessions.map((s) => `${s.identity_kind}:${s.identity}`), ["user:carol"]);
    await page.close();
  });
});
