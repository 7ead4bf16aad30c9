/** GET /ready: 503 naming what start-up still waits for, then 200; GET /health answers throughout. */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { appOptionsFromConfig } from "../../src/app.js";
import { parseConfig } from "../../src/config/load-config.js";
import { startMcpFixture, type McpFixture } from "../fixtures/mcp-server.js";
import { api, startApp, type TestApp } from "../helpers/app.js";

// A long operation timeout: the first connection to the hanging upstream ends only when the test ends it.
const TIMING = { healthyCheckMs: 60_000, unstableCheckMs: 60_000, retries: 3, retryDelayMs: 10, operationTimeoutMs: 60_000 };

describe("readiness", () => {
  let upstream: McpFixture;
  let app: TestApp;
  before(async () => {
    upstream = await startMcpFixture();
    upstream.setMode("hang");
    const file = parseConfig({ mcp: { client_configs: [{ name: "slow", connection_type: "http", connection_string: upstream.httpUrl }] } }, {});
    app = await startApp({ ...appOptionsFromConfig(file), mcpTiming: TIMING });
  });
  after(async () => {
    await app.stop();
    await upstream.close();
  });

  test("/ready answers 503 naming the MCP client whose start-up connection is still pending, while /health answers 200", async () => {
    const ready = await api(app, "GET", "/ready");
    assert.equal(ready.status, 503);
    assert.deepEqual(ready.body, { status: "starting", pending: ["mcp_connections"], mcp_clients_connecting: ["slow"] });
    assert.equal((await api(app, "GET", "/health")).status, 200);
  });

  test("/ready answers 200 once the start-up connection has finished", async () => {
    upstream.setMode("up");
    // Ends the hung connection attempt; the client's next attempt reaches the server again.
    await upstream.stop();
    await upstream.restart();
    let ready = await api(app, "GET", "/ready");
    // Bounded: 300 polls of 100 ms.
    for (let i = 0; i < 300 && ready.status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 100));
      ready = await api(app, "GET", "/ready");
    }
    assert.equal(ready.status, 200);
    assert.deepEqual(ready.body, { status: "ready" });
    assert.ok(app.logLines.some((line) => line.includes('"msg":"gateway ready"')));
  });
});
