/**
 * The stdio client transport against real child processes: small node scripts that read the gateway's
 * lines and write their own, with a bound of a few hundred bytes on one message.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { ChildProcessTransport } from "../../src/mcp/stdio-transport.js";
import { createLogger } from "../../src/telemetry/logger.js";

const BOUND = 200;

/**
 * A child that answers every request line with its result written first (as the TypeScript SDK orders an
 * answer's members): twice the bound in letters for the method "big", else a small one. To the notification
 * "notify-big" it sends a notification over the bound; other notifications it ignores. Before answering the
 * method "noisy" it writes a line that is not JSON.
 */
const ANSWERING = `
const readline = require("node:readline");
readline.createInterface({ input: process.stdin }).on("line", (line) => {
  const request = JSON.parse(line);
  if (request.id === undefined && request.method !== "notify-big") return;
  if (request.method === "noisy") process.stdout.write("starting up, not a message\\n");
  if (request.method === "notify-big") {
    process.stdout.write(JSON.stringify({ method: "notifications/message", params: { data: "n".repeat(${BOUND * 2}) }, jsonrpc: "2.0" }) + "\\n");
    return;
  }
  const text = request.method === "big" ? "x".repeat(${BOUND * 2}) : "ok";
  process.stdout.write(JSON.stringify({ result: { text }, jsonrpc: "2.0", id: request.id }) + "\\n");
});
`;

/** A started transport over the answering child, with what it received and reported. */
async function connected(): Promise<{ transport: ChildProcessTransport; messages: JSONRPCMessage[]; errors: Error[] }> {
  const transport = new ChildProcessTransport({ command: process.execPath, args: ["-e", ANSWERING], env: { PATH: process.env["PATH"] ?? "" } }, createLogger({ level: "silent" }), BOUND);
  const messages: JSONRPCMessage[] = [];
  const errors: Error[] = [];
  transport.onmessage = (message) => messages.push(message);
  transport.onerror = (err) => errors.push(err);
  await transport.start();
  return { transport, messages, errors };
}

/** Resolves once `messages` holds `count` messages. */
async function received(messages: JSONRPCMessage[], count: number): Promise<void> {
  for (let i = 0; i < 500 && messages.length < count; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  assert.equal(messages.length, count, JSON.stringify(messages));
}

describe("the stdio transport's bound on one message", () => {
  test("answers the pending request whose answer passed the bound with an error naming the bound", async () => {
    const { transport, messages } = await connected();
    try {
      await transport.send({ jsonrpc: "2.0", id: 3, method: "big" });
      await received(messages, 1);
      const answer = messages[0] as { id: number; error: { code: number; message: string } };
      assert.equal(answer.id, 3);
      assert.equal(answer.error.code, -32603);
      assert.match(answer.error.message, new RegExp(`answer to big is larger than ${BOUND} bytes`));
    } finally {
      await transport.close();
    }
  });

  test("goes on reading the child's next answers after one over the bound", async () => {
    const { transport, messages } = await connected();
    try {
      await transport.send({ jsonrpc: "2.0", id: 1, method: "big" });
      await transport.send({ jsonrpc: "2.0", id: 2, method: "small" });
      await received(messages, 2);
      assert.deepEqual(messages[1], { result: { text: "ok" }, jsonrpc: "2.0", id: 2 });
    } finally {
      await transport.close();
    }
  });

  test("reports and drops a message over the bound that answers no request, and reads the next", async () => {
    const { transport, messages, errors } = await connected();
    try {
      await transport.send({ jsonrpc: "2.0", method: "notify-big" });
      await transport.send({ jsonrpc: "2.0", id: 4, method: "small" });
      await received(messages, 1);
      assert.deepEqual(messages[0], { result: { text: "ok" }, jsonrpc: "2.0", id: 4 });
      assert.equal(errors.length, 1);
      assert.match(errors[0]!.message, new RegExp(`larger than ${BOUND} bytes`));
    } finally {
      await transport.close();
    }
  });

  test("owes nothing to a request that was cancelled before its answer passed the bound", async () => {
    const { transport, messages, errors } = await connected();
    try {
      await transport.send({ jsonrpc: "2.0", id: 6, method: "big" });
      // Sent before the child's answer can be read: reading it takes a turn of the event loop.
      await transport.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 6 } });
      await transport.send({ jsonrpc: "2.0", id: 7, method: "small" });
      await received(messages, 1);
      assert.equal((messages[0] as { id: number }).id, 7);
      assert.equal(errors.length, 1);
    } finally {
      await transport.close();
    }
  });
});

test("reports a line that is not a JSON-RPC message and reads the next", async () => {
  const { transport, messages, errors } = await connected();
  try {
    await transport.send({ jsonrpc: "2.0", id: 8, method: "noisy" });
    await received(messages, 1);
    assert.deepEqual(messages[0], { result: { text: "ok" }, jsonrpc: "2.0", id: 8 });
    assert.equal(errors.length, 1);
  } finally {
    await transport.close();
  }
});

test("reports the child's exit through onclose and keeps its pid", async () => {
  const transport = new ChildProcessTransport({ command: process.execPath, args: ["-e", "process.exit(0)"], env: {} }, createLogger({ level: "silent" }));
  const closed = new Promise<void>((resolve) => (transport.onclose = resolve));
  await transport.start();
  await closed;
  assert.equal(typeof transport.childPid, "number");
});
