/** verify-headers: the one-time upstream verify of a per_user_headers client declared in the config file. */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { startMcpFixture, type McpFixture } from "../fixtures/mcp-server.js";

describe("verify-headers", () => {
  let app: TestApp;
  let fixture: McpFixture;
  let id: string;

  before(async () => {
    fixture = await startMcpFixture({ requireHeader: { name: "x-user-token", value: "right" } });
    app = await startApp({
      mcpClients: [{
        name: "crm", connectionType: "http", connectionString: fixture.httpUrl, stdioConfig: null, authType: "per_user_headers",
        headers: {}, perUserHeaderKeys: ["x-user-token"], toolsToExecute: ["*"], toolsToAutoExecute: [], toolSyncInterval: 0,
        needsSessionStickiness: null, disabled: false, allowOnAllVirtualKeys: false, oauthConfig: null, isCodeModeClient: false,
      }],
    });
    const listed = await api(app, "GET", "/api/mcp/clients?search=crm");
    id = listed.body.clients[0].client_id;
  });
  after(async () => {
    await app.stop();
    await fixture.close();
  });

  async function state(): Promise<string> {
    return (await api(app, "GET", "/api/mcp/clients?search=crm")).body.clients[0].state;
  }

  test("a per_user_headers client from the config file starts in pending_verification", async () => {
    assert.equal(await state(), "pending_verification");
  });

  test("values that miss a declared key are a 400 naming it", async () => {
    const res = await api(app, "POST", `/api/mcp/client/${id}/verify-headers`, { user_headers: {} });
    assert.equal(res.status, 400);
    assert.match(res.body.error.message, /user_headers\.x-user-token/);
  });

  test("values the upstream rejects are a 422 and the client stays unverified", async () => {
    const res = await api(app, "POST", `/api/mcp/client/${id}/verify-headers`, { user_headers: { "x-user-token": "wrong" } });
    assert.equal(res.status, 422);
    assert.equal(res.body.error.type, "upstream_verify_failed");
    assert.equal(await state(), "pending_verification");
  });

  test("values the upstream accepts verify the client: 200 with tools_count, and it becomes healthy", async () => {
    const res = await api(app, "POST", `/api/mcp/client/${id}/verify-headers`, { user_headers: { "x-user-token": "right" } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.tools_count, 3);
    assert.equal(await state(), "healthy");
    const { McpClientRecord } = await import("../../src/store/index.js");
    const rec = await app.store.fork().findOneOrFail(McpClientRecord, { id });
    assert.deepEqual(rec.discoveryHeaders, { "x-user-token": "right" });
    assert.equal(rec.discoveryStatus, "active");
    const raw = await app.store.fork().getConnection().execute<{ discovery_headers: string }[]>(`select discovery_headers from mcp_client where id = ?`, [id]);
    assert.match(raw[0]?.discovery_headers ?? "", /^v1:/);
  });

  test("verify-headers on a verified client whose admin credential is healthy is a 409", async () => {
    const res = await api(app, "POST", `/api/mcp/client/${id}/verify-headers`, { user_headers: { "x-user-token": "right" } });
    assert.equal(res.status, 409);
    assert.equal(res.body.error.type, "already_verified");
  });

  test("verify-headers on a client that is not per_user_headers is a 400", async () => {
    const other = await api(app, "POST", "/api/mcp/client", { name: "plain", connection_type: "sse", connection_string: "http://127.0.0.1:9/sse" });
    const res = await api(app, "POST", `/api/mcp/client/${other.body.client_id}/verify-headers`, { user_headers: { a: "b" } });
    assert.equal(res.status, 400);
    assert.match(res.body.error.message, /only to per_user_headers/);
  });
});
