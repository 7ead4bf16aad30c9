/**
 * "Edit values" on a stored per-user credential: the admin RPC opens the identity's submission flow and
 * answers its URL (with the temp token when temp-token links are on); values submitted there replace the
 * stored ones; an unknown credential is a 404; without any public URL the error names the setting to set.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { CredentialService } from "../../gen/gw/credential/v1/credential_pb.js";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { startMcpFixture, type McpFixture } from "../fixtures/mcp-server.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { clientFor } from "../helpers/clients.js";

const ALICE = "sk-gw-edit-alice";
const FIRST = "first-user-token";
const SECOND = "second-user-token";

let fixture: McpFixture;
let app: TestApp;
let credentialId = "";

function execute(vk: string) {
  return api(app, "POST", "/v1/mcp/tool/execute", { id: "c1", type: "function", function: { name: "crm-echo", arguments: JSON.stringify({ text: "x" }) } }, { "x-gw-vk": vk });
}

async function setTempTokens(on: boolean): Promise<void> {
  const res = await api(app, "PATCH", "/config", { client: { mcp_enable_temp_token_auth: on } });
  assert.equal(res.status, 200, JSON.stringify(res.body));
}

before(async () => {
  fixture = await startMcpFixture({ acceptHeader: { name: "x-user-token", values: ["admin-sample", FIRST, SECOND] } });
  app = await startApp({
    inference: inferenceOptionsFromFile({}, [{ id: "vk-alice", name: "alice", value: ALICE, mcp_configs: [{ mcp_client_name: "crm", tools_to_execute: ["*"] }] }]),
  });
  const created = await api(app, "POST", "/api/mcp/client", {
    name: "crm", connection_type: "http", connection_string: fixture.httpUrl, auth_type: "per_user_headers",
    per_user_header_keys: ["x-user-token"], user_headers: { "x-user-token": "admin-sample" }, tools_to_execute: ["*"],
  });
  assert.equal(created.status, 200, JSON.stringify(created.body));
  const required = await execute(ALICE);
  assert.equal(required.status, 401, JSON.stringify(required.body));
  const flow = new URL(required.body.mcp_auth_required.submit_url).searchParams.get("flow");
  const saved = await api(app, "PUT", `/api/mcp/per-user-headers/flows/${flow}`, { headers: { "x-user-token": FIRST } });
  assert.equal(saved.status, 200, JSON.stringify(saved.body));
  credentialId = saved.body.credential_id;
});

after(async () => {
  await app?.stop();
  await fixture?.close();
});

test("edit answers the flow page URL of the credential's identity", async () => {
  const res = await api(app, "POST", `/api/mcp/sessions/${credentialId}/edit`, {});
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.kind, "headers");
  const url = new URL(res.body.flow_url);
  assert.equal(url.origin, app.url);
  assert.equal(url.pathname, "/workspace/mcp-sessions/auth");
  assert.equal(url.hash, "");
  const flow = await api(app, "GET", `/api/mcp/per-user-headers/flows/${url.searchParams.get("flow")}`);
  assert.equal(flow.status, 200);
  assert.deepEqual(flow.body.identity, { kind: "vk", name: "alice" });
  assert.deepEqual(flow.body.stored_header_keys, ["x-user-token"]);
  assert.ok(Date.parse(res.body.expires_at) > Date.now());
});

test("values submitted on the edit flow replace the stored credential", async () => {
  const before = (await api(app, "GET", "/api/mcp/sessions")).body.sessions[0];
  const res = await api(app, "POST", `/api/mcp/sessions/${credentialId}/edit`, {});
  const flow = new URL(res.body.flow_url).searchParams.get("flow");
  const saved = await api(app, "PUT", `/api/mcp/per-user-headers/flows/${flow}`, { headers: { "x-user-token": SECOND } });
  assert.equal(saved.status, 200, JSON.stringify(saved.body));
  assert.equal(saved.body.credential_id, credentialId);
  const after = (await api(app, "GET", "/api/mcp/sessions")).body.sessions;
  assert.equal(after.length, 1);
  assert.equal(after[0].status, "active");
  assert.ok(Date.parse(after[0].updated_at) > Date.parse(before.updated_at), `${after[0].updated_at} after ${before.updated_at}`);
  const call = await execute(ALICE);
  assert.equal(call.status, 200, JSON.stringify(call.body));
});

test("with temp-token links on, the edit URL carries the flow's temp token over Connect too", async () => {
  await setTempTokens(true);
  try {
    const res = await clientFor(CredentialService, app.url, "connect").startEditFlow({ credentialId });
    const url = new URL(res.flowUrl);
    assert.match(url.hash, /^#t=[A-Za-z0-9_-]{20,}$/);
    assert.ok(res.expiresAt !== undefined && timestampDate(res.expiresAt).getTime() > Date.now());
    const flow = url.searchParams.get("flow");
    const refused = await api(app, "PUT", `/api/mcp/per-user-headers/flows/${flow}`, { headers: { "x-user-token": FIRST } }, { "x-gw-temp-token": "wrong" });
    assert.equal(refused.status, 401);
    const saved = await api(app, "PUT", `/api/mcp/per-user-headers/flows/${flow}`, { headers: { "x-user-token": FIRST } }, { "x-gw-temp-token": url.hash.slice(3) });
    assert.equal(saved.status, 200, JSON.stringify(saved.body));
  } finally {
    await setTempTokens(false);
  }
});

test("editing an unknown credential is a 404 naming it", async () => {
  const res = await api(app, "POST", "/api/mcp/sessions/no-such-credential/edit", {});
  assert.equal(res.status, 404);
  assert.equal(res.body.error.type, "credential_not_found");
  assert.match(res.body.error.message, /no-such-credential/);
  await assert.rejects(clientFor(CredentialService, app.url, "connect").startEditFlow({ credentialId: "no-such-credential" }), (err: unknown) => err instanceof ConnectError && err.code === Code.NotFound);
});

test("without a public URL for the flow page, the error says to set mcp_external_client_url", async () => {
  // A forwarded host that is no host name leaves the gateway without any origin to link back to.
  const res = await api(app, "POST", `/api/mcp/sessions/${credentialId}/edit`, {}, { "x-forwarded-host": "not a host" });
  assert.equal(res.status, 400, JSON.stringify(res.body));
  assert.match(res.body.error.message, /mcp_external_client_url/);
  const external = await api(app, "PATCH", "/config", { client: { mcp_external_client_url: "https://gw.example.com" } });
  assert.equal(external.status, 200, JSON.stringify(external.body));
  try {
    const ok = await api(app, "POST", `/api/mcp/sessions/${credentialId}/edit`, {}, { "x-forwarded-host": "not a host" });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.ok(ok.body.flow_url.startsWith("https://gw.example.com/workspace/mcp-sessions/auth?flow="), ok.body.flow_url);
  } finally {
    await api(app, "PATCH", "/config", { client: { mcp_external_client_url: "" } });
  }
});
