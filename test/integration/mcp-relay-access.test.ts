/**
 * Who may use /mcp/<client> and on what terms, exactly as on /mcp: unknown and forbidden clients are 404
 * alike, the key's mcp_configs and the include headers narrow the tools, sessions answer only their owner,
 * the body limit and the Origin rule hold, a per-user client answers mcp_auth_required until the caller
 * has a credential; and a session's upstream session lives and ends with it.
 */
import assert from "node:assert/strict";
import { after, afterEach, before, describe, test } from "node:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { DEFAULT_CLIENT } from "../../src/config/runtime-settings.js";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { startMcpFixture, type McpFixture } from "../fixtures/mcp-server.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { closeRelay, connectRelay, eventually, remoteClient, textOf, waitHealthy, type RelayConnectOptions } from "../helpers/relay-client.js";
import { startRelayUpstream, TOOLS, type RelayUpstreamListener } from "../helpers/relay-upstream.js";

const ECHO_ONLY = "sk-gw-relay-echo";
const OTHER_CLIENT = "sk-gw-relay-other";
const ALICE = "sk-gw-relay-alice";
const BODY_LIMIT = 32 * 1024;
const ALL_TOOLS = TOOLS.map((tool) => tool.name);
/** Values the per-user fixture accepts for x-user-token; a test adds the one it submits. */
const accepted = ["admin-sample-token"];

let upstream: RelayUpstreamListener;
let perUser: McpFixture;
let app: TestApp;
let open: Client[] = [];

before(async () => {
  upstream = await startRelayUpstream();
  perUser = await startMcpFixture({ acceptHeader: { name: "x-user-token", values: accepted } });
  app = await startApp({
    client: { ...DEFAULT_CLIENT, maxRequestBodyBytes: BODY_LIMIT },
    inference: inferenceOptionsFromFile({}, [
      { id: "vk-echo", name: "echo-only", value: ECHO_ONLY, mcp_configs: [{ mcp_client_name: "up", tools_to_execute: ["echo"] }] },
      { id: "vk-other", name: "other-client", value: OTHER_CLIENT, mcp_configs: [{ mcp_client_name: "crm", tools_to_execute: ["*"] }] },
      { id: "vk-alice", name: "alice", value: ALICE, mcp_configs: [{ mcp_client_name: "crm", tools_to_execute: ["*"] }, { mcp_client_name: "up", tools_to_execute: ["*"] }] },
    ]),
    mcpClients: [remoteClient("up", "http", upstream.httpUrl, ALL_TOOLS), remoteClient("other", "http", upstream.httpUrl, ALL_TOOLS)],
  });
  await waitHealthy(app, ["up", "other"]);
  const created = await api(app, "POST", "/api/mcp/client", {
    name: "crm",
    connection_type: "http",
    connection_string: perUser.httpUrl,
    auth_type: "per_user_headers",
    per_user_header_keys: ["x-user-token"],
    user_headers: { "x-user-token": "admin-sample-token" },
    tools_to_execute: ["*"],
  });
  assert.equal(created.status, 200, JSON.stringify(created.body));
});

afterEach(async () => {
  await Promise.all(open.map((client) => closeRelay(client).catch(() => undefined)));
  open = [];
});

after(async () => {
  await app?.stop();
  await Promise.all([upstream?.close(), perUser?.close()]);
});

async function connect(name: string, options: RelayConnectOptions = {}): Promise<Client> {
  const client = await connectRelay(app, name, options);
  open.push(client);
  return client;
}

const INITIALIZE = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
});

/** A raw JSON-RPC POST. */
function post(path: string, body: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${app.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    body,
  });
}

async function toolNames(client: Client): Promise<string[]> {
  const names: string[] = [];
  for (let cursor: string | undefined; ; ) {
    const page = await client.listTools(cursor === undefined ? {} : { cursor });
    names.push(...page.tools.map((tool) => tool.name));
    cursor = page.nextCursor;
    if (cursor === undefined) return names;
  }
}

test("an unknown client is 404", async () => {
  const res = await post("/mcp/nosuch", INITIALIZE);
  assert.equal(res.status, 404);
  assert.match(((await res.json()) as { error: { message: string } }).error.message, /no MCP server at \/mcp\/nosuch/);
  await assert.rejects(connectRelay(app, "nosuch"), (err: { code?: number }) => err.code === 404);
});

test("a client the caller's virtual key does not name answers exactly as an unknown one", async () => {
  const forbidden = await post("/mcp/up", INITIALIZE, { "x-gw-vk": OTHER_CLIENT });
  const unknown = await post("/mcp/nosuch", INITIALIZE, { "x-gw-vk": OTHER_CLIENT });
  assert.equal(forbidden.status, 404);
  assert.equal((await forbidden.text()).replaceAll("up", "X"), (await unknown.text()).replaceAll("nosuch", "X"));
});

test("x-gw-mcp-include-clients that leaves the client out makes it 404", async () => {
  assert.equal((await post("/mcp/up", INITIALIZE, { "x-gw-mcp-include-clients": "other" })).status, 404);
});

test("the virtual key's mcp_configs narrows tools/list and tools/call", async () => {
  const client = await connect("up", { headers: { "x-gw-vk": ECHO_ONLY } });
  assert.deepEqual(await toolNames(client), ["echo"]);
  assert.equal(textOf(await client.callTool({ name: "echo", arguments: { text: "allowed" } })), "allowed");
  const refused = await client.callTool({ name: "rich", arguments: {} });
  assert.equal(refused.isError, true);
  assert.match(textOf(refused), /tool "rich" is not available/);
});

test("x-gw-mcp-include-tools narrows tools/list to the tools it names", async () => {
  const client = await connect("up", { headers: { "x-gw-mcp-include-tools": "up-echo,up-stats" } });
  assert.deepEqual(await toolNames(client), ["echo", "stats"]);
});

test("a caller without a key sees every tool of the client's tools_to_execute", async () => {
  const client = await connect("up");
  assert.deepEqual(await toolNames(client), ALL_TOOLS);
});

test("a session presented by another caller is 404 and nothing runs", async () => {
  const client = await connect("up", { headers: { "x-gw-vk": ALICE } });
  const sessionId = (client.transport as StreamableHTTPClientTransport).sessionId ?? "";
  const call = JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/call", params: { name: "echo", arguments: { text: "x" } } });
  const res = await post("/mcp/up", call, { "x-gw-vk": ECHO_ONLY, "mcp-session-id": sessionId, "mcp-protocol-version": "2025-06-18" });
  assert.equal(res.status, 404);
});

test("a session opened on one client is unknown on another client's path", async () => {
  const client = await connect("up");
  const sessionId = (client.transport as StreamableHTTPClientTransport).sessionId ?? "";
  const list = JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" });
  assert.equal((await post("/mcp/other", list, { "mcp-session-id": sessionId, "mcp-protocol-version": "2025-06-18" })).status, 404);
});

test("a body over the /mcp size limit is a 413", async () => {
  const big = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { padding: "x".repeat(BODY_LIMIT) } });
  assert.equal((await post("/mcp/up", big)).status, 413);
});

test("a browser Origin that is not the gateway's own is refused with 403", async () => {
  const res = await post("/mcp/up", INITIALIZE, { origin: "http://evil.example" });
  assert.equal(res.status, 403);
});

test("a path under /mcp/ that names no server's endpoint is 404", async () => {
  assert.equal((await post("/mcp/up/elsewhere", INITIALIZE)).status, 404);
});

test("each session has an upstream session of its own, closed when the client ends its session", async () => {
  const before = upstream.httpSessions;
  const client = await connectRelay(app, "up");
  assert.equal(upstream.httpSessions, before + 1);
  await closeRelay(client);
  await eventually("the upstream session is closed", () => (upstream.httpSessions === before ? true : undefined));
});

test("a relayed tool call is measured in gw_mcp_client_operation_duration_seconds with its virtual key", async () => {
  const client = await connect("up", { headers: { "x-gw-vk": ALICE } });
  await client.callTool({ name: "echo", arguments: { text: "measured" } });
  const metrics = await (await fetch(`${app.url}/metrics`)).text();
  const line = metrics
    .split("\n")
    .find((l) => l.startsWith("gw_mcp_client_operation_duration_seconds_count{") && l.includes('mcp_client="up"') && l.includes('mcp_tool_name="echo"') && l.includes('mcp_method="tools/call"') && l.includes('virtual_key_name="alice"'));
  assert.ok(line, "a sample for up's echo called with alice's key");
});

test("every relayed method is measured under its own mcp_method", async () => {
  const client = await connect("up", { headers: { "x-gw-vk": ALICE } });
  await client.listResources();
  const metrics = await (await fetch(`${app.url}/metrics`)).text();
  const line = metrics
    .split("\n")
    .find((l) => l.startsWith("gw_mcp_client_operation_duration_seconds_count{") && l.includes('mcp_client="up"') && l.includes('mcp_method="resources/list"') && l.includes('mcp_tool_name=""'));
  assert.ok(line, "a sample for up's resources/list");
});

test("a per-user client answers tools/call with mcp_auth_required and a URL elicitation, and relays once the caller has a credential", async () => {
  const elicited: { mode?: string; url?: string }[] = [];
  const client = await connect("crm", {
    headers: { "x-gw-vk": ALICE },
    capabilities: { elicitation: { url: {} } },
    setup: (c) =>
      c.setRequestHandler(ElicitRequestSchema, (request) => {
        elicited.push(request.params as { mode?: string; url?: string });
        return { action: "accept" };
      }),
  });
  assert.deepEqual(await toolNames(client), ["echo", "add", "slow"]);
  const first = await client.callTool({ name: "echo", arguments: { text: "hello" } });
  assert.equal(first.isError, true);
  const payload = JSON.parse(textOf(first)).mcp_auth_required as { submit_url: string; kind: string };
  assert.equal(payload.kind, "headers");
  await eventually("the URL elicitation", () => (elicited.length > 0 ? true : undefined));
  assert.deepEqual([elicited[0]?.mode, elicited[0]?.url], ["url", payload.submit_url]);
  const flow = new URL(payload.submit_url).searchParams.get("flow") ?? "";
  accepted.push("token-of-alice");
  const submitted = await api(app, "PUT", `/api/mcp/per-user-headers/flows/${flow}`, { headers: { "x-user-token": "token-of-alice" } });
  assert.equal(submitted.status, 200, JSON.stringify(submitted.body));
  const second = await client.callTool({ name: "echo", arguments: { text: "hello" } });
  assert.notEqual(second.isError, true, textOf(second));
  assert.equal(textOf(second), "hello");
  assert.ok(perUser.seenHeaders.some((headers) => headers["x-user-token"] === "token-of-alice"), "the upstream got alice's own credential");
});

describe("with a short idle timeout", () => {
  let idleApp: TestApp;

  before(async () => {
    idleApp = await startApp({ mcpSessions: { idleTimeoutMs: 200 }, mcpClients: [remoteClient("up", "http", upstream.httpUrl, ALL_TOOLS)] });
    await waitHealthy(idleApp, ["up"]);
  });

  after(async () => {
    await idleApp?.stop();
  });

  test("an idle session is closed with its upstream session", async () => {
    const before = upstream.httpSessions;
    const client = await connectRelay(idleApp, "up");
    assert.equal(upstream.httpSessions, before + 1);
    // The client's GET stream keeps a session alive; without it the session idles.
    await client.close();
    await eventually("the idle session is closed", () => (idleApp.logLines.some((line) => line.includes("closing an idle MCP relay session")) ? true : undefined));
    await eventually("its upstream session is closed", () => (upstream.httpSessions === before ? true : undefined));
  });
});
