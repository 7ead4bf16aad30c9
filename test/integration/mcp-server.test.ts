/**
 * The gateway as an MCP server, through the MCP SDK's own client over Streamable HTTP (/mcp) and the
 * legacy SSE transport (/mcp/sse): listing and calling the caller's tools, the visibility rule (virtual
 * key mcp_configs, allow_on_all_virtual_keys, include headers), tools/list_changed, tool failures as
 * isError results, and sessions bound to the caller that opened them.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { EmptyResultSchema, ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { startMcpFixture, type McpFixture } from "../fixtures/mcp-server.js";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { closeMcp, connectMcp, MCP_TRANSPORTS, resultText, toolNames } from "../helpers/mcp-client.js";

const DOCS_KEY = "sk-gw-mcp-docs";
const ECHO_KEY = "sk-gw-mcp-echo";
const NONE_KEY = "sk-gw-mcp-none";
const CHANGING_KEY = "sk-gw-mcp-changing";
const UNSET_KEY = "sk-gw-mcp-unset";

let docs: McpFixture;
let shared: McpFixture;
let extra: McpFixture;
let app: TestApp;
const open: Client[] = [];

async function createClient(name: string, fixture: McpFixture, fields: Record<string, unknown> = {}): Promise<string> {
  const res = await api(app, "POST", "/api/mcp/client", { name, connection_type: "http", connection_string: fixture.httpUrl, tools_to_execute: ["*"], ...fields });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.client_id as string;
}

before(async () => {
  docs = await startMcpFixture();
  shared = await startMcpFixture({ extraTools: ["status"] });
  extra = await startMcpFixture();
  app = await startApp({
    inference: inferenceOptionsFromFile({}, [
      { id: "vk-docs", name: "docs-team", value: DOCS_KEY, mcp_configs: [{ mcp_client_name: "docs", tools_to_execute: ["*"] }] },
      { id: "vk-echo", name: "echo-only", value: ECHO_KEY, mcp_configs: [{ mcp_client_name: "docs", tools_to_execute: ["echo"] }] },
      { id: "vk-none", name: "no-tools", value: NONE_KEY, mcp_configs: [] },
      { id: "vk-changing", name: "changing", value: CHANGING_KEY, mcp_configs: [{ mcp_client_name: "docs", tools_to_execute: ["echo"] }] },
      { id: "vk-unset", name: "unset", value: UNSET_KEY },
    ]),
  });
  await createClient("docs", docs);
  // Only `status` of shared is callable; every key sees it without naming the client.
  await createClient("shared", shared, { tools_to_execute: ["status"], allow_on_all_virtual_keys: true });
});

after(async () => {
  await Promise.all(open.map((c) => closeMcp(c).catch(() => undefined)));
  await app?.stop();
  await Promise.all([docs?.close(), shared?.close(), extra?.close()]);
});

async function connect(kind: (typeof MCP_TRANSPORTS)[number], headers: Record<string, string> = {}): Promise<Client> {
  const client = await connectMcp(app, kind, headers);
  open.push(client);
  return client;
}

for (const kind of MCP_TRANSPORTS) {
  describe(`over ${kind === "streamable" ? "Streamable HTTP" : "SSE"}`, () => {
    test("lists every client's tools_to_execute, named <client>-<tool>, to a caller without a virtual key", async () => {
      const client = await connect(kind);
      assert.deepEqual(await toolNames(client), ["docs-add", "docs-echo", "docs-slow", "shared-status"]);
    });

    test("lists each tool with the upstream's description and input schema", async () => {
      const client = await connect(kind);
      const echo = (await client.listTools()).tools.find((t) => t.name === "docs-echo");
      assert.equal(echo?.description, "Echoes its text");
      assert.deepEqual(echo?.inputSchema.required, ["text"]);
      assert.equal((echo?.inputSchema.properties as Record<string, { type: string }>)["text"]?.type, "string");
    });

    test("calls a tool through the upstream and returns its content", async () => {
      const client = await connect(kind, { "x-gw-vk": DOCS_KEY });
      const result = await client.callTool({ name: "docs-echo", arguments: { text: `hi ${kind}` } });
      assert.equal(result.isError, false);
      assert.equal(resultText(result), `hi ${kind}`);
    });

    test("two virtual keys see different tools, and a key whose mcp_configs is [] sees only clients open to every key", async () => {
      const docsTeam = await connect(kind, { authorization: `Bearer ${DOCS_KEY}` });
      const echoOnly = await connect(kind, { "x-api-key": ECHO_KEY });
      const none = await connect(kind, { "x-gw-vk": NONE_KEY });
      assert.deepEqual(await toolNames(docsTeam), ["docs-add", "docs-echo", "docs-slow", "shared-status"]);
      assert.deepEqual(await toolNames(echoOnly), ["docs-echo", "shared-status"]);
      assert.deepEqual(await toolNames(none), ["shared-status"]);
    });

    test("a virtual key without mcp_configs sees and calls what a caller without a key does", async () => {
      const client = await connect(kind, { "x-gw-vk": UNSET_KEY });
      assert.deepEqual(await toolNames(client), ["docs-add", "docs-echo", "docs-slow", "shared-status"]);
      const result = await client.callTool({ name: "docs-add", arguments: { a: 2, b: 3 } });
      assert.equal(result.isError, false, resultText(result));
    });

    test("x-gw-mcp-include-clients and x-gw-mcp-include-tools narrow the list, and <client>-* names every tool of a client", async () => {
      const byClient = await connect(kind, { "x-gw-mcp-include-clients": "shared" });
      assert.deepEqual(await toolNames(byClient), ["shared-status"]);
      const byTool = await connect(kind, { "x-gw-mcp-include-tools": "docs-add,shared-*" });
      assert.deepEqual(await toolNames(byTool), ["docs-add", "shared-status"]);
    });

    test("an empty include header lists no tool", async () => {
      const client = await connect(kind, { "x-gw-mcp-include-tools": "" });
      assert.deepEqual(await toolNames(client), []);
    });

    test("a tool the caller may not use fails exactly like one that does not exist, and does not run", async () => {
      const client = await connect(kind, { "x-gw-vk": ECHO_KEY });
      const before = docs.callCount("add");
      const hidden = await client.callTool({ name: "docs-add", arguments: { a: 1, b: 2 } });
      const missing = await client.callTool({ name: "docs-nosuchtool", arguments: { a: 1, b: 2 } });
      assert.equal(hidden.isError, true);
      assert.equal(resultText(hidden).replace("docs-add", "X"), resultText(missing).replace("docs-nosuchtool", "X"));
      assert.match(resultText(hidden), /docs-add/);
      assert.equal(docs.callCount("add"), before);
    });

    test("a tool outside the client's tools_to_execute cannot be called", async () => {
      const client = await connect(kind);
      const result = await client.callTool({ name: "shared-echo", arguments: { text: "x" } });
      assert.equal(result.isError, true);
      assert.equal(shared.callCount("echo"), 0);
    });

    test("an unknown method is a JSON-RPC method-not-found error", async () => {
      const client = await connect(kind);
      await assert.rejects(client.request({ method: "no/such_method" }, EmptyResultSchema), (err: { code?: number }) => err.code === -32601);
    });

    test("an unknown virtual key cannot open a session", async () => {
      await assert.rejects(connectMcp(app, kind, { "x-gw-vk": "sk-gw-nobody" }), /401|virtual key/);
    });

    test("with client.enforce_governance on, a caller without a virtual key cannot open a session and one with a key can", async () => {
      assert.equal((await api(app, "PATCH", "/config", { client: { enforce_governance: true } })).status, 200);
      try {
        await assert.rejects(connectMcp(app, kind), /401|virtual key/);
        const client = await connect(kind, { "x-gw-vk": DOCS_KEY });
        assert.ok((await toolNames(client)).includes("docs-echo"));
      } finally {
        assert.equal((await api(app, "PATCH", "/config", { client: { enforce_governance: false } })).status, 200);
      }
    });

    test("sends tools/list_changed when a client is added through the API, and the new list has its tools", async () => {
      const client = await connect(kind);
      assert.ok(!(await toolNames(client)).includes(`extra_${kind}-echo`));
      const changed = new Promise<void>((resolve) => client.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve()));
      const id = await createClient(`extra_${kind}`, extra);
      await changed;
      assert.ok((await toolNames(client)).includes(`extra_${kind}-echo`));
      assert.equal((await api(app, "DELETE", `/api/mcp/client/${id}`)).status, 200);
    });

    test("sends tools/list_changed when the caller's virtual key gets more tools", async () => {
      const client = await connect(kind, { "x-gw-vk": CHANGING_KEY });
      assert.deepEqual(await toolNames(client), ["docs-echo", "shared-status"]);
      const changed = new Promise<void>((resolve) => client.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve()));
      const path = "/api/governance/virtual-keys/vk-changing";
      assert.equal((await api(app, "PUT", path, { mcp_configs: [{ mcp_client_name: "docs", tools_to_execute: ["echo", "add"] }] })).status, 200);
      try {
        await changed;
        assert.deepEqual(await toolNames(client), ["docs-add", "docs-echo", "shared-status"]);
      } finally {
        assert.equal((await api(app, "PUT", path, { mcp_configs: [{ mcp_client_name: "docs", tools_to_execute: ["echo"] }] })).status, 200);
      }
    });
  });
}
