/**
 * POST /v1/mcp/tool/execute with virtual keys: a key runs only the tools its mcp_configs grant, unknown
 * and inactive keys are refused, and the key labels the tool's metrics.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { startMcpFixture, type McpFixture } from "../fixtures/mcp-server.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { parseExposition, total } from "../helpers/exposition.js";

let fixture: McpFixture;
let app: TestApp;

/** Arguments the fixture's echo and add tools accept. */
const ARGS: Record<string, unknown> = { "docs-echo": { text: "hi" }, "docs-add": { a: 1, b: 2 } };

let clientId = "";

function execute(name: string, vk: string | null, headers: Record<string, string> = {}) {
  return api(app, "POST", "/v1/mcp/tool/execute", { id: "call_1", type: "function", function: { name, arguments: JSON.stringify(ARGS[name] ?? {}) } }, { ...(vk === null ? {} : { "x-gw-vk": vk }), ...headers });
}

before(async () => {
  fixture = await startMcpFixture();
  app = await startApp({
    inference: inferenceOptionsFromFile({}, [
      { id: "vk-docs", name: "docs-reader", value: "sk-gw-docs", mcp_configs: [{ mcp_client_name: "docs", tools_to_execute: ["echo"] }] },
      { id: "vk-off", name: "off", value: "sk-gw-off", is_active: false, mcp_configs: [{ mcp_client_name: "docs", tools_to_execute: ["*"] }] },
      { id: "vk-other", name: "other", value: "sk-gw-other", mcp_configs: [{ mcp_client_name: "crm", tools_to_execute: ["*"] }] },
    ]),
  });
  const created = await api(app, "POST", "/api/mcp/client", { name: "docs", connection_type: "http", connection_string: fixture.httpUrl, tools_to_execute: ["*"] });
  assert.equal(created.status, 200, JSON.stringify(created.body));
  clientId = created.body.client_id as string;
});

after(async () => {
  await app?.stop();
  await fixture?.close();
});

test("a virtual key runs a tool its mcp_configs grant", async () => {
  const res = await execute("docs-echo", "sk-gw-docs");
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.role, "tool");
  assert.match(String(res.body.content), /hi/);
});

test("a virtual key is refused a tool its mcp_configs do not grant, and the tool does not run", async () => {
  const before = fixture.callCount("add");
  const res = await execute("docs-add", "sk-gw-docs");
  assert.equal(res.status, 403);
  assert.match(res.body.error.message, /mcp_configs/);
  assert.equal(fixture.callCount("add"), before);
});

test("a key that does not name the client runs its tools only while the client sets allow_on_all_virtual_keys", async () => {
  assert.equal((await execute("docs-echo", "sk-gw-other")).status, 403);
  assert.equal((await api(app, "PUT", `/api/mcp/client/${clientId}`, { allow_on_all_virtual_keys: true })).status, 200);
  try {
    assert.equal((await execute("docs-echo", "sk-gw-other")).status, 200);
  } finally {
    assert.equal((await api(app, "PUT", `/api/mcp/client/${clientId}`, { allow_on_all_virtual_keys: false })).status, 200);
  }
});

test("an include header that leaves the tool out refuses it with a 403 naming the headers", async () => {
  const res = await execute("docs-echo", null, { "x-gw-mcp-include-tools": "docs-add" });
  assert.equal(res.status, 403);
  assert.match(res.body.error.message, /x-gw-mcp-include-tools/);
  assert.equal((await execute("docs-echo", null, { "x-gw-mcp-include-tools": "docs-*" })).status, 200);
});

test("an unknown virtual key is refused with a 401 and an inactive one with a 403", async () => {
  assert.equal((await execute("docs-echo", "sk-gw-nope")).status, 401);
  assert.equal((await execute("docs-echo", "sk-gw-off")).status, 403);
});

test("the caller's virtual key labels the tool execution metric", async () => {
  const labels = { mcp_client: "docs", mcp_tool_name: "echo", virtual_key_id: "vk-docs", virtual_key_name: "docs-reader", error_type: "" };
  const count = async (): Promise<number> => total(parseExposition(await fetch(`${app.url}/metrics`).then((r) => r.text())), "gw_mcp_client_operation_duration_seconds_count", labels);
  const before = await count();
  assert.equal((await execute("docs-echo", "sk-gw-docs")).status, 200);
  // Recording is batched off the request path; give it a few turns of the event loop (bounded).
  let after = await count();
  for (let i = 0; i < 20 && after === before; i++) after = await count();
  assert.equal(after - before, 1);
});
