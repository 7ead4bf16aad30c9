/** Relayed requests on an upstream transport: their answers are theirs, the client's are the client's, and cancellation and a closed connection fail them as the SDK would. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { ErrorCode, McpError, type JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { UpstreamRequests } from "../../src/mcp/relay/upstream-requests.js";

/** A transport that records what is sent, with the client's own handlers already on it. */
function fakeTransport() {
  const sent: JSONRPCMessage[] = [];
  const seenByClient: JSONRPCMessage[] = [];
  let closedForClient = false;
  const transport: Transport = {
    start: async () => undefined,
    close: async () => undefined,
    send: async (message) => void sent.push(message),
    onmessage: (message) => void seenByClient.push(message),
    onclose: () => void (closedForClient = true),
  };
  return { transport, sent, seenByClient, closedForClient: () => closedForClient };
}

describe("upstream requests", () => {
  test("a request is sent with an id of its own and answered by the response to that id", async () => {
    const fake = fakeTransport();
    const requests = UpstreamRequests.install({ transport: fake.transport });
    const answer = requests.send({ method: "tools/call", params: { name: "t" } }, new AbortController().signal);
    const [request] = fake.sent as unknown as [{ id: string; method: string; params: unknown }];
    assert.equal(typeof request.id, "string");
    assert.deepEqual({ method: request.method, params: request.params }, { method: "tools/call", params: { name: "t" } });
    fake.transport.onmessage?.({ jsonrpc: "2.0", id: 1, result: { theirs: true } });
    fake.transport.onmessage?.({ jsonrpc: "2.0", id: request.id, result: { content: [] } });
    assert.deepEqual(await answer, { content: [] });
    assert.deepEqual(fake.seenByClient, [{ jsonrpc: "2.0", id: 1, result: { theirs: true } }]);
  });

  test("an error response fails the request with its code, message and data", async () => {
    const fake = fakeTransport();
    const requests = UpstreamRequests.install({ transport: fake.transport });
    const answer = requests.send({ method: "tools/call" }, new AbortController().signal);
    const [request] = fake.sent as unknown as [{ id: string }];
    fake.transport.onmessage?.({ jsonrpc: "2.0", id: request.id, error: { code: -32602, message: "bad", data: { at: "name" } } });
    await assert.rejects(answer, (err: unknown) => err instanceof McpError && err.code === -32602 && err.message.includes("bad") && (err.data as { at?: string }).at === "name");
  });

  test("aborting the signal sends notifications/cancelled with the request's id and fails it with the reason", async () => {
    const fake = fakeTransport();
    const requests = UpstreamRequests.install({ transport: fake.transport });
    const controller = new AbortController();
    const answer = requests.send({ method: "tools/call" }, controller.signal);
    const reason = new McpError(ErrorCode.RequestTimeout, "too slow");
    controller.abort(reason);
    await assert.rejects(answer, (err: unknown) => err === reason);
    const [request, cancelled] = fake.sent as unknown as [{ id: string }, { method: string; params: { requestId: unknown } }];
    assert.equal(cancelled.method, "notifications/cancelled");
    assert.equal(cancelled.params.requestId, request.id);
    // A late answer goes to the client, which knows no such request either.
    fake.transport.onmessage?.({ jsonrpc: "2.0", id: request.id, result: {} });
    assert.equal(fake.seenByClient.length, 1);
  });

  test("a signal aborted already fails the request unsent", async () => {
    const fake = fakeTransport();
    const requests = UpstreamRequests.install({ transport: fake.transport });
    await assert.rejects(requests.send({ method: "ping" }, AbortSignal.abort("gone")), (err: unknown) => err === "gone");
    assert.equal(fake.sent.length, 0);
  });

  test("the connection closing fails every request in flight with ConnectionClosed, and the client hears of it", async () => {
    const fake = fakeTransport();
    const requests = UpstreamRequests.install({ transport: fake.transport });
    const answer = requests.send({ method: "tools/call" }, new AbortController().signal);
    fake.transport.onclose?.();
    await assert.rejects(answer, (err: unknown) => err instanceof McpError && err.code === ErrorCode.ConnectionClosed);
    assert.equal(fake.closedForClient(), true);
  });
});
