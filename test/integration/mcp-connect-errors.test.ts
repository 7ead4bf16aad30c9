/**
 * An MCP client that cannot connect keeps the cause in its last_failure, the API's answer and the
 * log: the refused address for a network upstream, the last lines of its stderr for a stdio child.
 */
import assert from "node:assert/strict";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { stdioClient } from "../helpers/mcp-specs.js";
import { freePort } from "../helpers/ports.js";

async function lastFailure(app: TestApp, name: string): Promise<{ stage: string; message: string } | undefined> {
  const res = await api(app, "GET", `/api/mcp/clients?search=${name}`);
  return (res.body.clients as { name: string; last_failure?: { stage: string; message: string } }[]).find((c) => c.name === name)?.last_failure;
}

describe("an http client whose upstream refuses the connection", () => {
  let app: TestApp;
  let port: number;
  let created: { status: number; body: { message: string } };

  before(async () => {
    // Free a moment ago and bound by nothing since: connecting is refused.
    port = await freePort();
    app = await startApp();
    created = await api(app, "POST", "/api/mcp/client", { name: "refused", connection_type: "http", connection_string: `http://127.0.0.1:${port}/mcp` });
  });
  after(() => app.stop());

  test("its last_failure names ECONNREFUSED and the address", async () => {
    const failure = await lastFailure(app, "refused");
    assert.equal(failure?.stage, "connect");
    assert.match(failure?.message ?? "", new RegExp(`ECONNREFUSED 127\\.0\\.0\\.1:${port}`));
  });

  test("the create answer names ECONNREFUSED and the address", () => {
    assert.equal(created.status, 200);
    assert.match(created.body.message, new RegExp(`ECONNREFUSED 127\\.0\\.0\\.1:${port}`));
  });

  test("the state change log line names ECONNREFUSED and the address", () => {
    const line = app.logLines.find((l) => l.includes("MCP client state changed") && l.includes("refused"));
    assert.match(line ?? "", new RegExp(`ECONNREFUSED 127\\.0\\.0\\.1:${port}`));
  });
});

describe("an http client whose URL redirects", () => {
  let app: TestApp;
  let redirector: http.Server;
  const target = "http://127.0.0.1:9/elsewhere/mcp";

  before(async () => {
    redirector = http.createServer((_req, res) => res.writeHead(307, { location: target }).end());
    await new Promise<void>((resolve) => redirector.listen(0, "127.0.0.1", resolve));
    app = await startApp();
    await api(app, "POST", "/api/mcp/client", { name: "moved", connection_type: "http", connection_string: `http://127.0.0.1:${(redirector.address() as AddressInfo).port}/mcp` });
  });
  after(async () => {
    await app.stop();
    await new Promise((resolve) => redirector.close(resolve));
  });

  test("its last_failure names where the redirect points, which is not followed", async () => {
    const failure = await lastFailure(app, "moved");
    assert.equal(failure?.stage, "connect");
    assert.match(failure?.message ?? "", /HTTP 307\) \(a redirect to http:\/\/127\.0\.0\.1:9\/elsewhere\/mcp, which is not followed/);
  });
});

describe("a stdio client whose child exits at start", () => {
  let app: TestApp;
  const script = "for (let i = 1; i <= 8; i++) console.error('problem line ' + i); process.exit(3);";

  before(async () => {
    app = await startApp({
      mcpClients: [stdioClient("crashing", process.execPath, ["-e", script])],
    });
  });
  after(() => app.stop());

  async function settledFailure() {
    for (let i = 0; i < 200; i++) {
      const failure = await lastFailure(app, "crashing");
      if (failure !== undefined) return failure;
      await new Promise((r) => setTimeout(r, 25));
    }
    assert.fail("the stdio client never recorded a failure");
  }

  test("its last_failure quotes the last lines the child wrote to stderr, in order", async () => {
    const failure = await settledFailure();
    assert.equal(failure.stage, "connect");
    assert.match(failure.message, /problem line 4 \| problem line 5 \| problem line 6 \| problem line 7 \| problem line 8/);
  });

  test("its last_failure leaves out the older stderr lines", async () => {
    const failure = await settledFailure();
    assert.doesNotMatch(failure.message, /problem line 3/);
  });
});
