/**
 * The admin side of per_user_headers clients: create-time verification (422, nothing persisted; the tool
 * count on success), pending_verification from the config file, verify-headers 422/200/409 with the admin
 * discovery credential hidden from the sessions listing, renames and deletions following through to
 * credentials, and the auth-required answer over Connect and gRPC.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { StructSchema, type Struct } from "@bufbuild/protobuf/wkt";
import { toJson } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { McpClientRecord, McpUserCredentialRecord } from "../../src/store/index.js";
import { McpToolService } from "../../gen/gw/inference/v1/tool_pb.js";
import { CredentialService } from "../../gen/gw/credential/v1/credential_pb.js";
import { startMcpFixture, type McpFixture } from "../fixtures/mcp-server.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { clientFor, type Protocol } from "../helpers/clients.js";

const ALICE = "sk-gw-alice";
const GOOD = "good-user-token";

let fixture: McpFixture;
let app: TestApp;

function createBody(name: string, userToken: string) {
  return {
    name, connection_type: "http", connection_string: fixture.httpUrl, auth_type: "per_user_headers",
    per_user_header_keys: ["x-user-token"], user_headers: { "x-user-token": userToken }, tools_to_execute: ["*"],
  };
}

function execute(name: string, vk: string) {
  return api(app, "POST", "/v1/mcp/tool/execute", { id: "c1", type: "function", function: { name, arguments: JSON.stringify({ text: "x" }) } }, { "x-gw-vk": vk });
}

async function enrol(tool: string, vk: string): Promise<void> {
  const required = await execute(tool, vk);
  assert.equal(required.status, 401, JSON.stringify(required.body));
  const flow = new URL(required.body.mcp_auth_required.submit_url).searchParams.get("flow");
  const res = await api(app, "PUT", `/api/mcp/per-user-headers/flows/${flow}`, { headers: { "x-user-token": GOOD } });
  assert.equal(res.status, 200, JSON.stringify(res.body));
}

async function sessions(): Promise<{ mcp_client_name: string; status: string; identity: string }[]> {
  return (await api(app, "GET", "/api/mcp/sessions")).body.sessions;
}

before(async () => {
  // echo: the fixture repeats a rejected value in its 401, as careless servers do.
  fixture = await startMcpFixture({ acceptHeader: { name: "x-user-token", values: [GOOD], echo: true } });
  app = await startApp({
    mcpClients: [{
      name: "declared", connectionType: "http", connectionString: fixture.httpUrl, stdioConfig: null, authType: "per_user_headers",
      headers: {}, perUserHeaderKeys: ["x-user-token"], toolsToExecute: ["*"], toolsToAutoExecute: [], toolSyncInterval: 0,
      needsSessionStickiness: null, disabled: false, allowOnAllVirtualKeys: false, oauthConfig: null, isCodeModeClient: false,
    }],
    inference: inferenceOptionsFromFile({}, [
      { id: "vk-alice", name: "alice", value: ALICE, mcp_configs: [{ mcp_client_name: "crm", tools_to_execute: ["*"] }, { mcp_client_name: "declared", tools_to_execute: ["*"] }] },
    ]),
  });
});

after(async () => {
  await app?.stop();
  await fixture?.close();
});

describe("create", () => {
  test("create with user_headers the upstream rejects is a 422 with the upstream's error, and nothing is persisted", async () => {
    const res = await api(app, "POST", "/api/mcp/client", createBody("rejected", "bad-sample-value"));
    assert.equal(res.status, 422);
    assert.equal(res.body.error.type, "upstream_verify_failed");
    assert.match(res.body.error.message, /missing or wrong x-user-token/);
    assert.ok(!res.body.error.message.includes("bad-sample-value"), "a value the upstream echoed is cut out of the error");
    assert.equal((await api(app, "GET", "/api/mcp/clients?search=rejected")).body.total_count, 0);
    assert.equal(await app.store.fork().count(McpClientRecord, { name: "rejected" }), 0);
  });

  test("create with accepted user_headers says how many tools it discovered, and the client is healthy", async () => {
    const res = await api(app, "POST", "/api/mcp/client", createBody("crm", GOOD));
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.match(res.body.message, /3 tools discovered/);
    const listed = (await api(app, "GET", "/api/mcp/clients?search=crm")).body.clients[0];
    assert.equal(listed.state, "healthy");
    assert.equal(listed.needs_session_stickiness, false);
  });

  test("the create-time sample values are not kept: no admin discovery credential and no session", async () => {
    const rec = await app.store.fork().findOneOrFail(McpClientRecord, { name: "crm" });
    assert.equal(rec.discoveryHeaders, null);
    assert.deepEqual(await sessions(), []);
  });

  test("user_headers on an update are refused: verify-headers is the way", async () => {
    const rec = await app.store.fork().findOneOrFail(McpClientRecord, { name: "crm" });
    const res = await api(app, "PUT", `/api/mcp/client/${rec.id}`, { user_headers: { "x-user-token": GOOD } });
    assert.equal(res.status, 400);
    assert.match(res.body.error.message, /verify-headers/);
  });
});

describe("verify-headers", () => {
  let id: string;
  before(async () => {
    id = (await api(app, "GET", "/api/mcp/clients?search=declared")).body.clients[0].client_id;
  });

  test("a per_user_headers client from the config file starts in pending_verification and refuses calls with a 409", async () => {
    assert.equal((await api(app, "GET", "/api/mcp/clients?search=declared")).body.clients[0].state, "pending_verification");
    const res = await execute("declared-echo", ALICE);
    assert.equal(res.status, 409);
    assert.match(res.body.error.message, /verify-headers/);
  });

  test("values the upstream rejects are a 422 without the echoed value, and the client stays unverified", async () => {
    const res = await api(app, "POST", `/api/mcp/client/${id}/verify-headers`, { user_headers: { "x-user-token": "wrong-sample-value" } });
    assert.equal(res.status, 422);
    assert.ok(!res.body.error.message.includes("wrong-sample-value"));
    assert.equal((await api(app, "GET", "/api/mcp/clients?search=declared")).body.clients[0].state, "pending_verification");
  });

  test("accepted values are a 200 with tools_count, and the client becomes healthy", async () => {
    const res = await api(app, "POST", `/api/mcp/client/${id}/verify-headers`, { user_headers: { "x-user-token": GOOD } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.tools_count, 3);
    assert.equal((await api(app, "GET", "/api/mcp/clients?search=declared")).body.clients[0].state, "healthy");
  });

  test("the admin discovery credential is kept encrypted and hidden from the sessions listing", async () => {
    const rows = await app.store.fork().getConnection().execute<{ discovery_headers: string }[]>(`select discovery_headers from mcp_client where id = ?`, [id]);
    assert.match(rows[0]?.discovery_headers ?? "", /^v1:/);
    assert.deepEqual(await sessions(), []);
  });

  test("verify-headers on a verified client whose admin credential is healthy is a 409", async () => {
    const res = await api(app, "POST", `/api/mcp/client/${id}/verify-headers`, { user_headers: { "x-user-token": GOOD } });
    assert.equal(res.status, 409);
    assert.equal(res.body.error.type, "already_verified");
  });

  test("verify-headers on a client verified at creation (no admin credential) is a 409", async () => {
    const crm = (await api(app, "GET", "/api/mcp/clients?search=crm")).body.clients[0].client_id;
    const res = await api(app, "POST", `/api/mcp/client/${crm}/verify-headers`, { user_headers: { "x-user-token": GOOD } });
    assert.equal(res.status, 409);
  });
});

describe("the auth-required answer over RPC", () => {
  for (const protocol of ["connect", "grpc"] as const satisfies readonly Protocol[]) {
    test(`ExecuteTool over ${protocol} is unauthenticated with the mcp_auth_required payload as a Struct detail`, async () => {
      const client = clientFor(McpToolService, app.url, protocol);
      const err = await client
        .executeTool({ id: "c1", type: "function", function: { name: "crm-echo", arguments: "{\"text\":\"x\"}" } }, { headers: { "x-gw-vk": ALICE } })
        .then(() => assert.fail("the call ran"), (e: unknown) => ConnectError.from(e));
      assert.equal(err.code, Code.Unauthenticated);
      const detail = err.findDetails(StructSchema)[0] as Struct | undefined;
      assert.ok(detail);
      const json = toJson(StructSchema, detail) as { mcp_auth_required: { kind: string; mcp_client_name: string } };
      assert.equal(json.mcp_auth_required.kind, "headers");
      assert.equal(json.mcp_auth_required.mcp_client_name, "crm");
    });
  }

  test("ListSessions over gRPC lists the caller's credential", async () => {
    await enrol("crm-echo", ALICE);
    const res = await clientFor(CredentialService, app.url, "grpc").listSessions({}, { headers: { "x-gw-vk": ALICE } });
    assert.deepEqual(res.sessions.map((s) => [s.mcpClientName, s.identity, s.status]), [["crm", "alice", "active"]]);
  });
});

describe("changes that follow through to credentials", () => {
  test("renaming a client orphans the credentials of keys that grant it by name, and renaming back restores them", async () => {
    const crm = (await api(app, "GET", "/api/mcp/clients?search=crm")).body.clients[0].client_id;
    assert.equal((await api(app, "PUT", `/api/mcp/client/${crm}`, { name: "crm2" })).status, 200);
    assert.deepEqual((await sessions()).map((s) => [s.mcp_client_name, s.status]), [["crm2", "orphaned"]]);
    assert.equal((await api(app, "PUT", `/api/mcp/client/${crm}`, { name: "crm" })).status, 200);
    assert.deepEqual((await sessions()).map((s) => [s.mcp_client_name, s.status]), [["crm", "active"]]);
  });

  test("deleting a client deletes its credentials", async () => {
    await enrol("declared-echo", ALICE);
    assert.equal((await sessions()).length, 2);
    const declared = (await api(app, "GET", "/api/mcp/clients?search=declared")).body.clients[0].client_id;
    assert.equal((await api(app, "DELETE", `/api/mcp/client/${declared}`)).status, 200);
    assert.deepEqual((await sessions()).map((s) => s.mcp_client_name), ["crm"]);
  });

  test("deleting a virtual key deletes its credentials", async () => {
    assert.equal((await api(app, "DELETE", "/api/governance/virtual-keys/vk-alice")).status, 200);
    assert.deepEqual(await sessions(), []);
    assert.equal(await app.store.fork().count(McpUserCredentialRecord, {}), 0);
  });
});
