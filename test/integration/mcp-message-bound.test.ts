/**
 * An upstream MCP server's answer larger than the bound on one message (10 MiB) fails that one call with an
 * error naming the bound, over streamable HTTP, legacy SSE and stdio, through /v1/mcp/tool/execute and the
 * relay alike, and the server stays connected (a stdio child keeps running, a legacy SSE stream goes on).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import { MAX_UPSTREAM_MESSAGE_BYTES } from "../../src/mcp/message-bound.js";
import { startMcpFixture, type McpFixture } from "../fixtures/mcp-server.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { stdioClient } from "../helpers/mcp-specs.js";
import { closeRelay, connectRelay, remoteClient, textOf, waitHealthy } from "../helpers/relay-client.js";

const OVER = MAX_UPSTREAM_MESSAGE_BYTES + 1024;
const STDIO_FIXTURE = fileURLToPath(new URL("../fixtures/stdio-server.ts", import.meta.url));

let fixture: McpFixture;
let app: TestApp;

before(async () => {
  fixture = await startMcpFixture({ largeTool: true });
  app = await startApp({
    mcpClients: [
      remoteClient("big", "http", fixture.httpUrl, ["*"]),
      remoteClient("bigsse", "sse", fixture.sseUrl, ["*"]),
      { ...stdioClient("bigstdio", process.execPath, ["--import", "tsx", STDIO_FIXTURE, "--large"]), toolsToExecute: ["*"] },
    ],
  });
  await waitHealthy(app, ["big", "bigsse", "bigstdio"]);
});

after(async () => {
  await app?.stop();
  await fixture?.close();
});

function execute(name: string, args: Record<string, unknown>) {
  return api(app, "POST", "/v1/mcp/tool/execute", { id: "c1", type: "function", function: { name, arguments: JSON.stringify(args) } });
}

for (const [client, transport] of [["big", "streamable HTTP"], ["bigsse", "legacy SSE"], ["bigstdio", "stdio"]] as const) {
  describe(`a ${transport} server's answer over the bound`, () => {
    test("fails the tool call with an error naming the bound", async () => {
      const res = await execute(`${client}-large`, { bytes: OVER });
      assert.equal(res.status, 200, JSON.stringify(res.body).slice(0, 500));
      assert.match(res.body.content, new RegExp(`^Error: tool ${client}-large failed: .*larger than ${MAX_UPSTREAM_MESSAGE_BYTES} bytes`));
    });

    test("leaves the server connected: the next calls answer", async () => {
      await execute(`${client}-large`, { bytes: OVER });
      const echo = await execute(`${client}-echo`, { text: "still here" });
      assert.equal(echo.body.content, "still here");
      const small = await execute(`${client}-large`, { bytes: 1000 });
      assert.equal(small.body.content, "x".repeat(1000));
      const clients = (await api(app, "GET", "/api/mcp/clients")).body.clients as { name: string; state: string }[];
      assert.equal(clients.find((c) => c.name === client)?.state, "healthy");
    });

    test("fails the relayed tools/call with an internal error naming the bound, and the session goes on", async () => {
      const relay = await connectRelay(app, client);
      try {
        await assert.rejects(relay.callTool({ name: "large", arguments: { bytes: OVER } }), (err: unknown) => {
          assert.ok(err instanceof McpError, String(err));
          assert.equal(err.code, -32603);
          assert.match(err.message, new RegExp(`answer to tools/call is larger than ${MAX_UPSTREAM_MESSAGE_BYTES} bytes`));
          return true;
        });
        assert.equal(textOf(await relay.callTool({ name: "echo", arguments: { text: "on" } })), "on");
      } finally {
        await closeRelay(relay);
      }
    });
  });
}

test("keeps a stdio child running past its answer over the bound", async () => {
  const before = await execute("bigstdio-pid", {});
  await execute("bigstdio-large", { bytes: OVER });
  const after = await execute("bigstdio-pid", {});
  assert.match(before.body.content, /^\d+$/);
  assert.equal(after.body.content, before.body.content);
});
