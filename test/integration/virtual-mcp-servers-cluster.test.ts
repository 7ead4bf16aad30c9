/**
 * Two gateways on one PostgreSQL schema: a virtual MCP server written through one is served by the other,
 * and its deletion ends that. Needs a PostgreSQL server (the embedded database serves one node).
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { rm } from "node:fs/promises";
import { after, before, describe, test } from "node:test";
import { randomSchemaName } from "../../src/store/index.js";
import { eventually } from "../helpers/cluster.js";
import { api, startApp, testDatabaseUrl, type TestApp } from "../helpers/app.js";
import { remoteClient, waitHealthy } from "../helpers/relay-client.js";
import { startRelayUpstream, type RelayUpstreamListener } from "../helpers/relay-upstream.js";

/** The status of an initialize POST to /mcp/<name> of `app`. */
async function initializeStatus(app: TestApp, name: string): Promise<number> {
  const res = await fetch(`${app.url}/mcp/${name}`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } } }),
  });
  await res.body?.cancel();
  return res.status;
}

describe("virtual MCP servers on two nodes", { skip: testDatabaseUrl ? false : "needs a PostgreSQL server: set GW_TEST_DATABASE_URL" }, () => {
  let upstream: RelayUpstreamListener;
  let writer: TestApp;
  let reader: TestApp;

  before(async () => {
    upstream = await startRelayUpstream();
    const shared = { schema: randomSchemaName(), encryptionKey: randomBytes(32).toString("base64"), mcpClients: [remoteClient("up", "http", upstream.httpUrl, ["*"])] };
    writer = await startApp(shared);
    reader = await startApp(shared);
    await waitHealthy(reader, ["up"]);
  });

  after(async () => {
    // The schema is shared: only the last node to stop drops it.
    await reader?.stop({ keepData: true });
    if (reader) await rm(reader.dataDir, { recursive: true, force: true });
    await writer?.stop();
    await upstream?.close();
  });

  test("a virtual server created on one node is served by the other", async () => {
    const created = await api(writer, "POST", "/api/mcp/virtual-servers", { name: "shared", members: [{ client: "up", tools: ["*"] }] });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    await eventually("the virtual server on the other node", async () => ((await initializeStatus(reader, "shared")) === 200 ? true : undefined));
  });

  test("a virtual server deleted on one node is no longer served by the other", async () => {
    const created = await api(writer, "POST", "/api/mcp/virtual-servers", { name: "gone", members: [{ client: "up", tools: ["*"] }] });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    await eventually("the virtual server on the other node", async () => ((await initializeStatus(reader, "gone")) === 200 ? true : undefined));
    assert.equal((await api(writer, "DELETE", "/api/mcp/virtual-servers/gone")).status, 200);
    await eventually("the deletion on the other node", async () => ((await initializeStatus(reader, "gone")) === 404 ? true : undefined));
  });
});
