/**
 * Upstream OAuth over Connect and gRPC, its bad input, concurrent refreshes, restarts and sticky clients,
 * against oidc-provider protecting a real MCP server.
 */
import assert from "node:assert/strict";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { describe, test } from "node:test";
import { ConnectError } from "@connectrpc/connect";
import { api, startApp, testDatabaseUrl } from "../helpers/app.js";
import { clientFor } from "../helpers/clients.js";
import { startOauthFixture } from "../fixtures/oauth-server.js";
import { connectOauthClient, executeTool, oauthSuite } from "../helpers/oauth-clients.js";
import { appOptionsFromConfig } from "../../src/app.js";
import { parseConfig } from "../../src/config/load-config.js";
import { AuthType, ConnectionType, McpClientService } from "../../gen/gw/admin/v1/mcp_client_pb.js";
import { OauthService } from "../../gen/gw/admin/v1/oauth_pb.js";



/** A server answering every request with `body` (an authorization server that answers garbage). */
async function garbageServer(): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/html" });
    res.end("<html>not an authorization server</html>");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return { url: `http://127.0.0.1:${port}/mcp`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

describe("upstream OAuth over Connect and gRPC", () => {
  const suite = oauthSuite();

  test("creation, status and complete-oauth work over Connect", async () => {
    const clients = clientFor(McpClientService, suite.app.url, "connect");
    const created = await clients.createMcpClient({
      client: { name: "over_connect", connectionType: ConnectionType.HTTP, connectionString: suite.oauth.mcpUrl, authType: AuthType.OAUTH, toolsToExecute: ["*"] },
    });
    assert.equal(created.status, "pending_oauth");
    assert.ok(created.authorizeUrl.startsWith(suite.oauth.issuer));
    const status = clientFor(OauthService, suite.app.url, "connect");
    assert.equal((await status.getOauthConfigStatus({ id: created.oauthConfigId })).status, "pending");
    await assert.rejects(clients.completeOauth({ oauthConfigId: created.oauthConfigId }), (err: unknown) => err instanceof ConnectError && /no token was obtained yet/.test(err.rawMessage));
    await suite.oauth.approve(created.authorizeUrl);
    const done = await clients.completeOauth({ oauthConfigId: created.oauthConfigId });
    assert.equal(done.toolsCount, 1);
    assert.equal((await status.getOauthConfigStatus({ id: created.oauthConfigId })).status, "authorized");
  });

  test("reauthorize and status work over gRPC", async () => {
    const created = await connectOauthClient(suite.app, suite.oauth, "over_grpc");
    const clients = clientFor(McpClientService, suite.app.url, "grpc");
    const again = await clients.reauthorize({ clientId: created.client_id });
    assert.equal(again.status, "pending_oauth");
    assert.notEqual(again.oauthConfigId, created.oauth_config_id);
    const status = await clientFor(OauthService, suite.app.url, "grpc").getOauthConfigStatus({ id: again.oauthConfigId });
    assert.equal(status.status, "pending");
    assert.equal(status.clientId, created.client_id);
  });

  test("the callback is public over Connect and refuses a forged state", async () => {
    await assert.rejects(
      clientFor(OauthService, suite.app.url, "connect").oauthCallback({ code: "x", state: "forged" }),
      (err: unknown) => err instanceof ConnectError && /unknown or already used/.test(err.rawMessage),
    );
  });

  test("concurrent calls with a rejected token share one refresh", async () => {
    await connectOauthClient(suite.app, suite.oauth, "shared");
    const before = suite.oauth.tokenRequests.filter((g) => g === "refresh_token").length;
    suite.oauth.rejectSeenTokens();
    const calls = await Promise.all([1, 2, 3, 4].map(() => executeTool(suite.app, "shared-whoami")));
    for (const call of calls) assert.equal(call.body.content, "subject alice", JSON.stringify(call.body));
    assert.equal(suite.oauth.tokenRequests.filter((g) => g === "refresh_token").length, before + 1);
  });

  test("an sse client carries the token on its stream and on its posts", async () => {
    const created = await api(suite.app, "POST", "/api/mcp/client", {
      name: "over_sse", connection_type: "sse", connection_string: suite.oauth.sseUrl, auth_type: "oauth", tools_to_execute: ["*"], oauth_config: { resource: suite.oauth.mcpUrl },
    });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    assert.equal(new URL(created.body.authorize_url).searchParams.get("resource"), suite.oauth.mcpUrl);
    await suite.oauth.approve(created.body.authorize_url);
    const done = await api(suite.app, "POST", created.body.complete_url);
    assert.equal(done.status, 200, JSON.stringify(done.body));
    assert.equal((await api(suite.app, "GET", `/api/mcp/client/${created.body.client_id}`)).body.client.state, "healthy");
    assert.equal((await executeTool(suite.app, "over_sse-whoami")).body.content, "subject alice");
  });

  test("a sticky client switches to the new token on reauthorize and stays healthy", async () => {
    const created = await connectOauthClient(suite.app, suite.oauth, "sticky", { needs_session_stickiness: true });
    const used = suite.oauth.acceptedTokens.at(-1);
    const again = await api(suite.app, "POST", `/api/mcp/client/${created.client_id}/reauthorize`);
    await suite.oauth.approve(again.body.authorize_url);
    assert.equal((await api(suite.app, "POST", again.body.complete_url)).status, 200);
    assert.equal((await executeTool(suite.app, "sticky-whoami")).body.content, "subject alice");
    assert.notEqual(suite.oauth.acceptedTokens.at(-1), used);
    assert.equal((await api(suite.app, "GET", `/api/mcp/client/${created.client_id}`)).body.client.state, "healthy");
  });
});

describe("bad oauth input", () => {
  const suite = oauthSuite();

  const create = (body: Record<string, unknown>) => api(suite.app, "POST", "/api/mcp/client", { connection_type: "http", connection_string: suite.oauth.mcpUrl, auth_type: "oauth", ...body });

  test("an unknown oauth_config field is a 400 naming it", async () => {
    const res = await create({ name: "unknown_field", oauth_config: { client_id: "x", scope: "a" } });
    assert.equal(res.status, 400);
    assert.match(res.body.error.message, /oauth_config\.scope/);
  });

  test("a plain http endpoint on a non-loopback host is a 400", async () => {
    const res = await create({ name: "plain_http", oauth_config: { authorize_url: "http://auth.example.com/authorize", token_url: "https://auth.example.com/token" } });
    assert.equal(res.status, 400);
    assert.match(res.body.error.message, /^oauth_config\.authorize_url: must be an https/);
  });

  test("a client_secret without a client_id is a 400", async () => {
    const res = await create({ name: "lonely_secret", oauth_config: { client_secret: "s" } });
    assert.equal(res.status, 400);
    assert.match(res.body.error.message, /^oauth_config\.client_secret/);
  });

  test("oauth_config on another auth type is a 400", async () => {
    const res = await create({ name: "wrong_type", auth_type: "none", oauth_config: { client_id: "x" } });
    assert.equal(res.status, 400);
    assert.match(res.body.error.message, /^oauth_config: is only for oauth and per_user_oauth clients/);
  });

  test("per_user_oauth validates its oauth_config like oauth", async () => {
    const res = await create({ name: "per_user", auth_type: "per_user_oauth", oauth_config: { token_url: "http://auth.example.com/token" } });
    assert.equal(res.status, 400);
    assert.match(res.body.error.message, /^oauth_config\.token_url: must be an https:\/\/ URL/);
  });

  test("an MCP server that is down is a 422 naming the cause, and nothing is stored", async () => {
    const res = await create({ name: "down", connection_string: "http://127.0.0.1:9/mcp" });
    assert.equal(res.status, 422, JSON.stringify(res.body));
    assert.equal(res.body.error.type, "upstream_oauth_failed");
    assert.equal((await api(suite.app, "GET", "/api/mcp/clients?search=down")).body.count, 0);
  });

  test("an authorization server that answers garbage is a 422, and nothing is stored", async () => {
    const garbage = await garbageServer();
    try {
      const res = await create({ name: "garbage", connection_string: garbage.url });
      assert.equal(res.status, 422, JSON.stringify(res.body));
      assert.match(res.body.error.message, /authorization server metadata|OAuth discovery/);
      assert.equal((await api(suite.app, "GET", "/api/mcp/clients?search=garbage")).body.count, 0);
    } finally {
      await garbage.close();
    }
  });

  test("an update replaces oauth_config, keeps a secret sent back redacted, and checks the new one", async () => {
    const created = await create({ name: "updated", oauth_config: { client_id: "gw", client_secret: "first-secret", scopes: ["a"] } });
    const id = created.body.client_id;
    const put = await api(suite.app, "PUT", `/api/mcp/client/${id}`, { oauth_config: { client_id: "gw", client_secret: "<redacted>", scopes: ["b", "c"] } });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    assert.deepEqual(put.body.client.oauth_config.scopes, ["b", "c"]);
    assert.equal(put.body.client.oauth_config.client_secret, "<redacted>");
    const bad = await api(suite.app, "PUT", `/api/mcp/client/${id}`, { oauth_config: { token_url: "http://auth.example.com/token" } });
    assert.equal(bad.status, 400);
    assert.match(bad.body.error.message, /^oauth_config\.token_url/);
    const cleared = await api(suite.app, "PUT", `/api/mcp/client/${id}`, { oauth_config: { scopes: ["d"] } });
    assert.equal(cleared.status, 200, JSON.stringify(cleared.body));
    assert.equal(cleared.body.client.oauth_config.client_secret, "");
    assert.equal(cleared.body.client.oauth_config.client_id, "");
  });

  test("complete-oauth and status of an unknown attempt are 404", async () => {
    assert.equal((await api(suite.app, "POST", "/api/mcp/client/00000000-0000-4000-8000-000000000000/complete-oauth")).status, 404);
    assert.equal((await api(suite.app, "GET", "/api/oauth/config/nope/status")).status, 404);
  });

  test("reauthorize on a client of another auth type is a 400", async () => {
    const created = await api(suite.app, "POST", "/api/mcp/client", { name: "plain", connection_type: "http", connection_string: suite.oauth.mcpUrl, disabled: true });
    const res = await api(suite.app, "POST", `/api/mcp/client/${created.body.client_id}/reauthorize`);
    assert.equal(res.status, 400);
    assert.equal(res.body.error.type, "not_applicable");
  });
});

describe("an oauth client across a restart", () => {
  test("keeps its token: tool calls work again without consent", async () => {
    const oauth = await startOauthFixture();
    let app = await startApp();
    try {
      await connectOauthClient(app, oauth, "durable");
      const options = app.restartOptions;
      await app.stop({ keepData: true });
      app = await startApp(options);
      await app.runtime.firstConnectionsDone();
      assert.equal((await executeTool(app, "durable-whoami")).body.content, "subject alice");
    } finally {
      await app.stop();
      await oauth.close();
    }
  });
});

describe("an oauth client declared in the config file", () => {
  test("starts in pending_verification, and initiate-verification leads to a connection", async () => {
    const oauth = await startOauthFixture();
    const file = parseConfig({ mcp: { client_configs: [{ name: "filed", connection_type: "http", connection_string: oauth.mcpUrl, auth_type: "oauth", tools_to_execute: ["*"], oauth_config: { scopes: ["mcp:tools"] } }] } }, {});
    const app = await startApp(appOptionsFromConfig(file));
    try {
      const listed = (await api(app, "GET", "/api/mcp/clients")).body.clients[0];
      assert.equal(listed.state, "pending_verification");
      assert.deepEqual(listed.oauth_config.scopes, ["mcp:tools"]);
      assert.equal((await executeTool(app, "filed-whoami")).status, 409);
      const started = await api(app, "POST", `/api/mcp/client/${listed.client_id}/initiate-verification`);
      assert.equal(started.status, 200, JSON.stringify(started.body));
      await oauth.approve(started.body.authorize_url);
      assert.equal((await api(app, "POST", started.body.complete_url)).status, 200);
      assert.equal((await executeTool(app, "filed-whoami")).body.content, "subject alice");
    } finally {
      await app.stop();
      await oauth.close();
    }
  });
});

describe("two instances sharing one PostgreSQL database", () => {
  test("refresh a rejected token once between them: the second adopts the first's token", { skip: testDatabaseUrl ? false : "needs GW_TEST_DATABASE_URL (the embedded database serves one instance)" }, async () => {
    const oauth = await startOauthFixture();
    const first = await startApp();
    let second: Awaited<ReturnType<typeof startApp>> | undefined;
    try {
      await connectOauthClient(first, oauth, "shared_db");
      // The same schema and the same data directory (its encryption key): a second node of one deployment.
      second = await startApp(first.restartOptions);
      await second.runtime.firstConnectionsDone();
      const before = oauth.tokenRequests.filter((g) => g === "refresh_token").length;
      oauth.rejectSeenTokens();
      const [a, b] = await Promise.all([executeTool(first, "shared_db-whoami"), executeTool(second, "shared_db-whoami")]);
      assert.equal(a.body.content, "subject alice", JSON.stringify(a.body));
      assert.equal(b.body.content, "subject alice", JSON.stringify(b.body));
      assert.equal(oauth.tokenRequests.filter((g) => g === "refresh_token").length, before + 1);
    } finally {
      await second?.stop({ keepData: true });
      await first.stop();
      await oauth.close();
    }
  });
});

describe("upstream OAuth with admin authentication on", () => {
  const suite = oauthSuite({ auth: { enabled: true, username: "admin", password: "pw-oauth", sessionTtlMs: 3_600_000 } });

  test("the callback and the result page need no session; creation, status and complete-oauth need the admin's", async () => {
    const anonymous = await api(suite.app, "POST", "/api/mcp/client", { name: "guarded", connection_type: "http", connection_string: suite.oauth.mcpUrl, auth_type: "oauth" });
    assert.equal(anonymous.status, 401);
    const token = (await api(suite.app, "POST", "/api/session/login", { username: "admin", password: "pw-oauth" })).body.token as string;
    const admin = { authorization: `Bearer ${token}` };
    const created = await api(suite.app, "POST", "/api/mcp/client", { name: "guarded", connection_type: "http", connection_string: suite.oauth.mcpUrl, auth_type: "oauth", tools_to_execute: ["*"] }, admin);
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const callback = await suite.oauth.approve(created.body.authorize_url);
    assert.equal(callback.status, 302);
    const page = await fetch(`${suite.app.url}${callback.headers.get("location") ?? ""}`);
    assert.match(await page.text(), /id="oauth-authorized"/);
    assert.equal((await api(suite.app, "GET", created.body.status_url)).status, 401);
    assert.equal((await api(suite.app, "POST", created.body.complete_url)).status, 401);
    assert.equal((await api(suite.app, "POST", created.body.complete_url, undefined, admin)).status, 200);
  });
});
