/**
 * A tool the upstream never listed in tools/list is refused by POST /v1/mcp/tool/execute exactly like a
 * tool that does not exist, even for a client whose tools_to_execute is ["*"], and never reaches the upstream.
 */
import assert from "node:assert/strict";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { api, startApp, type TestApp } from "../helpers/app.js";

const TIMING = { healthyCheckMs: 60_000, unstableCheckMs: 60_000, retries: 3, retryDelayMs: 10, operationTimeoutMs: 2_000 };

/** An upstream that lists only `echo` but answers a call of any tool name, recording the names called. */
async function startHidingUpstream(): Promise<{ url: string; called: string[]; close: () => Promise<void> }> {
  const called: string[] = [];
  const httpServer = http.createServer((req, res) => {
    const server = new Server({ name: "hiding", version: "1.0.0" }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [{ name: "echo", description: "Echoes", inputSchema: { type: "object" } }] }));
    server.setRequestHandler(CallToolRequestSchema, (request) => {
      called.push(request.params.name);
      return { content: [{ type: "text", text: `ran ${request.params.name}` }] };
    });
    // Stateless: a fresh server and transport per request.
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on("close", () => void transport.close());
    void server.connect(transport).then(() => transport.handleRequest(req, res));
  });
  await new Promise<void>((resolve) => httpServer.listen(0, "127.0.0.1", resolve));
  const { port } = httpServer.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    called,
    close: () =>
      new Promise<void>((resolve) => {
        httpServer.closeAllConnections();
        httpServer.close(() => resolve());
      }),
  };
}

function execute(app: TestApp, name: string) {
  return api(app, "POST", "/v1/mcp/tool/execute", { id: "call_1", type: "function", function: { name, arguments: "{}" } });
}

describe("tools the upstream did not list", () => {
  let app: TestApp;
  let upstream: Awaited<ReturnType<typeof startHidingUpstream>>;

  before(async () => {
    upstream = await startHidingUpstream();
    app = await startApp({ mcpTiming: TIMING });
    const res = await api(app, "POST", "/api/mcp/client", { name: "up", connection_type: "http", connection_string: upstream.url, tools_to_execute: ["*"] });
    assert.equal(res.status, 200, JSON.stringify(res.body));
  });
  after(async () => {
    await app.stop();
    await upstream.close();
  });

  test("a listed tool runs", async () => {
    const res = await execute(app, "up-echo");
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.content, "ran echo");
  });

  test("an unlisted tool is refused like an unknown one and never reaches the upstream", async () => {
    const before = upstream.called.length;
    const hidden = await execute(app, "up-secret");
    const unknown = await execute(app, "up-nosuchtool");
    const dashed = await execute(app, "up--echo");
    assert.notEqual(hidden.status, 200, JSON.stringify(hidden.body));
    assert.equal(hidden.status, unknown.status);
    assert.equal(dashed.status, unknown.status);
    assert.equal(JSON.stringify(hidden.body).replaceAll("secret", "X"), JSON.stringify(unknown.body).replaceAll("nosuchtool", "X"));
    assert.deepEqual(upstream.called.slice(before), []);
  });
});
