import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { equals } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  AuthType,
  ClientState,
  ConnectionType,
  McpClientSchema,
  McpClientService,
} from "../../gen/gw/admin/v1/mcp_client_pb.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { clientFor } from "../helpers/clients.js";
import { startMcpFixture, type McpFixture } from "../fixtures/mcp-server.js";

describe("MCP client management API", () => {
  let app: TestApp;
  let fixture: McpFixture;

  before(async () => {
    fixture = await startMcpFixture();
    app = await startApp();
  });
  after(async () => {
    await app.stop();
    await fixture.close();
  });

  async function listById(protocol: "connect" | "grpc" | "grpc-web", id: string) {
    const res = await clientFor(McpClientService, app.url, protocol).listMcpClients({});
    const found = res.clients.find((c) => c.clientId === id);
    assert.ok(found, `client ${id} listed over ${protocol}`);
    return found;
  }

  test("a client created over REST reads back equal over Connect, gRPC and gRPC-Web", async () => {
    const created = await api(app, "POST", "/api/mcp/client", {
      name: "docs_rest",
      connection_type: "http",
      connection_string: fixture.httpUrl,
      auth_type: "headers",
      headers: { "x-api-key": { value: "k-123" } },
      tools_to_execute: ["*"],
      tools_to_auto_execute: ["echo"],
      tool_sync_interval: 5,
    });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    assert.equal(created.body.status, "success");
    assert.match(created.body.message, /docs_rest/);
    const id: string = created.body.client_id;

    const overConnect = await listById("connect", id);
    const overGrpc = await listById("grpc", id);
    const overGrpcWeb = await listById("grpc-web", id);
    assert.ok(equals(McpClientSchema, overConnect, overGrpc));
    assert.ok(equals(McpClientSchema, overConnect, overGrpcWeb));
    assert.equal(overConnect.name, "docs_rest");
    assert.equal(overConnect.connectionType, ConnectionType.HTTP);
    assert.equal(overConnect.connectionString, fixture.httpUrl);
    assert.equal(overConnect.authType, AuthType.HEADERS);
    assert.deepEqual(overConnect.toolsToExecute, ["*"]);
    assert.deepEqual(overConnect.toolsToAutoExecute, ["echo"]);
    assert.equal(overConnect.toolSyncInterval, 5);
    assert.equal(overConnect.headers["x-api-key"]?.value, "<redacted>");

    const rest = await api(app, "GET", "/api/mcp/clients");
    const overRest = rest.body.clients.find((c: { client_id: string }) => c.client_id === id);
    assert.equal(overRest.name, overConnect.name);
    assert.equal(overRest.connection_type, "http");
    assert.equal(overRest.auth_type, "headers");
    assert.deepEqual(overRest.headers, { "x-api-key": { value: "<redacted>" } });
    assert.deepEqual(overRest.tools_to_execute, overConnect.toolsToExecute);
    assert.ok(overConnect.createdAt);
    assert.equal(new Date(overRest.created_at).getTime(), timestampDate(overConnect.createdAt).getTime());
  });

  test("a client created over Connect reads back equal over REST and gRPC", async () => {
    const res = await clientFor(McpClientService, app.url, "connect").createMcpClient({
      client: {
        name: "docs_connect",
        connectionType: ConnectionType.SSE,
        connectionString: fixture.sseUrl,
        toolsToExecute: ["echo", "add"],
      },
    });
    assert.equal(res.status, "success");
    const overGrpc = await listById("grpc", res.clientId);
    const rest = await api(app, "GET", "/api/mcp/clients?search=docs_connect");
    assert.equal(rest.status, 200);
    assert.equal(rest.body.count, 1);
    assert.equal(rest.body.total_count, 1);
    const overRest = rest.body.clients[0];
    assert.equal(overRest.client_id, res.clientId);
    assert.equal(overRest.connection_type, "sse");
    assert.equal(overRest.auth_type, "none");
    assert.deepEqual(overRest.tools_to_execute, ["echo", "add"]);
    assert.deepEqual(overRest.tools_to_auto_execute, []);
    assert.equal(overRest.needs_session_stickiness, true, "sse is always sticky");
    assert.equal(overGrpc.connectionType, ConnectionType.SSE);
    assert.deepEqual(overGrpc.toolsToExecute, ["echo", "add"]);
  });

  test("a per-call http client is discovered at creation and reports healthy with its tools", async () => {
    const created = await api(app, "POST", "/api/mcp/client", {
      name: "percall",
      connection_type: "http",
      connection_string: fixture.httpUrl,
      tools_to_execute: ["*"],
    });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    assert.match(created.body.message, /3 tools discovered/);
    const listed = await api(app, "GET", "/api/mcp/clients?search=percall");
    const client = listed.body.clients[0];
    assert.equal(client.state, "healthy");
    assert.equal(client.needs_session_stickiness, false);
    assert.deepEqual(client.tools.map((t: { name: string }) => t.name).sort(), ["add", "echo", "slow"]);
    assert.equal(client.tools.find((t: { name: string }) => t.name === "add").input_schema.type, "object");
    assert.equal(client.last_failure, undefined);
  });

  test("a per-call http client whose first discovery fails is created unstable with a connect last_failure", async () => {
    const created = await api(app, "POST", "/api/mcp/client", {
      name: "percall_down",
      connection_type: "http",
      connection_string: "http://127.0.0.1:1/mcp",
    });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const listed = await api(app, "GET", "/api/mcp/clients?search=percall_down");
    const client = listed.body.clients[0];
    assert.equal(client.state, "unstable");
    assert.equal(client.last_failure.stage, "connect");
    assert.ok(client.last_failure.message.length > 0 && client.last_failure.message.length <= 512);
    assert.doesNotMatch(client.last_failure.message, /\s\s/);
    assert.equal(client.last_failure.at, client.last_failure.since);
  });

  test("a sticky client is connected at creation, a disabled one reports disabled", async () => {
    const sticky = await api(app, "POST", "/api/mcp/client", {
      name: "sticky_http",
      connection_type: "http",
      connection_string: fixture.httpUrl,
      needs_session_stickiness: true,
    });
    assert.equal(sticky.status, 200);
    const off = await api(app, "POST", "/api/mcp/client", {
      name: "off_client",
      connection_type: "http",
      connection_string: fixture.httpUrl,
      disabled: true,
    });
    assert.equal(off.status, 200);
    const listed = await api(app, "GET", "/api/mcp/clients");
    const byName = new Map(listed.body.clients.map((c: { name: string }) => [c.name, c]));
    assert.equal((byName.get("sticky_http") as { state: string }).state, "healthy");
    assert.equal((byName.get("off_client") as { state: string }).state, "disabled");
  });

  test("update applies only the fields sent: [] clears a list, an omitted field is kept", async () => {
    const created = await api(app, "POST", "/api/mcp/client", {
      name: "upd", connection_type: "sse", connection_string: fixture.sseUrl,
      tools_to_execute: ["echo"], tools_to_auto_execute: ["echo"],
    });
    const id = created.body.client_id;
    const cleared = await api(app, "PUT", `/api/mcp/client/${id}`, { tools_to_execute: [] });
    assert.equal(cleared.status, 200, JSON.stringify(cleared.body));
    assert.deepEqual(cleared.body.client.tools_to_execute, []);
    assert.deepEqual(cleared.body.client.tools_to_auto_execute, ["echo"]);
    const renamed = await api(app, "PUT", `/api/mcp/client/${id}`, { name: "upd2", disabled: true });
    assert.equal(renamed.status, 200);
    assert.equal(renamed.body.client.name, "upd2");
    assert.equal(renamed.body.client.state, "disabled");
    assert.deepEqual(renamed.body.client.tools_to_execute, []);
  });

  test("update over Connect needs an update_mask", async () => {
    const created = await api(app, "POST", "/api/mcp/client", { name: "maskless", connection_type: "sse", connection_string: fixture.sseUrl });
    const client = clientFor(McpClientService, app.url, "connect");
    await assert.rejects(
      client.updateMcpClient({ clientId: created.body.client_id, client: { name: "x" } }),
      (err: unknown) => err instanceof ConnectError && err.code === Code.InvalidArgument && /update_mask/.test(err.rawMessage),
    );
    const ok = await client.updateMcpClient({ clientId: created.body.client_id, client: { name: "masked" }, updateMask: { paths: ["name"] } });
    assert.equal(ok.client?.name, "masked");
  });

  test("a header value sent back as <redacted> keeps the stored value", async () => {
    const created = await api(app, "POST", "/api/mcp/client", {
      name: "keepsecret", connection_type: "sse", connection_string: fixture.sseUrl, auth_type: "headers",
      headers: { authorization: { value: "Bearer keep-me-123" } },
    });
    const id = created.body.client_id;
    const res = await api(app, "PUT", `/api/mcp/client/${id}`, { headers: { authorization: { value: "<redacted>" }, "x-extra": { value: "e" } } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const em = app.store.fork();
    const { McpClientRecord } = await import("../../src/store/index.js");
    const rec = await em.findOneOrFail(McpClientRecord, { id });
    assert.deepEqual(rec.headers, { authorization: "Bearer keep-me-123", "x-extra": "e" });
  });

  test("delete removes the client; deleting again is a 404", async () => {
    const created = await api(app, "POST", "/api/mcp/client", { name: "gone", connection_type: "sse", connection_string: fixture.sseUrl });
    const id = created.body.client_id;
    const del = await api(app, "DELETE", `/api/mcp/client/${id}`);
    assert.equal(del.status, 200);
    assert.equal(del.body.status, "success");
    const again = await api(app, "DELETE", `/api/mcp/client/${id}`);
    assert.equal(again.status, 404);
    assert.equal(again.body.error.type, "not_found");
    assert.match(again.body.error.message, new RegExp(id));
  });

  test("reconnect and close on a per-call client are a 400 saying it has no persistent connection", async () => {
    const created = await api(app, "POST", "/api/mcp/client", { name: "percall_rc", connection_type: "http", connection_string: fixture.httpUrl });
    for (const action of ["reconnect", "close"]) {
      const res = await api(app, "POST", `/api/mcp/client/${created.body.client_id}/${action}`);
      assert.equal(res.status, 400);
      assert.match(res.body.error.message, /uses per-call connections and has no persistent connection/);
    }
  });

  test("list pages with limit and offset and reports the total", async () => {
    const page = await api(app, "GET", "/api/mcp/clients?limit=2&offset=1");
    assert.equal(page.status, 200);
    assert.equal(page.body.count, 2);
    assert.ok(page.body.total_count >= 4);
    const negative = await api(app, "GET", "/api/mcp/clients?limit=-1");
    assert.equal(negative.status, 400);
    assert.match(negative.body.error.message, /limit/);
  });

  test("the state of a client is also reported as ClientState over gRPC", async () => {
    const listed = await clientFor(McpClientService, app.url, "grpc").listMcpClients({ search: "percall" });
    const healthy = listed.clients.find((c) => c.name === "percall");
    assert.equal(healthy?.state, ClientState.HEALTHY);
  });
});
