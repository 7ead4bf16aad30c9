import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { EventGate } from "../../src/mcp/event-gate.js";

/** A gate with a bound of `max` bytes, the text it let through and the ends of what it skipped. */
function gate(max: number): { passed: () => string; oversized: [string, string][]; push: (text: string) => void } {
  const pieces: Buffer[] = [];
  const oversized: [string, string][] = [];
  const eventGate = new EventGate(max, { events: (whole) => pieces.push(...whole), oversized: (head, tail) => oversized.push([head, tail]) });
  return { passed: () => Buffer.concat(pieces).toString("utf8"), oversized, push: (text) => eventGate.push(Buffer.from(text)) };
}

describe("EventGate", () => {
  test("lets each whole event through", () => {
    const g = gate(100);
    g.push("event: endpoint\ndata: /messages?s=1\n\ndata: 2\n\n");
    assert.equal(g.passed(), "event: endpoint\ndata: /messages?s=1\n\ndata: 2\n\n");
  });

  test("holds an event until its blank line, which may end in the next chunk", () => {
    const g = gate(100);
    g.push("data: 1\n");
    assert.equal(g.passed(), "");
    g.push("\ndata: 2");
    assert.equal(g.passed(), "data: 1\n\n");
    g.push("\r\n\r\n");
    assert.equal(g.passed(), "data: 1\n\ndata: 2\r\n\r\n");
  });

  test("skips an event over the bound and lets the next one through", () => {
    const g = gate(40);
    g.push(`event: message\ndata: {"result":"${"a".repeat(60)}","jsonrpc":"2.0","id":7}\n\ndata: next\n\n`);
    assert.equal(g.passed(), "data: next\n\n");
    assert.equal(g.oversized.length, 1);
    const [head, tail] = g.oversized[0]!;
    assert.match(head, /^\{"result":"a+/);
    assert.match(tail, /"jsonrpc":"2\.0","id":7\}\n\n$/);
  });

  test("skips an event that passes the bound over many chunks, keeping its first data value and its last bytes", () => {
    const g = gate(2048);
    g.push('id: 1\ndata: {"jsonrpc":"2.0","id":"a","result":{"text":"');
    for (let i = 0; i < 10; i++) g.push("b".repeat(1000));
    g.push('"}}\n\ndata: after\n\n');
    assert.equal(g.passed(), "data: after\n\n");
    const [head, tail] = g.oversized[0]!;
    assert.ok(head.startsWith('{"jsonrpc":"2.0","id":"a","result"'), head.slice(0, 60));
    assert.ok(tail.endsWith('b"}}\n\n'), tail.slice(-20));
    assert.equal(tail.length, 1024);
  });

  test("lets an event of exactly the bound through", () => {
    const event = "data: 123456\n\n";
    const g = gate(event.length);
    g.push(event);
    assert.equal(g.passed(), event);
    assert.deepEqual(g.oversized, []);
  });

  test("reports an empty head for an event over the bound with no data field in its first bytes", () => {
    const g = gate(10);
    g.push(`: ${"c".repeat(40)}\n\n`);
    assert.deepEqual(g.oversized, [["", `: ${"c".repeat(40)}\n\n`]]);
  });
});
