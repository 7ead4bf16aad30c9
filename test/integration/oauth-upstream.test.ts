/**
 * Upstream OAuth (auth_type oauth) against a real authorization server (oidc-provider) protecting a real
 * MCP server: discovery, dynamic registration and PKCE from only the server URL; the callback; complete-oauth;
 * status; tool calls carrying the token.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { startOauthFixture, type OauthFixture } from "../fixtures/oauth-server.js";

function execute(app: TestApp, name: string) {
  return api(app, "POST", "/v1/mcp/tool/execute", { id: "c1", type: "function", function: { name, arguments: "{}" } });
}

describe("an oauth client declared with only its URL", () => {
  let app: TestApp;
  let oauth: OauthFixture;
  before(async () => {
    app = await startApp();
    oauth = await startOauthFixture();
  });
  after(async () => {
    await app.stop();
    await oauth.close();
  });

  test("creation answers pending_oauth, consent and complete-oauth connect it, and tool calls carry the token", async () => {
    const created = await api(app, "POST", "/api/mcp/client", { name: "remote", connection_type: "http", connection_string: oauth.mcpUrl, auth_type: "oauth", tools_to_execute: ["*"] });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    assert.equal(created.body.status, "pending_oauth");
    const authorizeUrl = new URL(created.body.authorize_url);
    assert.equal(authorizeUrl.origin, oauth.issuer);
    assert.equal(authorizeUrl.searchParams.get("code_challenge_method"), "S256");
    assert.equal(authorizeUrl.searchParams.get("resource"), oauth.mcpUrl);
    assert.equal(authorizeUrl.searchParams.get("redirect_uri"), `${app.url}/api/oauth/callback`);
    assert.equal(oauth.registrations, 1);
    const id = created.body.client_id;
    assert.equal((await api(app, "GET", `/api/mcp/client/${id}`)).body.client.state, "pending_verification");

    const callback = await oauth.approve(created.body.authorize_url);
    assert.equal(callback.status, 302);
    assert.equal(callback.headers.get("location"), `/workspace/mcp-sessions/auth?flow=${created.body.oauth_config_id}&kind=oauth`);
    const status = await api(app, "GET", created.body.status_url);
    assert.equal(status.body.status, "authorized");

    const done = await api(app, "POST", created.body.complete_url);
    assert.equal(done.status, 200, JSON.stringify(done.body));
    assert.deepEqual({ ...done.body, message: undefined }, { status: "success", message: undefined, client_id: id, tools_count: 1 });
    assert.equal((await api(app, "GET", `/api/mcp/client/${id}`)).body.client.state, "healthy");

    const call = await execute(app, "remote-whoami");
    assert.equal(call.status, 200, JSON.stringify(call.body));
    assert.equal(call.body.content, "subject alice");
  });
});
