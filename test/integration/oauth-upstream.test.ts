/**
 * Upstream OAuth (auth_type oauth) against a real authorization server (oidc-provider) protecting a real
 * MCP server: discovery, dynamic registration and PKCE from only the server URL; a configured client
 * without registration; the callback; complete-oauth; status; refresh ahead of expiry and on a 401; a
 * refused refresh, needs_reauth and reauthorize; revoke.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { McpOauthCredentialRecord } from "../../src/store/index.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { startOauthFixture, type OauthFixture } from "../fixtures/oauth-server.js";
import { connectOauthClient, executeTool, oauthSuite } from "../helpers/oauth-clients.js";


async function clientOf(app: TestApp, id: string) {
  return (await api(app, "GET", `/api/mcp/client/${id}`)).body.client;
}


describe("an oauth client declared with only its URL", () => {
  const suite = oauthSuite();

  test("creation answers pending_oauth, consent and complete-oauth connect it, and tool calls carry the token", async () => {
    const created = await api(suite.app, "POST", "/api/mcp/client", { name: "remote", connection_type: "http", connection_string: suite.oauth.mcpUrl, auth_type: "oauth", tools_to_execute: ["*"] });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    assert.equal(created.body.status, "pending_oauth");
    const authorizeUrl = new URL(created.body.authorize_url);
    assert.equal(authorizeUrl.origin, suite.oauth.issuer);
    assert.equal(authorizeUrl.searchParams.get("code_challenge_method"), "S256");
    assert.equal(authorizeUrl.searchParams.get("resource"), suite.oauth.mcpUrl);
    assert.equal(authorizeUrl.searchParams.get("scope"), "mcp:tools");
    assert.equal(authorizeUrl.searchParams.get("redirect_uri"), `${suite.app.url}/api/oauth/callback`);
    assert.equal(suite.oauth.registrations, 1);
    const id = created.body.client_id;
    assert.equal((await clientOf(suite.app, id)).state, "pending_verification");
    assert.equal(suite.oauth.acceptedTokens.length, 0);

    const callback = await suite.oauth.approve(created.body.authorize_url);
    assert.equal(callback.status, 302);
    assert.equal(callback.headers.get("location"), `/workspace/mcp-sessions/auth?flow=${created.body.oauth_config_id}&kind=oauth`);
    const status = await api(suite.app, "GET", created.body.status_url);
    assert.equal(status.body.status, "authorized");
    assert.deepEqual(status.body.token_scopes, ["mcp:tools"]);
    assert.ok(Date.parse(status.body.token_expires_at) > Date.now());

    const done = await api(suite.app, "POST", created.body.complete_url);
    assert.equal(done.status, 200, JSON.stringify(done.body));
    assert.deepEqual({ ...done.body, message: undefined }, { status: "success", message: undefined, client_id: id, tools_count: 1 });
    assert.equal((await clientOf(suite.app, id)).state, "healthy");

    const call = await executeTool(suite.app, "remote-whoami");
    assert.equal(call.status, 200, JSON.stringify(call.body));
    assert.equal(call.body.content, "subject alice");
  });

  test("the result page shows the outcome of the authorization", async () => {
    const created = await api(suite.app, "POST", "/api/mcp/client", { name: "paged", connection_type: "http", connection_string: suite.oauth.mcpUrl, auth_type: "oauth" });
    const callback = await suite.oauth.approve(created.body.authorize_url);
    const page = await fetch(`${suite.app.url}${callback.headers.get("location") ?? ""}`);
    const html = await page.text();
    assert.equal(page.status, 200);
    assert.match(html, /id="oauth-authorized"/);
    assert.match(html, /paged/);
  });

  test("a denied consent shows the authorization server's error and complete-oauth answers 409", async () => {
    const created = await api(suite.app, "POST", "/api/mcp/client", { name: "denied", connection_type: "http", connection_string: suite.oauth.mcpUrl, auth_type: "oauth" });
    const callback = await suite.oauth.deny(created.body.authorize_url);
    assert.equal(callback.status, 302);
    const html = await (await fetch(`${suite.app.url}${callback.headers.get("location") ?? ""}`)).text();
    assert.match(html, /id="oauth-failed"/);
    assert.match(html, /access_denied/);
    assert.equal((await api(suite.app, "GET", created.body.status_url)).body.status, "failed");
    const done = await api(suite.app, "POST", created.body.complete_url);
    assert.equal(done.status, 409);
    assert.equal((await clientOf(suite.app, created.body.client_id)).state, "pending_verification");
  });

  test("complete-oauth before consent answers 409", async () => {
    const created = await api(suite.app, "POST", "/api/mcp/client", { name: "early", connection_type: "http", connection_string: suite.oauth.mcpUrl, auth_type: "oauth" });
    const done = await api(suite.app, "POST", created.body.complete_url);
    assert.equal(done.status, 409);
    assert.equal(done.body.error.type, "oauth_not_authorized");
  });

  test("a replayed state is refused and changes nothing", async () => {
    const created = await api(suite.app, "POST", "/api/mcp/client", { name: "replayed", connection_type: "http", connection_string: suite.oauth.mcpUrl, auth_type: "oauth" });
    let callbackUrl = "";
    const first = await suite.oauth.approve(created.body.authorize_url, (url) => {
      callbackUrl = url;
    });
    assert.equal(first.status, 302);
    const again = await fetch(callbackUrl, { redirect: "manual" });
    assert.equal(again.status, 400);
    assert.match(await again.text(), /unknown or already used/);
    assert.equal((await api(suite.app, "GET", created.body.status_url)).body.status, "authorized");
  });

  test("a state no attempt holds is refused", async () => {
    const res = await fetch(`${suite.app.url}/api/oauth/callback?code=abc&state=forged`, { redirect: "manual" });
    assert.equal(res.status, 400);
    assert.match(await res.text(), /unknown or already used/);
    const missing = await fetch(`${suite.app.url}/api/oauth/callback?code=abc`, { redirect: "manual" });
    assert.equal(missing.status, 400);
  });

  test("initiate-verification hands out a fresh attempt and refuses a verified client", async () => {
    const created = await api(suite.app, "POST", "/api/mcp/client", { name: "again", connection_type: "http", connection_string: suite.oauth.mcpUrl, auth_type: "oauth" });
    const fresh = await api(suite.app, "POST", `/api/mcp/client/${created.body.client_id}/initiate-verification`);
    assert.equal(fresh.status, 200, JSON.stringify(fresh.body));
    assert.equal(fresh.body.status, "pending_oauth");
    assert.notEqual(fresh.body.oauth_config_id, created.body.oauth_config_id);
    await suite.oauth.approve(fresh.body.authorize_url);
    assert.equal((await api(suite.app, "POST", fresh.body.complete_url)).status, 200);
    const refused = await api(suite.app, "POST", `/api/mcp/client/${created.body.client_id}/initiate-verification`);
    assert.equal(refused.status, 409);
  });

  test("reauthorize with another account's consent switches the token the upstream sees", async () => {
    const created = await connectOauthClient(suite.app, suite.oauth, "switched");
    assert.equal((await executeTool(suite.app, "switched-whoami")).body.content, "subject alice");
    const again = await api(suite.app, "POST", `/api/mcp/client/${created.client_id}/reauthorize`);
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.equal((await suite.oauth.approve(again.body.authorize_url, undefined, "bob")).status, 302);
    assert.equal((await api(suite.app, "POST", again.body.complete_url)).status, 200);
    assert.equal((await executeTool(suite.app, "switched-whoami")).body.content, "subject bob");
    assert.equal((await api(suite.app, "GET", created.status_url)).body.status, "revoked");
  });

  test("revoking the credential revokes it at the authorization server and refuses tool calls", async () => {
    const created = await connectOauthClient(suite.app, suite.oauth, "revoked");
    const before = suite.oauth.revocations;
    const res = await api(suite.app, "DELETE", `/api/oauth/config/${created.oauth_config_id}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.ok(suite.oauth.revocations > before);
    assert.equal((await api(suite.app, "GET", created.status_url)).body.status, "revoked");
    const client = await clientOf(suite.app, created.client_id);
    assert.equal(client.state, "needs_reauth");
    assert.equal(client.last_failure.stage, "credential");
    assert.equal((await executeTool(suite.app, "revoked-whoami")).status, 409);
  });

  test("no token, code, verifier or client secret reaches the log", async () => {
    const log = suite.app.logLines.join("\n");
    for (const token of suite.oauth.acceptedTokens) assert.ok(!log.includes(token), "an access token was logged");
    assert.doesNotMatch(log, /code_verifier|refresh_token"\s*:\s*"[^"]/);
  });
});

describe("refresh and reauthorization", () => {
  let app: TestApp;
  let oauth: OauthFixture;
  let now = Date.now();
  before(async () => {
    app = await startApp({ mcpTiming: { now: () => now } });
    oauth = await startOauthFixture();
  });
  after(async () => {
    await app.stop();
    await oauth.close();
  });

  test("a token is refreshed a minute before it expires", async () => {
    const created = await connectOauthClient(app, oauth, "ahead");
    const before = (await api(app, "GET", created.status_url)).body.token_expires_at;
    const used = oauth.acceptedTokens.at(-1);
    now += 3600_000 - 30_000;
    const call = await executeTool(app, "ahead-whoami");
    assert.equal(call.body.content, "subject alice");
    assert.ok(oauth.tokenRequests.includes("refresh_token"));
    assert.notEqual(oauth.acceptedTokens.at(-1), used);
    assert.notEqual((await api(app, "GET", created.status_url)).body.token_expires_at, before);
  });

  test("a token the upstream rejects is refreshed once and the call retried", async () => {
    await connectOauthClient(app, oauth, "retried");
    const refreshes = oauth.tokenRequests.filter((g) => g === "refresh_token").length;
    oauth.rejectSeenTokens();
    const call = await executeTool(app, "retried-whoami");
    assert.equal(call.body.content, "subject alice", JSON.stringify(call.body));
    assert.equal(oauth.tokenRequests.filter((g) => g === "refresh_token").length, refreshes + 1);
  });

  test("a refused refresh moves the client to needs_reauth, and reauthorize brings it back", async () => {
    const created = await connectOauthClient(app, oauth, "dying");
    oauth.rejectSeenTokens();
    oauth.dropRefreshTokens();
    const failed = await executeTool(app, "dying-whoami");
    assert.match(JSON.stringify(failed.body), /invalid_grant|reauthorize/);
    const client = await clientOf(app, created.client_id);
    assert.equal(client.state, "needs_reauth");
    assert.equal(client.last_failure.stage, "credential");
    assert.match(client.last_failure.message, /invalid_grant/);
    const refused = await executeTool(app, "dying-whoami");
    assert.equal(refused.status, 409);

    const again = await api(app, "POST", `/api/mcp/client/${created.client_id}/reauthorize`);
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.equal(again.body.status, "pending_oauth");
    await oauth.approve(again.body.authorize_url);
    assert.equal((await api(app, "POST", again.body.complete_url)).status, 200);
    assert.equal((await clientOf(app, created.client_id)).state, "healthy");
    assert.equal((await executeTool(app, "dying-whoami")).body.content, "subject alice");
    assert.equal((await api(app, "GET", created.status_url)).body.status, "revoked");
  });

  test("an attempt left pending for 15 minutes expires: complete-oauth and the callback answer 410", async () => {
    const created = await api(app, "POST", "/api/mcp/client", { name: "late", connection_type: "http", connection_string: oauth.mcpUrl, auth_type: "oauth" });
    now += 16 * 60_000;
    const done = await api(app, "POST", created.body.complete_url);
    assert.equal(done.status, 410);
    assert.equal((await api(app, "GET", created.body.status_url)).body.status, "failed");
  });

  test("a restart moves an attempt left pending past its expiry to failed", async () => {
    const created = await api(app, "POST", "/api/mcp/client", { name: "forgotten", connection_type: "http", connection_string: oauth.mcpUrl, auth_type: "oauth" });
    const id = /\/api\/oauth\/config\/([^/]+)\/status$/.exec(created.body.status_url)?.[1];
    assert.ok(id, created.body.status_url);
    now += 16 * 60_000;
    await app.stop({ keepData: true });
    app = await startApp(app.restartOptions);
    const stored = await app.store.fork().findOneOrFail(McpOauthCredentialRecord, { id });
    assert.deepEqual([stored.status, stored.secrets], ["failed", {}]);
  });

  test("a callback after the attempt expired answers 410", async () => {
    const created = await api(app, "POST", "/api/mcp/client", { name: "slow", connection_type: "http", connection_string: oauth.mcpUrl, auth_type: "oauth" });
    now += 16 * 60_000;
    const callback = await oauth.approve(created.body.authorize_url);
    assert.equal(callback.status, 410);
  });
});

describe("a pre-registered client", () => {
  let app: TestApp;
  let oauth: OauthFixture;
  before(async () => {
    app = await startApp();
    oauth = await startOauthFixture({ noRegistration: true, staticClient: { clientId: "gw-static", clientSecret: "static-secret-value", redirectUris: [`${app.url}/api/oauth/callback`] } });
  });
  after(async () => {
    await app.stop();
    await oauth.close();
  });

  test("connects with the configured client_id and secret without registering", async () => {
    const created = await connectOauthClient(app, oauth, "static", { oauth_config: { client_id: "gw-static", client_secret: "static-secret-value" } });
    assert.equal(oauth.registrations, 0);
    assert.equal(new URL(created.authorize_url).searchParams.get("client_id"), "gw-static");
    assert.equal((await executeTool(app, "static-whoami")).body.content, "subject alice");
  });

  test("reads redact the client secret and a read sent back keeps it", async () => {
    const created = await api(app, "POST", "/api/mcp/client", { name: "kept", connection_type: "http", connection_string: oauth.mcpUrl, auth_type: "oauth", oauth_config: { client_id: "gw-static", client_secret: "static-secret-value" } });
    const read = await clientOf(app, created.body.client_id);
    assert.equal(read.oauth_config.client_secret, "<redacted>");
    const { client_id: _id, state: _s, tools: _t, created_at: _c, updated_at: _u, ...body } = read;
    assert.equal((await api(app, "PUT", `/api/mcp/client/${created.body.client_id}`, body)).status, 200);
    const again = await api(app, "POST", `/api/mcp/client/${created.body.client_id}/initiate-verification`);
    await oauth.approve(again.body.authorize_url);
    assert.equal((await api(app, "POST", again.body.complete_url)).status, 200);
    assert.ok(!app.logLines.join("\n").includes("static-secret-value"));
  });

  test("without a client_id, an authorization server with no registration is a 422 and stores nothing", async () => {
    const res = await api(app, "POST", "/api/mcp/client", { name: "noreg", connection_type: "http", connection_string: oauth.mcpUrl, auth_type: "oauth" });
    assert.equal(res.status, 422);
    assert.match(res.body.error.message, /registration/);
    assert.equal((await api(app, "GET", "/api/mcp/clients?search=noreg")).body.count, 0);
  });
});

describe("an authorization server that issues no refresh tokens", () => {
  const suite = oauthSuite({}, { noRefreshTokens: true });

  test("a rejected token moves the client to needs_reauth at once", async () => {
    const created = await connectOauthClient(suite.app, suite.oauth, "norefresh");
    suite.oauth.rejectSeenTokens();
    const failed = await executeTool(suite.app, "norefresh-whoami");
    assert.match(JSON.stringify(failed.body), /no refresh token/);
    const client = await clientOf(suite.app, created.client_id);
    assert.equal(client.state, "needs_reauth");
    assert.equal(client.last_failure.stage, "credential");
    assert.ok(!suite.oauth.tokenRequests.includes("refresh_token"));
  });
});
