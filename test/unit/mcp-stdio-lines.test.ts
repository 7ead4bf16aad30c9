import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { KEPT_END_BYTES } from "../../src/mcp/message-pieces.js";
import { LineReader } from "../../src/mcp/stdio-lines.js";

/** A reader with a bound of `max` bytes and what it handed on. */
function reader(max: number): { lines: string[]; oversized: [string, string][]; push: (text: string | Buffer) => void } {
  const lines: string[] = [];
  const oversized: [string, string][] = [];
  const lineReader = new LineReader(max, { line: (text) => lines.push(text), oversized: (head, tail) => oversized.push([head, tail]) });
  return { lines, oversized, push: (text) => lineReader.push(Buffer.isBuffer(text) ? text : Buffer.from(text)) };
}

describe("LineReader", () => {
  test("hands on each line of a chunk without its line end", () => {
    const r = reader(100);
    r.push('{"a":1}\n{"b":2}\r\n');
    assert.deepEqual(r.lines, ['{"a":1}', '{"b":2}']);
  });

  test("joins a line split across chunks, a multi-byte character included", () => {
    const r = reader(100);
    const bytes = Buffer.from('{"text":"é"}\n');
    r.push(bytes.subarray(0, 10));
    assert.deepEqual(r.lines, []);
    r.push(bytes.subarray(10));
    assert.deepEqual(r.lines, ['{"text":"é"}']);
  });

  test("keeps a line of exactly the bound", () => {
    const r = reader(10);
    r.push(`${"x".repeat(10)}\n`);
    assert.deepEqual(r.lines, ["x".repeat(10)]);
    assert.deepEqual(r.oversized, []);
  });

  test("skips a line over the bound to its newline and goes on with the next", () => {
    const r = reader(10);
    r.push("x".repeat(6));
    r.push("y".repeat(6));
    r.push("z\nnext\n");
    assert.deepEqual(r.lines, ["next"]);
    // The head is what had arrived when the line passed the bound; the tail runs to its end.
    assert.deepEqual(r.oversized, [["xxxxxxyyyyyy", "xxxxxxyyyyyyz"]]);
  });

  test("keeps only the first and last bytes of a line over the bound", () => {
    const r = reader(KEPT_END_BYTES * 2);
    const line = `{"result":"${"a".repeat(KEPT_END_BYTES * 4)}","id":7}`;
    for (let at = 0; at < line.length; at += 100) r.push(line.slice(at, at + 100));
    r.push("\n");
    const [head, tail] = r.oversized[0]!;
    assert.equal(head, line.slice(0, KEPT_END_BYTES));
    assert.equal(tail, line.slice(-KEPT_END_BYTES));
  });
});
