/**
 * The upstream OAuth consent in Chromium: an admin opens authorize_url, clicks through, and lands on the
 * gateway's result page; a per_user_oauth caller opens its flow page, clicks Connect and consents.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { api } from "../helpers/app.js";
import { launchBrowser, type TestBrowser } from "../helpers/browser.js";
import { executeTool, oauthSuite } from "../helpers/oauth-clients.js";
import { DEFAULT_CLIENT } from "../../src/config/runtime-settings.js";

describe("upstream OAuth consent in a browser", () => {
  const suite = oauthSuite();
  let browser: TestBrowser;
  before(async () => {
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
  });

  test("clicking Approve at the authorization server lands on the result page, and complete-oauth connects", async () => {
    const created = await api(suite.app, "POST", "/api/mcp/client", {
      name: "browsed", connection_type: "http", connection_string: suite.oauth.mcpUrl, auth_type: "oauth", tools_to_execute: ["*"],
    });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const page = await browser.context.newPage();
    await page.goto(created.body.authorize_url);
    // oidc-provider asks to sign in first, then for consent: the same Approve button both times.
    for (let step = 0; step < 2; step++) {
      await page.locator("#approve").click();
      await page.waitForLoadState();
    }
    await page.locator("#oauth-authorized").waitFor();
    assert.equal(new URL(page.url()).pathname, "/workspace/mcp-sessions/auth");
    assert.equal(await page.locator("#mcp-client").textContent(), "browsed");
    assert.match((await page.locator("#oauth-authorized").textContent()) ?? "", /complete-oauth/);
    const done = await api(suite.app, "POST", created.body.complete_url);
    assert.equal(done.status, 200, JSON.stringify(done.body));
    await page.reload();
    await page.locator("#oauth-connected").waitFor();
    assert.equal((await executeTool(suite.app, "browsed-whoami")).body.content, "subject alice");
  });

  test("a denied consent shows the authorization server's error on the result page", async () => {
    const created = await api(suite.app, "POST", "/api/mcp/client", { name: "refused", connection_type: "http", connection_string: suite.oauth.mcpUrl, auth_type: "oauth" });
    const page = await browser.context.newPage();
    await page.goto(created.body.authorize_url);
    await page.locator("#deny").click();
    await page.locator("#oauth-failed").waitFor();
    assert.match((await page.locator("#oauth-error").textContent()) ?? "", /access_denied/);
  });
});

describe("per-user OAuth consent in a browser", () => {
  const suite = oauthSuite({ client: { ...DEFAULT_CLIENT, mcpEnableTempTokenAuth: true } });
  let browser: TestBrowser;
  before(async () => {
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
  });

  function call() {
    return api(suite.app, "POST", "/v1/mcp/tool/execute", { id: "c1", type: "function", function: { name: "mine-whoami", arguments: "{}" } }, { "x-gw-mcp-session-id": "browser-session" });
  }

  test("the flow page shows the server and the identity, and Connect leads through consent to the caller's own token", async () => {
    const created = await api(suite.app, "POST", "/api/mcp/client", { name: "mine", connection_type: "http", connection_string: suite.oauth.mcpUrl, auth_type: "per_user_oauth", tools_to_execute: ["*"] });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    await suite.oauth.approve(created.body.authorize_url, undefined, "admin");
    assert.equal((await api(suite.app, "POST", created.body.complete_url)).status, 200);
    const needed = await call();
    assert.equal(needed.status, 401, JSON.stringify(needed.body));
    const submitUrl: string = needed.body.mcp_auth_required.submit_url;
    assert.match(submitUrl, /#t=/);
    const page = await browser.context.newPage();
    await page.goto(submitUrl);
    assert.equal(await page.locator("#mcp-client").textContent(), "mine");
    assert.match((await page.locator("#identity").textContent()) ?? "", /browser-session/);
    // The temp token leaves the address bar as soon as the page reads it.
    assert.equal(new URL(page.url()).hash, "");
    await page.getByRole("button", { name: "Connect" }).click();
    await page.waitForURL((url) => url.origin === suite.oauth.issuer);
    for (let step = 0; step < 2; step++) {
      await page.locator("#approve").click();
      await page.waitForLoadState();
    }
    await page.locator("#oauth-connected").waitFor();
    assert.equal(new URL(page.url()).pathname, "/workspace/mcp-sessions/auth");
    const done = await call();
    assert.equal(done.status, 200, JSON.stringify(done.body));
    assert.equal(done.body.content, "subject alice");
  });
});
