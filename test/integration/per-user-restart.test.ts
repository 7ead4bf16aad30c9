/**
 * Per-user credentials across restarts: they are loaded back into memory at start, and config-file edits made
 * while the gateway was down apply at the next boot (a per_user_header_keys change sends credentials and the
 * admin discovery credential to needs_update; a virtual key's access removed and given back orphans and then
 * restores its credential).
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { McpClientSpec } from "../../src/mcp/client-spec.js";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { startMcpFixture, type McpFixture } from "../fixtures/mcp-server.js";
import { api, startApp, type TestApp } from "../helpers/app.js";

const ALICE = "sk-gw-alice";
const ALICE_TOKEN = "alice-restart-token";

let fixture: McpFixture;
let app: TestApp;
let clientId: string;

function client(keys: string[]): McpClientSpec {
  return {
    name: "crm", connectionType: "http", connectionString: fixture.httpUrl, stdioConfig: null, authType: "per_user_headers",
    headers: {}, perUserHeaderKeys: keys, toolsToExecute: ["*"], toolsToAutoExecute: [], toolSyncInterval: 0,
    needsSessionStickiness: null, disabled: false, allowOnAllVirtualKeys: false, oauthConfig: null, isCodeModeClient: false,
  };
}

function keys(access: boolean) {
  return inferenceOptionsFromFile({}, [{ id: "vk-alice", name: "alice", value: ALICE, mcp_configs: access ? [{ mcp_client_name: "crm", tools_to_execute: ["*"] }] : [] }]);
}

async function restart(clientKeys: string[], access: boolean): Promise<void> {
  const options = app.restartOptions;
  await app.stop({ keepData: true });
  app = await startApp({ ...options, mcpClients: [client(clientKeys)], inference: keys(access) });
  // Clients come up in the background after a start; wait (bounded) until this one has run its first discovery.
  for (let i = 0; i < 100 && app.runtime.stateOf(clientId) === undefined; i++) await new Promise((r) => setTimeout(r, 50));
}

function execute() {
  return api(app, "POST", "/v1/mcp/tool/execute", { id: "c1", type: "function", function: { name: "crm-echo", arguments: "{\"text\":\"x\"}" } }, { "x-gw-vk": ALICE });
}

async function aliceStatus(): Promise<string | undefined> {
  return (await api(app, "GET", "/api/mcp/sessions", undefined, { "x-gw-vk": ALICE })).body.sessions[0]?.status;
}

before(async () => {
  fixture = await startMcpFixture({ acceptHeader: { name: "x-user-token", values: ["sample", ALICE_TOKEN] } });
  app = await startApp({ mcpClients: [client(["x-user-token"])], inference: keys(true) });
  clientId = (await api(app, "GET", "/api/mcp/clients")).body.clients[0].client_id;
  assert.equal((await api(app, "POST", `/api/mcp/client/${clientId}/verify-headers`, { user_headers: { "x-user-token": "sample" } })).status, 200);
  const required = await execute();
  const flow = new URL(required.body.mcp_auth_required.submit_url).searchParams.get("flow");
  assert.equal((await api(app, "PUT", `/api/mcp/per-user-headers/flows/${flow}`, { headers: { "x-user-token": ALICE_TOKEN } })).status, 200);
});

after(async () => {
  await app?.stop();
  await fixture?.close();
});

test("a stored credential serves calls again after a restart", async () => {
  await restart(["x-user-token"], true);
  const res = await execute();
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(fixture.seenHeaders.at(-1)?.["x-user-token"], ALICE_TOKEN);
});

test("per_user_header_keys changed in the config file send both credentials to needs_update at the next boot", async () => {
  await restart(["x-user-token", "x-team"], true);
  assert.equal(await aliceStatus(), "needs_update");
  assert.equal((await api(app, "GET", "/api/mcp/clients")).body.clients[0].state, "needs_reauth");
  assert.equal((await execute()).status, 401);
});

test("a virtual key's access removed in the config file orphans its credential, and given back restores it on use", async () => {
  const required = await execute();
  const flow = new URL(required.body.mcp_auth_required.submit_url).searchParams.get("flow");
  assert.equal((await api(app, "PUT", `/api/mcp/per-user-headers/flows/${flow}`, { headers: { "x-team": "blue" } })).status, 200);
  await restart(["x-user-token", "x-team"], false);
  assert.equal(await aliceStatus(), "orphaned");
  await restart(["x-user-token", "x-team"], true);
  const res = await execute();
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(fixture.seenHeaders.at(-1)?.["x-team"], "blue");
  assert.equal(await aliceStatus(), "active");
});
