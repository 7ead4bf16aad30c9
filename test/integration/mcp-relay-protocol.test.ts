/**
 * JSON-RPC rules of the gateway's MCP endpoints, toward the client and toward the upstream: an initialize
 * sent as a notification opens no session, a request reusing the id of one still in flight is refused
 * while the first completes, and a relayed request whose upstream answers 200 with neither JSON nor SSE
 * fails at once.
 */
import assert from "node:assert/strict";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import { after, before, describe, test } from "node:test";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { closeRelay, connectRelay, remoteClient, waitHealthy } from "../helpers/relay-client.js";
import { startMcpFixture, type McpFixture } from "../fixtures/mcp-server.js";

const HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };
const INIT_PARAMS = { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } };

/** One POST to `path` of the app; the answer's status, session header and body. */
async function post(app: TestApp, path: string, message: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${app.url}${path}`, { method: "POST", headers: { ...HEADERS, ...headers }, body: JSON.stringify(message), signal: AbortSignal.timeout(60_000) });
  return { status: res.status, session: res.headers.get("mcp-session-id"), body: await res.text() };
}

/** Opens a session on `path` with a raw initialize; answers its id. */
async function openSession(app: TestApp, path: string): Promise<string> {
  const init = await post(app, path, { jsonrpc: "2.0", id: 1, method: "initialize", params: INIT_PARAMS });
  assert.equal(init.status, 200, init.body);
  assert.ok(init.session !== null);
  const initialized = await post(app, path, { jsonrpc: "2.0", method: "notifications/initialized" }, { "mcp-session-id": init.session, "mcp-protocol-version": "2025-06-18" });
  assert.equal(initialized.status, 202, initialized.body);
  return init.session;
}

/** Waits (bounded) until the upstream has received `count` calls of `tool`. */
async function untilCalled(fixture: McpFixture, tool: string, count: number): Promise<void> {
  for (let i = 0; i < 400 && fixture.callCount(tool) < count; i++) await new Promise((resolve) => setTimeout(resolve, 25));
  assert.ok(fixture.callCount(tool) >= count, `${tool} was never called`);
}

describe("MCP endpoint protocol rules", () => {
  let app: TestApp;
  let fixture: McpFixture;

  before(async () => {
    fixture = await startMcpFixture();
    app = await startApp({ mcpClients: [remoteClient("up", "http", fixture.httpUrl, ["*"])] });
    await waitHealthy(app, ["up"]);
    const created = await api(app, "POST", "/api/mcp/virtual-servers", { name: "vs", members: [{ client: "up", tools: ["*"] }] });
    assert.equal(created.status, 200, JSON.stringify(created.body));
  });

  for (const [path, tool] of [
    ["/mcp", "up-slow"],
    ["/mcp/up", "slow"],
    ["/mcp/vs", "slow"],
  ] as const) {
    test(`on ${path} a request reusing the id of one in flight is refused with -32600 and the first completes`, async () => {
      const session = await openSession(app, path);
      const headers = { "mcp-session-id": session, "mcp-protocol-version": "2025-06-18" };
      const calls = fixture.callCount("slow");
      // Slow enough that the duplicate is sent while the first call runs upstream.
      const first = post(app, path, { jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: tool, arguments: { ms: 3_000 } } }, headers);
      await untilCalled(fixture, "slow", calls + 1);
      const duplicate = await post(app, path, { jsonrpc: "2.0", id: 7, method: "ping" }, headers);
      assert.equal(duplicate.status, 400, duplicate.body);
      const refusal = JSON.parse(duplicate.body) as { error: { code: number; message: string } };
      assert.equal(refusal.error.code, -32600);
      assert.match(refusal.error.message, /\b7\b/);
      const answer = await first;
      assert.equal(answer.status, 200, answer.body);
      assert.match(answer.body, /"id":7\b/);
      assert.match(answer.body, /"text":"done"/);
      // The id is free again once answered.
      const again = await post(app, path, { jsonrpc: "2.0", id: 7, method: "ping" }, headers);
      assert.equal(again.status, 200, again.body);
      await fetch(`${app.url}${path}`, { method: "DELETE", headers });
    });
  }
  after(async () => {
    await app.stop();
    await fixture.close();
  });

  for (const path of ["/mcp", "/mcp/up", "/mcp/vs"]) {
    test(`on ${path} a body not sent as application/json is refused with 415 naming the content type`, async () => {
      const init = { jsonrpc: "2.0", id: 1, method: "initialize", params: INIT_PARAMS };
      const refused = await post(app, path, init, { "content-type": "text/plain" });
      assert.equal(refused.status, 415, refused.body);
      assert.equal(refused.session, null);
      assert.match(refused.body, /Content-Type application\/json \(got \\"text\/plain\\"\)/);
      // With a charset, the same body is taken.
      const taken = await post(app, path, init, { "content-type": "application/json; charset=utf-8" });
      assert.equal(taken.status, 200, taken.body);
      if (taken.session !== null) await fetch(`${app.url}${path}`, { method: "DELETE", headers: { "mcp-session-id": taken.session } });
    });
  }

  for (const path of ["/mcp", "/mcp/up", "/mcp/vs"]) {
    test(`on ${path} an initialize without its params is refused with -32602 saying what they hold, opening no session`, async () => {
      for (const params of [undefined, { capabilities: {} }]) {
        const refused = await post(app, path, { jsonrpc: "2.0", id: 1, method: "initialize", ...(params ? { params } : {}) });
        assert.equal(refused.status, 400, refused.body);
        assert.equal(refused.session, null);
        const { error } = JSON.parse(refused.body) as { error: { code: number; message: string } };
        assert.equal(error.code, -32602);
        assert.match(error.message, /protocolVersion.*capabilities.*clientInfo/);
      }
    });
  }

  test("an initialize sent as a notification opens no session on /mcp/<client>, as on /mcp", async () => {
    const notification = { jsonrpc: "2.0", method: "initialize", params: INIT_PARAMS };
    const aggregate = await post(app, "/mcp", notification);
    const relayed = await post(app, "/mcp/up", notification);
    assert.equal(relayed.session, null);
    assert.equal(relayed.status, aggregate.status);
    assert.equal(relayed.body, aggregate.body);
  });
});

/**
 * A stateless upstream that answers initialize and tools/list with JSON, notifications with 202, offers no
 * GET stream, and answers tools/call with 200 and an HTML page; while `failInitialize` is set, initialize
 * gets a JSON-RPC error.
 */
async function startHtmlUpstream(): Promise<{ url: string; failInitialize: boolean; close: () => Promise<void> }> {
  const server = http.createServer((req, res) => {
    if (req.method !== "POST") {
      res.writeHead(405).end();
      return;
    }
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const message = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { id?: number | string; method?: string; params?: { protocolVersion?: string } };
      if (message.id === undefined) {
        res.writeHead(202).end();
        return;
      }
      if (message.method === "tools/call") {
        res.writeHead(200, { "content-type": "text/html" }).end("<html><body>a login page</body></html>");
        return;
      }
      if (message.method === "initialize" && upstream.failInitialize) {
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ jsonrpc: "2.0", id: message.id, error: { code: -32603, message: "not today" } }));
        return;
      }
      const result =
        message.method === "initialize"
          ? { protocolVersion: message.params?.protocolVersion ?? "2025-06-18", capabilities: { tools: {} }, serverInfo: { name: "html", version: "1" } }
          : message.method === "tools/list"
            ? { tools: [{ name: "page", inputSchema: { type: "object" } }] }
            : {};
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ jsonrpc: "2.0", id: message.id, result }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const upstream = {
    url: `http://127.0.0.1:${port}/mcp`,
    failInitialize: false,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return upstream;
}

describe("an http upstream answering a relayed request with HTML", () => {
  let app: TestApp;
  let upstream: Awaited<ReturnType<typeof startHtmlUpstream>>;

  before(async () => {
    upstream = await startHtmlUpstream();
    app = await startApp({ mcpClients: [remoteClient("html", "http", upstream.url, ["*"])] });
    await waitHealthy(app, ["html"]);
  });
  after(async () => {
    await app.stop();
    await upstream.close();
  });

  test("an initialize the upstream refuses is answered with the error and no session id", async () => {
    upstream.failInitialize = true;
    try {
      const answer = await post(app, "/mcp/html", { jsonrpc: "2.0", id: 1, method: "initialize", params: INIT_PARAMS });
      assert.equal(answer.status, 200, answer.body);
      assert.match(answer.body, /"error"/);
      assert.equal(answer.session, null);
    } finally {
      upstream.failInitialize = false;
    }
  });

  test("the call fails with -32000 naming the content type instead of waiting for the timeout", async () => {
    const client = await connectRelay(app, "html");
    try {
      // The bound only keeps a broken gateway from hanging the test; the relay's own timeout is shorter.
      const err = await client.callTool({ name: "page", arguments: {} }, undefined, { timeout: 120_000 }).then(
        () => assert.fail("the call succeeded"),
        (e: unknown) => e,
      );
      assert.ok(err instanceof McpError, String(err));
      assert.equal(err.code, -32000);
      assert.match(err.message, /text\/html/);
    } finally {
      await closeRelay(client);
    }
  });
});

describe("relay sessions of a client that changes", () => {
  let app: TestApp;
  let fixture: McpFixture;

  /** The id of the MCP client named `name`. */
  async function clientId(name: string): Promise<string> {
    const res = await api(app, "GET", "/api/mcp/clients");
    const found = (res.body.clients as { name: string; client_id: string }[]).find((client) => client.name === name);
    assert.ok(found !== undefined, `no client ${name}`);
    return found.client_id;
  }

  before(async () => {
    fixture = await startMcpFixture();
    // One live session at most, so a session left open by a deleted client would refuse the next one.
    app = await startApp({ mcpClients: ["turnedoff", "removed", "kept"].map((name) => remoteClient(name, "http", fixture.httpUrl, ["*"])), mcpSessions: { maxSessions: 1 } });
    await waitHealthy(app, ["turnedoff", "removed", "kept"]);
  });

  after(async () => {
    await app?.stop();
    await fixture?.close();
  });

  test("a session opened before its client was disabled refuses tool calls and the upstream never gets them", async () => {
    const session = await openSession(app, "/mcp/turnedoff");
    const headers = { "mcp-session-id": session, "mcp-protocol-version": "2025-06-18" };
    const id = await clientId("turnedoff");
    assert.equal((await api(app, "PUT", `/api/mcp/client/${id}`, { disabled: true })).status, 200);
    const calls = fixture.callCount("echo");
    const answer = await post(app, "/mcp/turnedoff", { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "echo", arguments: { text: "x" } } }, headers);
    assert.match(answer.body, /"code":-32000/);
    assert.match(answer.body, /disabled/);
    assert.equal(fixture.callCount("echo"), calls);
    await fetch(`${app.url}/mcp/turnedoff`, { method: "DELETE", headers });
  });

  test("deleting a client closes its sessions, so they hold no place among the live ones", async () => {
    await openSession(app, "/mcp/removed");
    assert.equal((await api(app, "DELETE", `/api/mcp/client/${await clientId("removed")}`)).status, 200);
    // Bounded: the closing follows the deletion's change notice.
    let status = 0;
    for (let i = 0; i < 100 && status !== 200; i++) {
      status = (await post(app, "/mcp/kept", { jsonrpc: "2.0", id: 1, method: "initialize", params: INIT_PARAMS })).status;
      if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.equal(status, 200);
  });
});
