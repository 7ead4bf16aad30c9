/** The upstream OAuth consent in Chromium: an admin opens authorize_url, clicks through, and lands on the gateway's result page. */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { api } from "../helpers/app.js";
import { launchBrowser, type TestBrowser } from "../helpers/browser.js";
import { executeTool, oauthSuite } from "../helpers/oauth-clients.js";

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
