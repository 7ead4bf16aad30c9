/**
 * The legacy SSE transport against a real HTTP server on port 0 that writes its GET stream by hand, with a
 * 200-byte bound on one event: what happens to events over the bound while the stream goes on.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { LegacySseTransport } from "../../src/mcp/legacy-sse-transport.js";
import { OversizedMessageError } from "../../src/mcp/message-bound.js";

const BOUND = 200;

let server: Server;
let url: URL;
/** The open GET stream, once a transport connected. */
let stream: ServerResponse | undefined;
/** Every message POSTed, in order. */
const posted: JSONRPCMessage[] = [];

before(async () => {
  server = createServer((req, res) => {
    if (req.method === "GET") {
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      res.write("event: endpoint\ndata: /messages\n\n");
      stream = res;
      return;
    }
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")));
    req.on("end", () => {
      posted.push(JSON.parse(body) as JSONRPCMessage);
      res.writeHead(202).end();
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/sse`);
});

after(async () => {
  stream?.end();
  server.closeAllConnections();
  server.close();
});

/** A started transport and what it handed on. */
async function connect(): Promise<{ transport: LegacySseTransport; messages: JSONRPCMessage[]; errors: Error[]; next: () => Promise<void> }> {
  const messages: JSONRPCMessage[] = [];
  const errors: Error[] = [];
  let wake: (() => void) | undefined;
  const transport = new LegacySseTransport(url, {}, fetch, BOUND);
  transport.onmessage = (message) => {
    messages.push(message);
    wake?.();
  };
  transport.onerror = (error) => {
    errors.push(error);
    wake?.();
  };
  await transport.start();
  const next = (): Promise<void> => new Promise((resolve) => (wake = resolve));
  return { transport, messages, errors, next };
}

/** Writes one message event of `message` onto the open GET stream. */
function emit(message: Record<string, unknown>): void {
  stream?.write(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
}

test("answers a pending request whose answer passes the bound with an internal error, and reads the next event", async () => {
  const { transport, messages, next } = await connect();
  try {
    await transport.send({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "big" } });
    assert.deepEqual(posted.at(-1), { jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "big" } });
    let woken = next();
    emit({ result: { text: "x".repeat(BOUND * 3) }, jsonrpc: "2.0", id: 3 });
    await woken;
    assert.deepEqual(messages, [
      { jsonrpc: "2.0", id: 3, error: { code: -32603, message: `the upstream MCP server's answer to tools/call is larger than ${BOUND} bytes, the most one message may take; it was dropped` } },
    ]);
    woken = next();
    emit({ jsonrpc: "2.0", method: "notifications/message", params: { level: "info", data: "after" } });
    await woken;
    assert.deepEqual(messages[1], { jsonrpc: "2.0", method: "notifications/message", params: { level: "info", data: "after" } });
  } finally {
    await transport.close();
  }
});

test("reports a notification over the bound as dropped, and reads the next event", async () => {
  const { transport, messages, errors, next } = await connect();
  try {
    let woken = next();
    emit({ jsonrpc: "2.0", method: "notifications/message", params: { level: "info", data: "y".repeat(BOUND * 3) } });
    await woken;
    assert.equal(errors.length, 1);
    assert.ok(errors[0] instanceof OversizedMessageError, String(errors[0]));
    assert.deepEqual(messages, []);
    woken = next();
    emit({ jsonrpc: "2.0", method: "notifications/message", params: { level: "info", data: "small" } });
    await woken;
    assert.deepEqual(messages, [{ jsonrpc: "2.0", method: "notifications/message", params: { level: "info", data: "small" } }]);
  } finally {
    await transport.close();
  }
});

test("owes nothing for a request already answered: an answer over the bound with its id is dropped", async () => {
  const { transport, messages, errors, next } = await connect();
  try {
    await transport.send({ jsonrpc: "2.0", id: 9, method: "tools/list" });
    let woken = next();
    emit({ jsonrpc: "2.0", id: 9, result: { tools: [] } });
    await woken;
    woken = next();
    emit({ result: { text: "z".repeat(BOUND * 3) }, jsonrpc: "2.0", id: 9 });
    await woken;
    assert.equal(messages.length, 1);
    assert.ok(errors[0] instanceof OversizedMessageError, String(errors[0]));
  } finally {
    await transport.close();
  }
});
