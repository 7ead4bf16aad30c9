/**
 * Per-user values stay secret: after a full round (create with sample values, a rejected and an accepted
 * submission against a server that echoes what it rejects, tool calls, listings), no value appears in any
 * API response, error, log line (debug level) or metric, and the stored credential is encrypted at rest.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { startMcpFixture, type McpFixture } from "../fixtures/mcp-server.js";
import { api, startApp, type TestApp } from "../helpers/app.js";

const ALICE = "sk-gw-alice";
const SAMPLE = "pv-admin-sample-55de";
const REJECTED_SAMPLE = "pv-rejected-sample-0b7e";
const WRONG = "pv-wrong-user-value-91cc";
const RIGHT = "pv-right-user-value-7f3a";
const SECRETS = [SAMPLE, REJECTED_SAMPLE, WRONG, RIGHT];

let fixture: McpFixture;
let app: TestApp;
/** Every response body of the round, as text. */
const seen: string[] = [];

async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await api(app, method, path, body, headers);
  seen.push(typeof res.body === "string" ? res.body : JSON.stringify(res.body));
  return res;
}

function execute() {
  return call("POST", "/v1/mcp/tool/execute", { id: "c1", type: "function", function: { name: "crm-echo", arguments: "{\"text\":\"ok\"}" } }, { "x-gw-vk": ALICE });
}

before(async () => {
  fixture = await startMcpFixture({ acceptHeader: { name: "x-user-token", values: [SAMPLE, RIGHT], echo: true } });
  app = await startApp({
    inference: inferenceOptionsFromFile({}, [{ id: "vk-alice", name: "alice", value: ALICE, mcp_configs: [{ mcp_client_name: "crm", tools_to_execute: ["*"] }] }]),
  });
  const base = { connection_type: "http", connection_string: fixture.httpUrl, auth_type: "per_user_headers", per_user_header_keys: ["x-user-token"], tools_to_execute: ["*"] };
  assert.equal((await call("POST", "/api/mcp/client", { ...base, name: "nope", user_headers: { "x-user-token": REJECTED_SAMPLE } })).status, 422);
  const created = await call("POST", "/api/mcp/client", { ...base, name: "crm", user_headers: { "x-user-token": SAMPLE } });
  assert.equal(created.status, 200);
  const required = await execute();
  assert.equal(required.status, 401);
  const flow = new URL(required.body.mcp_auth_required.submit_url).searchParams.get("flow");
  await call("GET", `/api/mcp/per-user-headers/flows/${flow}`);
  seen.push(await fetch(required.body.mcp_auth_required.submit_url).then((r) => r.text()));
  assert.equal((await call("PUT", `/api/mcp/per-user-headers/flows/${flow}`, { headers: { "x-user-token": WRONG } })).status, 422);
  assert.equal((await call("PUT", `/api/mcp/per-user-headers/flows/${flow}`, { headers: { "x-user-token": RIGHT } })).status, 200);
  assert.equal((await execute()).status, 200);
  assert.equal(fixture.seenHeaders.at(-1)?.["x-user-token"], RIGHT);
  await call("GET", "/api/mcp/clients");
  await call("GET", "/api/mcp/sessions");
  await call("POST", `/api/mcp/client/${created.body.client_id}/verify-headers`, { user_headers: { "x-user-token": WRONG } });
  await call("GET", "/openapi.json");
});

after(async () => {
  await app?.stop();
  await fixture?.close();
});

test("no per-user value appears in any API response, error, log line or metric", async () => {
  const metrics = await fetch(`${app.url}/metrics`).then((r) => r.text());
  const places: [string, string][] = [
    ["API responses and errors", seen.join("\n")],
    ["log lines", app.logLines.join("\n")],
    ["metrics", metrics],
  ];
  assert.ok(app.logLines.length > 0 && metrics.includes("gw_mcp_client_operation_duration_seconds"));
  for (const [where, text] of places) {
    for (const secret of SECRETS) assert.ok(!text.includes(secret), `${where} contain a per-user value`);
  }
});

test("the stored credential is encrypted at rest", async () => {
  const rows = await app.store.fork().getConnection().execute<{ values: string; header_keys: unknown }[]>(`select "values", header_keys from mcp_user_credential`);
  assert.equal(rows.length, 1);
  assert.match(rows[0]?.values ?? "", /^v1:/);
  assert.ok(!JSON.stringify(rows).includes(RIGHT));
});
