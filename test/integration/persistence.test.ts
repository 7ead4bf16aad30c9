/** Created clients survive restarts; header values are ciphertext at rest and appear in no response or log line. */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { McpClientService } from "../../gen/gw/admin/v1/mcp_client_pb.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { clientFor } from "../helpers/clients.js";
import { startMcpFixture, type McpFixture } from "../fixtures/mcp-server.js";

const SECRET = "Bearer sk-live-7f3a9c2e51d04b8e";
const USER_SECRET = "user-token-5b2c8e1f";

describe("persistence across restarts", () => {
  let app: TestApp;
  let fixture: McpFixture;
  let headersId: string;
  let perUserId: string;
  let firstLog: string[] = [];

  before(async () => {
    fixture = await startMcpFixture({ requireHeader: { name: "x-user-token", value: USER_SECRET } });
    app = await startApp();
    const created = await api(app, "POST", "/api/mcp/client", {
      name: "secretive",
      connection_type: "sse",
      connection_string: fixture.sseUrl,
      auth_type: "headers",
      headers: { authorization: { value: SECRET } },
      tools_to_execute: ["echo"],
    });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    headersId = created.body.client_id;
    const perUser = await api(app, "POST", "/api/mcp/client", {
      name: "per_user",
      connection_type: "http",
      connection_string: fixture.httpUrl,
      auth_type: "per_user_headers",
      per_user_header_keys: ["x-user-token"],
      user_headers: { "x-user-token": USER_SECRET },
    });
    assert.equal(perUser.status, 200, JSON.stringify(perUser.body));
    perUserId = perUser.body.client_id;
    // A bad update carrying the secret must not echo it either.
    const bad = await api(app, "PUT", `/api/mcp/client/${headersId}`, { headers: { "bad header": { value: SECRET } } });
    assert.equal(bad.status, 400);
    assert.doesNotMatch(JSON.stringify(bad.body), /sk-live/);
    firstLog = app.logLines;
    await app.stop({ keepData: true });
    app = await startApp(app.restartOptions);
  });
  after(async () => {
    await app.stop();
    await fixture.close();
  });

  test("clients created before a restart are listed after it", async () => {
    const listed = await api(app, "GET", "/api/mcp/clients");
    const names = listed.body.clients.map((c: { name: string }) => c.name).sort();
    assert.deepEqual(names, ["per_user", "secretive"]);
    const secretive = listed.body.clients.find((c: { client_id: string }) => c.client_id === headersId);
    assert.deepEqual(secretive.tools_to_execute, ["echo"]);
    assert.equal(secretive.auth_type, "headers");
    const perUser = listed.body.clients.find((c: { client_id: string }) => c.client_id === perUserId);
    assert.deepEqual(perUser.tools.map((t: { name: string }) => t.name).sort(), ["add", "echo", "slow"]);
  });

  test("header values are ciphertext in the database and decrypt to the original", async () => {
    const em = app.store.fork();
    const rows = await em.getConnection().execute<{ headers: string }[]>(`select headers from mcp_client where id = ?`, [headersId]);
    const raw = rows[0]?.headers ?? "";
    assert.match(raw, /^v1:/);
    assert.ok(!raw.includes("sk-live"));
    const { McpClientRecord } = await import("../../src/store/index.js");
    const rec = await em.findOneOrFail(McpClientRecord, { id: headersId });
    assert.equal(rec.headers["authorization"], SECRET);
  });

  test("user_headers given at creation are not persisted", async () => {
    const rows = await app.store.fork().getConnection().execute<Record<string, unknown>[]>(`select * from mcp_client where id = ?`, [perUserId]);
    assert.ok(!JSON.stringify(rows).includes(USER_SECRET));
  });

  test("no response over REST or RPC contains a header value", async () => {
    const rest = await api(app, "GET", "/api/mcp/clients");
    const text = JSON.stringify(rest.body);
    assert.ok(!text.includes("sk-live") && !text.includes(USER_SECRET));
    const rpc = await clientFor(McpClientService, app.url, "grpc").listMcpClients({});
    const rpcText = JSON.stringify(rpc, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v));
    assert.ok(!rpcText.includes("sk-live") && !rpcText.includes(USER_SECRET));
    const openapi = await api(app, "GET", "/openapi.json");
    assert.ok(!JSON.stringify(openapi.body).includes("sk-live"));
  });

  test("no log line contains a header value", async () => {
    const lines = [...firstLog, ...app.logLines];
    assert.ok(lines.some((l) => l.includes("MCP client created")));
    for (const line of lines) {
      assert.ok(!line.includes("sk-live") && !line.includes(USER_SECRET), line);
    }
  });
});
