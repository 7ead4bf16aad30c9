import assert from "node:assert/strict";
import { test } from "node:test";
import { PendingRequests } from "../../src/mcp/pending-requests.js";

const HEAD = '{"jsonrpc":"2.0","id":4,"result":{"content":[{"text":"xxx';
const TAIL = 'xxx"}]}}';

test("owes a pending request an internal error naming its method and the bound", () => {
  const pending = new PendingRequests();
  pending.sent({ jsonrpc: "2.0", id: 4, method: "tools/call", params: {} });
  const owed = pending.owedFor(HEAD, TAIL, 100);
  assert.deepEqual(owed, {
    jsonrpc: "2.0",
    id: 4,
    error: { code: -32603, message: "the upstream MCP server's answer to tools/call is larger than 100 bytes, the most one message may take; it was dropped" },
  });
  assert.equal(pending.owedFor(HEAD, TAIL, 100), undefined, "owed once");
});

test("owes nothing for a request already answered", () => {
  const pending = new PendingRequests();
  pending.sent({ jsonrpc: "2.0", id: 4, method: "tools/call", params: {} });
  pending.received({ jsonrpc: "2.0", id: 4, result: {} });
  assert.equal(pending.owedFor(HEAD, TAIL, 100), undefined);
});

test("owes nothing for a request the client cancelled", () => {
  const pending = new PendingRequests();
  pending.sent({ jsonrpc: "2.0", id: 4, method: "tools/call", params: {} });
  pending.sent({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 4 } });
  assert.equal(pending.owedFor(HEAD, TAIL, 100), undefined);
});

test("owes nothing for a message that is not an answer", () => {
  const pending = new PendingRequests();
  pending.sent({ jsonrpc: "2.0", id: 4, method: "tools/call", params: {} });
  assert.equal(pending.owedFor('{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"xx', 'xx"}}', 100), undefined);
});
