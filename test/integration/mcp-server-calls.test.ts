/**
 * Tool calls and protocol faults on /mcp through the MCP SDK's client over both transports: a per-user
 * client answering auth-required (with a URL-mode elicitation) then working once the flow is done, a tool
 * timeout and a down upstream as isError results, another caller's session id refused with 404, malformed
 * JSON-RPC, oversized bodies and the session limit.
 */
import assert from "node:assert/strict";
import { after, afterEach, before, describe, test } from "node:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema, ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { DEFAULT_CLIENT } from "../../src/config/runtime-settings.js";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { startMcpFixture, type McpFixture } from "../fixtures/mcp-server.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { closeMcp, connectMcp, MCP_TRANSPORTS, resultText, type McpTransportKind } from "../helpers/mcp-client.js";

const ALICE = "sk-gw-mcp-alice";
const BOB = "sk-gw-mcp-bob";
const ADMIN_SAMPLE = "admin-sample-token";
const BODY_LIMIT = 64 * 1024;
const MAX_SESSIONS = 6;

let docs: McpFixture;
let crm: McpFixture;
/** Values crm accepts for x-user-token; a test adds the ones users submit. */
const accepted = [ADMIN_SAMPLE];
let app: TestApp;
let open: Client[] = [];

before(async () => {
  docs = await startMcpFixture();
  crm = await startMcpFixture({ acceptHeader: { name: "x-user-token", values: accepted } });
  const access = [
    { mcp_client_name: "docs", tools_to_execute: ["*"] },
    { mcp_client_name: "crm", tools_to_execute: ["*"] },
  ];
  app = await startApp({
    client: { ...DEFAULT_CLIENT, maxRequestBodyBytes: BODY_LIMIT },
    mcpSessions: { maxSessions: MAX_SESSIONS },
    inference: inferenceOptionsFromFile({}, [
      { id: "vk-alice", name: "alice", value: ALICE, mcp_configs: access },
      { id: "vk-bob", name: "bob", value: BOB, mcp_configs: access },
    ]),
  });
  const created = await api(app, "POST", "/api/mcp/client", { name: "docs", connection_type: "http", connection_string: docs.httpUrl, tools_to_execute: ["*"] });
  assert.equal(created.status, 200, JSON.stringify(created.body));
  const perUser = await api(app, "POST", "/api/mcp/client", {
    name: "crm",
    connection_type: "http",
    connection_string: crm.httpUrl,
    auth_type: "per_user_headers",
    per_user_header_keys: ["x-user-token"],
    user_headers: { "x-user-token": ADMIN_SAMPLE },
    tools_to_execute: ["*"],
  });
  assert.equal(perUser.status, 200, JSON.stringify(perUser.body));
});

afterEach(async () => {
  await Promise.all(open.map((c) => closeMcp(c).catch(() => undefined)));
  open = [];
});

after(async () => {
  await app?.stop();
  await Promise.all([docs?.close(), crm?.close()]);
});

async function connect(kind: McpTransportKind, headers: Record<string, string> = {}, urlElicitation = false): Promise<Client> {
  const client = await connectMcp(app, kind, headers, urlElicitation ? { elicitation: { url: {} } } : {});
  open.push(client);
  return client;
}

async function toolManager(config: Record<string, unknown>): Promise<void> {
  const res = await api(app, "PUT", "/api/settings/mcp/tool-manager-config", config);
  assert.equal(res.status, 200, JSON.stringify(res.body));
}

/** A raw JSON-RPC POST to /mcp. */
function post(body: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${app.url}/mcp`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    body,
  });
}

const INITIALIZE = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
});

for (const kind of MCP_TRANSPORTS) {
  describe(`over ${kind === "streamable" ? "Streamable HTTP" : "SSE"}`, () => {
    test("a per-user tool answers mcp_auth_required with a URL elicitation, and works once the flow is done", async () => {
      const user = `token-of-alice-${kind}`;
      const client = await connect(kind, { "x-gw-vk": ALICE, "x-gw-mcp-session-id": `ignored-${kind}` }, true);
      const elicited = new Promise<{ mode?: string; url?: string }>((resolve) =>
        client.setRequestHandler(ElicitRequestSchema, (request) => {
          resolve(request.params as { mode?: string; url?: string });
          return { action: "accept" };
        }),
      );
      const first = await client.callTool({ name: "crm-echo", arguments: { text: "hello" } });
      assert.equal(first.isError, true);
      const payload = JSON.parse(resultText(first)).mcp_auth_required as { submit_url: string; kind: string };
      assert.equal(payload.kind, "headers");
      const elicitation = await elicited;
      assert.equal(elicitation.mode, "url");
      assert.equal(elicitation.url, payload.submit_url);
      const flow = new URL(payload.submit_url).searchParams.get("flow") ?? "";
      accepted.push(user);
      const submitted = await api(app, "PUT", `/api/mcp/per-user-headers/flows/${flow}`, { headers: { "x-user-token": user } });
      assert.equal(submitted.status, 200, JSON.stringify(submitted.body));
      const second = await client.callTool({ name: "crm-echo", arguments: { text: "hello" } });
      assert.equal(second.isError, false);
      assert.equal(resultText(second), "hello");
      const revoke = await api(app, "DELETE", `/api/mcp/sessions/${submitted.body.credential_id as string}`);
      assert.equal(revoke.status, 200, JSON.stringify(revoke.body));
    });

    test("a per-user tool called without any identity says it requires an identity", async () => {
      const client = await connect(kind);
      const result = await client.callTool({ name: "crm-echo", arguments: { text: "x" } });
      assert.equal(result.isError, true);
      assert.match(resultText(result), /requires an identity/);
    });

    test("a call that exceeds tool_execution_timeout is an isError result", async () => {
      const client = await connect(kind, { "x-gw-vk": ALICE });
      await toolManager({ tool_execution_timeout: "300ms" });
      try {
        const result = await client.callTool({ name: "docs-slow", arguments: { ms: 5000 } });
        assert.equal(result.isError, true);
        assert.match(resultText(result), /timed out after 300 ms/);
      } finally {
        await toolManager({ tool_execution_timeout: "30s" });
      }
    });

    test("a call to an upstream that is down is an isError result", async () => {
      const client = await connect(kind, { "x-gw-vk": ALICE });
      docs.setMode("down");
      try {
        const result = await client.callTool({ name: "docs-echo", arguments: { text: "x" } });
        assert.equal(result.isError, true);
        assert.match(resultText(result), /docs-echo failed/);
      } finally {
        docs.setMode("up");
      }
    });

    test("bad tools/call parameters are a -32602 error", async () => {
      const client = await connect(kind);
      await assert.rejects(client.request({ method: "tools/call", params: { arguments: {} } }, CallToolResultSchema), (err: { code?: number }) => err.code === -32602);
    });
  });
}

test("another caller presenting a Streamable HTTP session id gets 404 and nothing runs", async () => {
  const client = await connect("streamable", { "x-gw-vk": ALICE });
  const sessionId = (client.transport as StreamableHTTPClientTransport).sessionId ?? "";
  assert.ok(sessionId.length >= 43, "a 256-bit id in base64url");
  const echoes = docs.callCount("echo");
  const call = JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "docs-echo", arguments: { text: "x" } } });
  for (const headers of [{ "x-gw-vk": BOB }, {}] as Record<string, string>[]) {
    const res = await post(call, { "mcp-session-id": sessionId, "mcp-protocol-version": "2025-06-18", ...headers });
    assert.equal(res.status, 404);
    assert.equal(((await res.json()) as { error: { code: number } }).error.code, -32001);
  }
  const stream = await fetch(`${app.url}/mcp`, { headers: { accept: "text/event-stream", "mcp-session-id": sessionId, "x-gw-vk": BOB } });
  assert.equal(stream.status, 404);
  const del = await fetch(`${app.url}/mcp`, { method: "DELETE", headers: { "mcp-session-id": sessionId, "x-gw-vk": BOB } });
  assert.equal(del.status, 404);
  assert.equal(docs.callCount("echo"), echoes);
  assert.equal((await client.callTool({ name: "docs-echo", arguments: { text: "still mine" } })).isError, false);
});

test("another caller posting to an SSE session gets 404", async () => {
  const controller = new AbortController();
  const stream = await fetch(`${app.url}/mcp/sse`, { headers: { accept: "text/event-stream", "x-gw-vk": ALICE }, signal: controller.signal });
  try {
    assert.equal(stream.status, 200);
    const reader = stream.body!.getReader();
    let text = "";
    for (let i = 0; i < 20 && !text.includes("\n\n"); i++) text += new TextDecoder().decode((await reader.read()).value);
    const endpoint = /data: (\S+)/.exec(text)?.[1] ?? "";
    assert.match(endpoint, /^\/mcp\/messages\?sid=/);
    const res = await fetch(`${app.url}${endpoint}`, { method: "POST", headers: { "content-type": "application/json", "x-gw-vk": BOB }, body: INITIALIZE });
    assert.equal(res.status, 404);
    const own = await fetch(`${app.url}${endpoint}`, { method: "POST", headers: { "content-type": "application/json", "x-gw-vk": ALICE }, body: INITIALIZE });
    assert.equal(own.status, 202);
  } finally {
    controller.abort();
  }
});

test("a /mcp tool call is measured in gw_mcp_client_operation_duration_seconds with its virtual key", async () => {
  const client = await connect("streamable", { "x-gw-vk": BOB });
  assert.equal((await client.callTool({ name: "docs-add", arguments: { a: 2, b: 3 } })).isError, false);
  const metrics = await (await fetch(`${app.url}/metrics`)).text();
  const line = metrics.split("\n").find((l) => l.startsWith("gw_mcp_client_operation_duration_seconds_count{") && l.includes('mcp_tool_name="add"') && l.includes('virtual_key_name="bob"'));
  assert.ok(line, "a sample for docs' add called with bob's key");
});

test("a body that is not JSON is a -32700 parse error", async () => {
  const res = await post("{not json");
  assert.equal(res.status, 400);
  assert.equal(((await res.json()) as { error: { code: number } }).error.code, -32700);
});

test("JSON that is not a JSON-RPC message is a -32600 invalid request", async () => {
  const res = await post(JSON.stringify({ hello: "world" }));
  assert.equal(res.status, 400);
  assert.equal(((await res.json()) as { error: { code: number } }).error.code, -32600);
});

test("a request without a session that is not initialize is refused with 400", async () => {
  const res = await post(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }));
  assert.equal(res.status, 400);
});

test("a body over the size limit is a 413", async () => {
  const big = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "docs-echo", arguments: { text: "x".repeat(BODY_LIMIT) } } });
  const res = await post(big);
  assert.equal(res.status, 413);
});

test("refuses a session past the limit with 503, and takes one again once a session is closed", async () => {
  const clients: Client[] = [];
  for (let i = 0; i < MAX_SESSIONS; i++) clients.push(await connectMcp(app, "streamable"));
  try {
    const res = await post(INITIALIZE);
    assert.equal(res.status, 503);
    assert.match(((await res.json()) as { error: { message: string } }).error.message, /too many MCP sessions/);
    const last = clients.pop();
    if (last) await closeMcp(last);
    clients.push(await connectMcp(app, "streamable"));
  } finally {
    await Promise.all(clients.map((c) => closeMcp(c)));
  }
});

describe("with a short idle timeout", () => {
  let idleApp: TestApp;

  before(async () => {
    idleApp = await startApp({ mcpSessions: { idleTimeoutMs: 200 } });
  });

  after(async () => {
    await idleApp?.stop();
  });

  test("closes a session that stays idle, after which its id is unknown", async () => {
    const client = await connectMcp(idleApp, "streamable");
    const sessionId = (client.transport as StreamableHTTPClientTransport).sessionId ?? "";
    const list = JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" });
    const headers = { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-session-id": sessionId, "mcp-protocol-version": "2025-06-18" };
    // The client's GET stream keeps the session alive; without it the session is idle.
    await client.close();
    // Any request on the session would keep it alive: watch the log instead.
    const closed = () => idleApp.logLines.some((line) => line.includes("closing an idle MCP session"));
    for (let i = 0; i < 100 && !closed(); i++) await new Promise((resolve) => setTimeout(resolve, 100));
    assert.ok(closed(), "the idle session was closed");
    assert.equal((await fetch(`${idleApp.url}/mcp`, { method: "POST", headers, body: list })).status, 404);
  });
});
