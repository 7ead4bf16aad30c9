import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Code, ConnectError } from "@connectrpc/connect";
import { McpClientService } from "../../gen/gw/admin/v1/mcp_client_pb.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { clientFor } from "../helpers/clients.js";

const stdioClient = { name: "local", connection_type: "stdio", stdio_config: { command: "node", args: ["server.js"], envs: ["HOME"] } };

describe("admin authentication enabled", () => {
  let app: TestApp;
  before(async () => {
    app = await startApp({ auth: { enabled: true, username: "admin", password: "s3cret-pw", sessionTtlMs: 3_600_000 } });
  });
  after(() => app.stop());

  async function login(): Promise<string> {
    const res = await api(app, "POST", "/api/session/login", { username: "admin", password: "s3cret-pw" });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.ok(Date.parse(res.body.expires_at) > Date.now());
    return res.body.token as string;
  }

  test("the admin API refuses a call without a session", async () => {
    const res = await api(app, "GET", "/api/mcp/clients");
    assert.equal(res.status, 401);
    assert.equal(res.body.error.type, "admin_session_required");
    assert.match(res.body.error.message, /POST \/api\/session\/login/);
  });

  test("the admin API refuses a Connect call without a session", async () => {
    await assert.rejects(
      clientFor(McpClientService, app.url, "connect").listMcpClients({}),
      (err: unknown) => err instanceof ConnectError && err.code === Code.Unauthenticated,
    );
  });

  test("login with a wrong password is a 401", async () => {
    const res = await api(app, "POST", "/api/session/login", { username: "admin", password: "nope" });
    assert.equal(res.status, 401);
    assert.doesNotMatch(JSON.stringify(res.body), /s3cret-pw/);
  });

  test("login without a password is a 400 naming the field", async () => {
    const res = await api(app, "POST", "/api/session/login", { username: "admin" });
    assert.equal(res.status, 400);
    assert.match(res.body.error.message, /^password:/);
  });

  test("a session token opens the admin API over REST and Connect", async () => {
    const token = await login();
    const res = await api(app, "GET", "/api/mcp/clients", undefined, { authorization: `Bearer ${token}` });
    assert.equal(res.status, 200);
    const transportClient = clientFor(McpClientService, app.url, "connect");
    const listed = await transportClient.listMcpClients({}, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(listed.count, res.body.count);
  });

  test("an admin session may create a stdio client", async () => {
    const token = await login();
    const res = await api(app, "POST", "/api/mcp/client", stdioClient, { authorization: `Bearer ${token}` });
    assert.equal(res.status, 200, JSON.stringify(res.body));
  });

  test("a garbage token is refused", async () => {
    const res = await api(app, "GET", "/api/mcp/clients", undefined, { authorization: "Bearer not-a-real-token" });
    assert.equal(res.status, 401);
  });

  test("logout ends the session", async () => {
    const token = await login();
    const out = await api(app, "POST", "/api/session/logout", undefined, { authorization: `Bearer ${token}` });
    assert.equal(out.status, 200);
    const res = await api(app, "GET", "/api/mcp/clients", undefined, { authorization: `Bearer ${token}` });
    assert.equal(res.status, 401);
  });

  test("a session survives a restart of the gateway", async () => {
    const token = await login();
    await app.stop({ keepData: true });
    app = await startApp(app.restartOptions);
    const res = await api(app, "GET", "/api/mcp/clients", undefined, { authorization: `Bearer ${token}` });
    assert.equal(res.status, 200);
  });
});

describe("admin sessions expire", () => {
  let app: TestApp;
  before(async () => {
    app = await startApp({ auth: { enabled: true, username: "admin", password: "pw", sessionTtlMs: 1 } });
  });
  after(() => app.stop());

  test("an expired session token is refused", async () => {
    const login = await api(app, "POST", "/api/session/login", { username: "admin", password: "pw" });
    assert.equal(login.status, 200);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const res = await api(app, "GET", "/api/mcp/clients", undefined, { authorization: `Bearer ${login.body.token}` });
    assert.equal(res.status, 401);
  });
});

describe("admin authentication disabled", () => {
  let app: TestApp;
  before(async () => {
    app = await startApp();
  });
  after(() => app.stop());

  test("the admin API is open", async () => {
    const res = await api(app, "GET", "/api/mcp/clients");
    assert.equal(res.status, 200);
  });

  test("creating a stdio client is refused with a message saying it needs an admin session", async () => {
    const res = await api(app, "POST", "/api/mcp/client", stdioClient);
    assert.equal(res.status, 403);
    assert.equal(res.body.error.type, "admin_session_required");
    assert.match(res.body.error.message, /needs an admin session/);
    assert.match(res.body.error.message, /auth_config/);
  });

  test("login explains that admin authentication is disabled", async () => {
    const res = await api(app, "POST", "/api/session/login", { username: "a", password: "b" });
    assert.equal(res.status, 400);
    assert.match(res.body.error.message, /auth_config\.is_enabled/);
  });
});
