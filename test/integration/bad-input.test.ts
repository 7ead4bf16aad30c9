/** Bad input of every kind gets a 4xx in the envelope, never a 5xx, and the server stays healthy. */
import assert from "node:assert/strict";
import * as net from "node:net";
import { after, afterEach, before, describe, test } from "node:test";
import { api, startApp, type TestApp } from "../helpers/app.js";

describe("bad input", () => {
  let app: TestApp;
  before(async () => {
    app = await startApp();
  });
  after(() => app.stop());
  afterEach(async () => {
    const health = await api(app, "GET", "/health");
    assert.equal(health.status, 200, "server still healthy");
  });

  async function raw(method: string, path: string, body: Buffer | string, contentType = "application/json") {
    const hasBody = body.length > 0;
    const res = await fetch(`${app.url}${path}`, { method, ...(hasBody ? { headers: { "content-type": contentType }, body } : {}) });
    const text = await res.text();
    return { status: res.status, text, json: (() => { try { return JSON.parse(text); } catch { return undefined; } })() };
  }

  function assertEnvelope4xx(res: { status: number; json: any /* parsed error body */; text: string }) {
    assert.ok(res.status >= 400 && res.status < 500, `status ${res.status}: ${res.text}`);
    assert.equal(typeof res.json?.error?.type, "string", res.text);
    assert.equal(typeof res.json?.error?.message, "string", res.text);
  }

  test("malformed JSON is a 400", async () => {
    const res = await raw("POST", "/api/mcp/client", '{"name": "x",');
    assertEnvelope4xx(res);
    assert.equal(res.status, 400);
  });

  test("a JSON array body is a 400", async () => {
    const res = await raw("POST", "/api/mcp/client", "[1,2]");
    assertEnvelope4xx(res);
    assert.equal(res.status, 400);
  });

  test("a wrong type is a 400 naming the field", async () => {
    const res = await raw("POST", "/api/mcp/client", JSON.stringify({ name: 42, connection_type: "http" }));
    assertEnvelope4xx(res);
    assert.match(res.json.error.message, /name/);
  });

  test("a wrong type inside a list is a 400 naming the field", async () => {
    const res = await raw("POST", "/api/mcp/client", JSON.stringify({ name: "x", connection_type: "sse", connection_string: "http://127.0.0.1:9/sse", tools_to_execute: [1] }));
    assertEnvelope4xx(res);
    assert.match(res.json.error.message, /tools_to_execute/);
  });

  test("an unknown top-level field is a 400 naming it", async () => {
    const res = await raw("POST", "/api/mcp/client", JSON.stringify({ name: "x", connection_type: "sse", surprise: true }));
    assertEnvelope4xx(res);
    assert.match(res.json.error.message, /surprise/);
  });

  test("an unknown nested field is a 400 naming it", async () => {
    const res = await raw("POST", "/api/mcp/client", JSON.stringify({ name: "x", connection_type: "stdio", stdio_config: { command: "node", shell: true } }));
    assertEnvelope4xx(res);
    assert.match(res.json.error.message, /shell/);
  });

  test("an int32 out of range is a 400", async () => {
    const res = await raw("POST", "/api/mcp/client", JSON.stringify({ name: "x", connection_type: "sse", connection_string: "http://127.0.0.1:9/sse", tool_sync_interval: 1e12 }));
    assertEnvelope4xx(res);
    assert.match(res.json.error.message, /tool_sync_interval/);
  });

  test("a 20 MB body is a 413", async () => {
    const big = Buffer.alloc(20 * 1024 * 1024, 0x61);
    let status = 0;
    try {
      const res = await fetch(`${app.url}/api/mcp/client`, { method: "POST", headers: { "content-type": "application/json" }, body: big });
      status = res.status;
      if (status !== 413) assert.fail(await res.text());
      const body = (await res.json()) as { error: { type: string } };
      assert.equal(body.error.type, "payload_too_large");
    } catch (err) {
      // The server may close the connection before the client finished sending; that is a refusal too.
      if (status === 0 && err instanceof TypeError) return;
      throw err;
    }
  });

  test("a 20 MB body over Connect is refused with a 4xx", async () => {
    const big = Buffer.alloc(20 * 1024 * 1024, 0x61);
    try {
      const res = await fetch(`${app.url}/gw.admin.v1.McpClientService/ListMcpClients`, { method: "POST", headers: { "content-type": "application/json" }, body: big });
      assert.ok(res.status >= 400 && res.status < 500, `status ${res.status}`);
    } catch (err) {
      if (!(err instanceof TypeError)) throw err;
    }
  });

  test("invalid UTF-8 is a 400", async () => {
    const body = Buffer.concat([Buffer.from('{"name": "'), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from('"}')]);
    const res = await raw("POST", "/api/mcp/client", body);
    assertEnvelope4xx(res);
    assert.equal(res.status, 400);
    assert.match(res.json.error.message, /UTF-8/);
  });

  test("a non-JSON content type is a 415", async () => {
    const res = await raw("POST", "/api/mcp/client", "name=x", "application/x-www-form-urlencoded");
    assertEnvelope4xx(res);
    assert.equal(res.status, 415);
  });

  for (const path of [
    "/api/mcp/client/%ZZ",
    "/api/mcp/client/..%2F..%2Fetc%2Fpasswd",
    "/api/mcp/client/'%3B%20drop%20table%20mcp_client%3B--",
    `/api/mcp/client/${"a".repeat(5000)}`,
    "/api/mcp/client/%F0%9F%98%80",
    "/api/mcp/client/00000000-0000-0000-0000-000000000000",
  ]) {
    test(`an odd id in the path gets a 4xx: ${path.slice(0, 60)}`, async () => {
      const res = await raw("PUT", path, JSON.stringify({ name: "x" }));
      assertEnvelope4xx(res);
      const del = await fetch(`${app.url}${path}`, { method: "DELETE" });
      assert.ok(del.status >= 400 && del.status < 500, `DELETE status ${del.status}`);
    });
  }

  test("an unknown /api path is a 404 in the envelope", async () => {
    const res = await raw("GET", "/api/nothing/here", "");
    assert.equal(res.status, 404);
    assertEnvelope4xx(res);
  });

  test("a known path with the wrong method is a 405", async () => {
    const res = await raw("PATCH", "/api/mcp/clients", "{}");
    assert.equal(res.status, 405);
    assertEnvelope4xx(res);
  });

  test("a 405 lists HEAD beside GET in its Allow header", async () => {
    const res = await fetch(`${app.url}/api/mcp/clients`, { method: "PATCH", headers: { "content-type": "application/json" }, body: "{}" });
    await res.arrayBuffer();
    assert.equal(res.headers.get("allow"), "GET, HEAD");
  });

  test("HEAD on a GET route answers as GET would, without a body", async () => {
    const get = await fetch(`${app.url}/api/mcp/clients`);
    const getBody = await get.text();
    const head = await fetch(`${app.url}/api/mcp/clients`, { method: "HEAD" });
    assert.equal(head.status, 200);
    assert.equal(head.headers.get("content-type"), get.headers.get("content-type"));
    assert.equal((await head.arrayBuffer()).byteLength, 0);
    assert.ok(getBody.length > 0);
  });

  test("an unknown query parameter is a 400 naming it", async () => {
    const res = await raw("GET", "/api/mcp/clients?colour=blue", "");
    assertEnvelope4xx(res);
    assert.match(res.json.error.message, /colour/);
  });

  test("a non-numeric limit is a 400 naming it", async () => {
    const res = await raw("GET", "/api/mcp/clients?limit=ten", "");
    assertEnvelope4xx(res);
    assert.match(res.json.error.message, /limit/);
  });

  test("malformed JSON over the Connect protocol is a 400", async () => {
    const res = await fetch(`${app.url}/gw.admin.v1.McpClientService/CreateMcpClient`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{nope",
    });
    assert.equal(res.status, 400);
  });

  test("garbage bytes on the socket close that connection only", async () => {
    const { port } = new URL(app.url);
    await new Promise<void>((resolve) => {
      const socket = net.connect(Number(port), "127.0.0.1", () => socket.write("\x00\x01\x02 not http at all\r\n\r\n"));
      socket.on("data", () => undefined);
      socket.on("close", () => resolve());
      socket.on("error", () => resolve());
      socket.setTimeout(5_000, () => socket.destroy());
    });
  });
});
