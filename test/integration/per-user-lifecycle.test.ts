/**
 * The lifecycle of per-user credentials: a schema change sends the credential and the admin discovery
 * credential to needs_update (GET /api/mcp/clients projects needs_reauth) and asks for values again; a
 * virtual key losing access orphans its credential and regaining it restores it; revoke removes it; a
 * flow older than 15 minutes (on an injected clock) has expired.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { startMcpFixture, type McpFixture } from "../fixtures/mcp-server.js";
import { api, startApp, type TestApp } from "../helpers/app.js";

const ALICE = "sk-gw-alice";
const BOB = "sk-gw-bob";
const ALICE_TOKEN = "alice-token-value";
const BOB_TOKEN = "bob-token-value";
const ACCESS = [{ mcp_client_name: "crm", tools_to_execute: ["*"] }];

/** What the fixture accepts as x-user-token; a test takes the admin's sample value away. */
const accepted = ["admin-sample", "admin-sample-2", ALICE_TOKEN, BOB_TOKEN];
let fixture: McpFixture;
let app: TestApp;
let clientId: string;
let now = Date.parse("2030-01-01T00:00:00Z");

function execute(vk: string, text = "hi") {
  return api(app, "POST", "/v1/mcp/tool/execute", { id: "c1", type: "function", function: { name: "crm-echo", arguments: JSON.stringify({ text }) } }, { "x-gw-vk": vk });
}

function flowOf(res: { body: { mcp_auth_required: { submit_url: string } } }): string {
  return new URL(res.body.mcp_auth_required.submit_url).searchParams.get("flow") ?? "";
}

/** Gets a flow for `vk` and submits `headers` through the API (auth is off and links carry no token: the flow id suffices). */
async function enrol(vk: string, headers: Record<string, string>): Promise<void> {
  const required = await execute(vk);
  assert.equal(required.status, 401, JSON.stringify(required.body));
  const res = await api(app, "PUT", `/api/mcp/per-user-headers/flows/${flowOf(required)}`, { headers });
  assert.equal(res.status, 200, JSON.stringify(res.body));
}

async function sessionOf(vk: string): Promise<{ credential_id: string; status: string; header_keys: string[] } | undefined> {
  return (await api(app, "GET", "/api/mcp/sessions", undefined, { "x-gw-vk": vk })).body.sessions[0];
}

async function clientState(): Promise<string> {
  return (await api(app, "GET", "/api/mcp/clients?search=crm")).body.clients[0].state;
}

before(async () => {
  fixture = await startMcpFixture({ acceptHeader: { name: "x-user-token", values: accepted } });
  app = await startApp({
    mcpTiming: { now: () => now },
    mcpClients: [{
      name: "crm", connectionType: "http", connectionString: fixture.httpUrl, stdioConfig: null, authType: "per_user_headers",
      headers: {}, perUserHeaderKeys: ["x-user-token"], toolsToExecute: ["*"], toolsToAutoExecute: [], toolSyncInterval: 0,
      needsSessionStickiness: null, disabled: false, allowOnAllVirtualKeys: false, oauthConfig: null, isCodeModeClient: false,
    }],
    inference: inferenceOptionsFromFile({}, [
      { id: "vk-alice", name: "alice", value: ALICE, mcp_configs: ACCESS },
      { id: "vk-bob", name: "bob", value: BOB, mcp_configs: ACCESS },
    ]),
  });
  clientId = (await api(app, "GET", "/api/mcp/clients?search=crm")).body.clients[0].client_id;
  const verified = await api(app, "POST", `/api/mcp/client/${clientId}/verify-headers`, { user_headers: { "x-user-token": "admin-sample" } });
  assert.equal(verified.status, 200, JSON.stringify(verified.body));
  await enrol(ALICE, { "x-user-token": ALICE_TOKEN });
  await enrol(BOB, { "x-user-token": BOB_TOKEN });
});

after(async () => {
  await app?.stop();
  await fixture?.close();
});

describe("schema change", () => {
  test("adding a per-user key moves active credentials to needs_update, keeping the values whose key still matches", async () => {
    assert.equal((await sessionOf(ALICE))?.status, "active");
    const res = await api(app, "PUT", `/api/mcp/client/${clientId}`, { per_user_header_keys: ["x-user-token", "x-team"] });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const alice = await sessionOf(ALICE);
    assert.equal(alice?.status, "needs_update");
    assert.deepEqual(alice?.header_keys, ["x-user-token"]);
  });

  test("the admin discovery credential needs an update too, so the client reads as needs_reauth", async () => {
    assert.equal(await clientState(), "needs_reauth");
    const { McpClientRecord } = await import("../../src/store/index.js");
    const rec = await app.store.fork().findOneOrFail(McpClientRecord, { id: clientId });
    assert.equal(rec.discoveryStatus, "needs_update");
  });

  test("a call after the change needs auth again, and the flow lists the key still on file", async () => {
    const res = await execute(ALICE);
    assert.equal(res.status, 401);
    assert.match(res.body.mcp_auth_required.message, /need an update/);
    assert.deepEqual(res.body.mcp_auth_required.required_header_keys, ["x-user-token", "x-team"]);
    const flow = await api(app, "GET", `/api/mcp/per-user-headers/flows/${flowOf(res)}`);
    assert.equal(flow.status, 200);
    assert.deepEqual(flow.body.required_header_keys, ["x-user-token", "x-team"]);
    assert.deepEqual(flow.body.stored_header_keys, ["x-user-token"]);
    assert.equal(flow.body.status, "pending");
  });

  test("submitting only the new header keeps the stored value, reactivates the credential, and the call sends both", async () => {
    const required = await execute(ALICE);
    const res = await api(app, "PUT", `/api/mcp/per-user-headers/flows/${flowOf(required)}`, { headers: { "x-team": "blue" } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal((await sessionOf(ALICE))?.status, "active");
    assert.equal((await execute(ALICE)).status, 200);
    assert.equal(fixture.seenHeaders.at(-1)?.["x-user-token"], ALICE_TOKEN);
    assert.equal(fixture.seenHeaders.at(-1)?.["x-team"], "blue");
  });

  test("needs_reauth of a per-user client is a read projection only: a caller with a usable credential still runs tools", async () => {
    assert.equal(await clientState(), "needs_reauth");
    const res = await execute(ALICE, "still works");
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.content, "still works");
  });

  test("verify-headers is accepted again while the admin credential needs an update, and clears needs_reauth", async () => {
    const res = await api(app, "POST", `/api/mcp/client/${clientId}/verify-headers`, { user_headers: { "x-user-token": "admin-sample-2", "x-team": "ops" } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.tools_count, 3);
    assert.equal(await clientState(), "healthy");
    const again = await api(app, "POST", `/api/mcp/client/${clientId}/verify-headers`, { user_headers: { "x-user-token": "admin-sample-2", "x-team": "ops" } });
    assert.equal(again.status, 409);
  });
});

describe("access", () => {
  test("a virtual key losing access to the client orphans its credential, which is kept", async () => {
    const res = await api(app, "PUT", "/api/governance/virtual-keys/vk-alice", { mcp_configs: [] });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const alice = await sessionOf(ALICE);
    assert.equal(alice?.status, "orphaned");
    assert.deepEqual(alice?.header_keys, ["x-user-token", "x-team"]);
    assert.equal((await execute(ALICE)).status, 403);
  });

  test("regaining access makes it active again automatically: the next call runs without a new submission", async () => {
    const res = await api(app, "PUT", "/api/governance/virtual-keys/vk-alice", { mcp_configs: ACCESS });
    assert.equal(res.status, 200);
    assert.equal((await sessionOf(ALICE))?.status, "active");
    assert.equal((await execute(ALICE, "back")).status, 200);
    assert.equal(fixture.seenHeaders.at(-1)?.["x-user-token"], ALICE_TOKEN);
  });
});

describe("revoke", () => {
  test("revoking another identity's credential is a 404", async () => {
    const bobs = await sessionOf(BOB);
    assert.ok(bobs);
    const res = await api(app, "DELETE", `/api/mcp/sessions/${bobs.credential_id}`, undefined, { "x-gw-vk": ALICE });
    assert.equal(res.status, 404);
  });

  test("revoke removes the credential, and the next call needs auth again", async () => {
    const alice = await sessionOf(ALICE);
    assert.ok(alice);
    const res = await api(app, "DELETE", `/api/mcp/sessions/${alice.credential_id}`, undefined, { "x-gw-vk": ALICE });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(await sessionOf(ALICE), undefined);
    const call = await execute(ALICE);
    assert.equal(call.status, 401);
    assert.match(call.body.mcp_auth_required.message, /no credential is on file/);
  });
});

describe("flow expiry", () => {
  test("a flow older than 15 minutes answers 'Headers submission flow has expired', and a new call opens a fresh one", async () => {
    const first = flowOf(await execute(ALICE));
    now += 15 * 60_000 + 1;
    const read = await api(app, "GET", `/api/mcp/per-user-headers/flows/${first}`);
    assert.equal(read.body.status, "expired");
    const res = await api(app, "PUT", `/api/mcp/per-user-headers/flows/${first}`, { headers: { "x-user-token": ALICE_TOKEN, "x-team": "blue" } });
    assert.equal(res.status, 410);
    assert.equal(res.body.error.type, "flow_expired");
    assert.match(res.body.error.message, /^Headers submission flow has expired/);
    const page = await fetch(`${app.url}/workspace/mcp-sessions/auth?flow=${first}&kind=headers`).then((r) => r.text());
    assert.match(page, /Headers submission flow has expired/);
    const fresh = flowOf(await execute(ALICE));
    assert.notEqual(fresh, first);
    assert.equal((await api(app, "GET", `/api/mcp/per-user-headers/flows/${fresh}`)).body.status, "pending");
  });
});

describe("admin discovery credential rejected upstream", () => {
  test("a rejected discovery credential needs an update: reads show needs_reauth with a credential failure, and verify-headers repairs it", async () => {
    accepted.splice(accepted.indexOf("admin-sample-2"), 1);
    await app.runtime.check(clientId);
    let client = (await api(app, "GET", "/api/mcp/clients?search=crm")).body.clients[0];
    // The status is written off the check's path; a few reads are enough (bounded).
    for (let i = 0; i < 20 && client.state !== "needs_reauth"; i++) client = (await api(app, "GET", "/api/mcp/clients?search=crm")).body.clients[0];
    assert.equal(client.state, "needs_reauth");
    assert.equal(client.last_failure.stage, "credential");
    const res = await api(app, "POST", `/api/mcp/client/${clientId}/verify-headers`, { user_headers: { "x-user-token": "admin-sample", "x-team": "ops" } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(await clientState(), "healthy");
  });
});
