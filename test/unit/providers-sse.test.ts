/** The SSE parser the provider streams rely on. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { parseSse, SseParser, type SseEvent } from "../../src/providers/http/sse.js";

async function parse(pieces: (string | Uint8Array)[]): Promise<SseEvent[]> {
  const bytes = (async function* () {
    for (const piece of pieces) yield typeof piece === "string" ? new TextEncoder().encode(piece) : piece;
  })();
  const out: SseEvent[] = [];
  for await (const event of parseSse(bytes)) out.push(event);
  return out;
}

test("parses named events split across chunks", async () => {
  assert.deepEqual(await parse(["event: message_st", "art\ndata: {\"a\"", ":1}\n", "\n"]), [{ event: "message_start", data: '{"a":1}' }]);
});

test("treats CRLF split between chunks as one line ending", async () => {
  assert.deepEqual(await parse(["data: x\r", "\n\r\n", "data: y\r\n\r\n"]), [
    { event: "message", data: "x" },
    { event: "message", data: "y" },
  ]);
});

test("joins multi-line data and skips comments", async () => {
  assert.deepEqual(await parse([": keep-alive\n", "data: a\ndata: b\n\n"]), [{ event: "message", data: "a\nb" }]);
});

test("drops a trailing event without its blank line", async () => {
  assert.deepEqual(await parse(["data: done\n\n", "data: partial"]), [{ event: "message", data: "done" }]);
});

test("splits many events in one chunk, with CR, LF and CRLF line endings mixed", async () => {
  assert.deepEqual(await parse(["data: a\n\ndata: b\r\rdata: c\r\n\r\nevent: e\ndata: d\n\n"]), [
    { event: "message", data: "a" },
    { event: "message", data: "b" },
    { event: "message", data: "c" },
    { event: "e", data: "d" },
  ]);
});

test("decodes a character whose bytes are split between reads", async () => {
  const text = new TextEncoder().encode("data: caf\u00e9 \u{1f600}\n\n");
  // Cut inside the two-byte é and again inside the four-byte emoji.
  assert.deepEqual(await parse([text.subarray(0, 10), text.subarray(10, 14), text.subarray(14)]), [{ event: "message", data: "caf\u00e9 \u{1f600}" }]);
});

test("drops a byte order mark at the start of the stream only", async () => {
  assert.deepEqual(await parse(["\ufeffdata: a\n\n", "data: \ufeffb\n\n"]), [
    { event: "message", data: "a" },
    { event: "message", data: "\ufeffb" },
  ]);
});

test("fails with the limit's error once the bytes read pass it", async () => {
  const bytes = (async function* () {
    for (let i = 0; i < 10; i++) yield new TextEncoder().encode(`data: ${i}\n\n`);
  })();
  const seen: string[] = [];
  await assert.rejects(
    (async () => {
      for await (const event of parseSse(bytes, { maxBytes: 20, error: () => new Error("too long") })) seen.push(event.data);
    })(),
    /too long/,
  );
  assert.deepEqual(seen, ["0", "1"]);
});

test("reads a field without a colon as an empty value, and one space after the colon only", async () => {
  assert.deepEqual(await parse(["data\n\n", "data:x\n\n", "data:  two\n\n", "event\ndata: named\n\n"]), [
    { event: "message", data: "" },
    { event: "message", data: "x" },
    { event: "message", data: " two" },
    { event: "message", data: "named" },
  ]);
});

test("ignores fields other than event and data, and an event without data", async () => {
  assert.deepEqual(await parse(["id: 7\nretry: 100\ndata: a\n\n", "event: ping\n\n", "data: b\nevents: x\ndatum: y\n\n"]), [
    { event: "message", data: "a" },
    { event: "message", data: "b" },
  ]);
});

test("joins three data lines, the empty ones too", async () => {
  assert.deepEqual(await parse(["data: a\ndata:\ndata: c\n\n"]), [{ event: "message", data: "a\n\nc" }]);
});

/** The parser's wire figures after pushing `reads` one after another: the last read's leading events that arrived as `data: <data>\n\n`, and their text. */
function wireAfter(...reads: string[]): { events: number; text: string | null } {
  const parser = new SseParser();
  for (const read of reads) parser.push(read);
  return { events: parser.wireEvents, text: parser.wireEvents > 0 ? parser.wireText(parser.wireEvents) : null };
}

test("gives a read's events as they arrived when each is one data line and a blank line", () => {
  assert.deepEqual(wireAfter('data: {"a":1}\n\ndata: {"b":2}\n\n'), { events: 2, text: 'data: {"a":1}\n\ndata: {"b":2}\n\n' });
});

test("gives only the events before a partial one at the end of a read", () => {
  assert.deepEqual(wireAfter('data: {"a":1}\n\ndata: {"b"'), { events: 1, text: 'data: {"a":1}\n\n' });
});

test("gives the leading events up to the first that is written otherwise", () => {
  assert.deepEqual(wireAfter("data: 1\n\nevent: x\ndata: 2\n\ndata: 3\n\n"), { events: 1, text: "data: 1\n\n" });
  assert.deepEqual(wireAfter("data: 1\n\n: keep-alive\ndata: 2\n\n"), { events: 1, text: "data: 1\n\n" });
  assert.deepEqual(wireAfter("data: 1\n\ndata:2\n\n"), { events: 1, text: "data: 1\n\n" });
  assert.deepEqual(wireAfter("data: 1\n\ndata: a\ndata: b\n\n"), { events: 1, text: "data: 1\n\n" });
  assert.deepEqual(wireAfter("data: 1\n\nid: 7\ndata: 2\n\n"), { events: 1, text: "data: 1\n\n" });
  assert.deepEqual(wireAfter("data: 1\n\n\ndata: 2\n\n"), { events: 1, text: "data: 1\n\n" });
});

test("gives no events of a read with carriage returns", () => {
  assert.deepEqual(wireAfter("data: 1\r\n\r\n"), { events: 0, text: null });
});

test("gives no events of a read that finishes an event an earlier read began", () => {
  assert.deepEqual(wireAfter("data: 1\n", "\ndata: 2\n\n"), { events: 0, text: null });
  assert.deepEqual(wireAfter("data: 1\n\ndata: 2", "\n\ndata: 3\n\n"), { events: 0, text: null });
});

test("gives no events of a first read that began with a byte order mark", () => {
  assert.deepEqual(wireAfter("\ufeffdata: 1\n\n"), { events: 0, text: null });
  assert.deepEqual(wireAfter("\ufeffdata: 1\n\n", "data: 2\n\n"), { events: 1, text: "data: 2\n\n" });
});

test("dispatches the last event of a body whose lines end with a lone carriage return", async () => {
  assert.deepEqual(await parse(["data: a\r\r", "data: b\r\r"]), [
    { event: "message", data: "a" },
    { event: "message", data: "b" },
  ]);
});

/** The bytes the parser gives for the last of `reads`' leading `data: <data>\n\n` events, as hex; null when it gives none. */
function wireBytesAfter(...reads: Uint8Array[]): string | null {
  const parser = new SseParser();
  for (const read of reads) parser.push(read);
  const bytes = parser.wireBytes(parser.wireEvents);
  return bytes === undefined ? null : Buffer.from(bytes).toString("hex");
}

const utf8 = (text: string): Uint8Array => new TextEncoder().encode(text);
const hex = (text: string): string => Buffer.from(text).toString("hex");

test("gives a read's own bytes for its events when the read is all of them", () => {
  const read = utf8('data: {"a":1}\n\ndata: {"b":2}\n\n');
  const parser = new SseParser();
  parser.push(read);
  assert.equal(parser.wireBytes(2), read);
});

test("gives the bytes of the events before a partial one, non-ASCII text counted in bytes", () => {
  assert.equal(wireBytesAfter(utf8('data: {"a":"\u00e9\u4e16"}\n\ndata: {"b"')), hex('data: {"a":"\u00e9\u4e16"}\n\n'));
  assert.equal(wireBytesAfter(utf8("data: 1\n\ndata: 2\n\n")), hex("data: 1\n\ndata: 2\n\n"));
});

test("gives the bytes of a read's events up to a character cut at its end", () => {
  const bytes = utf8("data: \u00e9\n\n\u00e9");
  assert.equal(wireBytesAfter(bytes.subarray(0, bytes.length - 1)), hex("data: \u00e9\n\n"));
});

test("gives no bytes for a read holding a byte the decoder replaced", () => {
  // The client would get U+FFFD's three bytes for it, as the text says, not the upstream's one.
  assert.equal(wireBytesAfter(Uint8Array.from([...utf8("data: \""), 0x80, ...utf8('"\n\n')])), null);
});

test("gives no bytes for a pushed string", () => {
  const parser = new SseParser();
  parser.push("data: 1\n\n");
  assert.equal(parser.wireEvents, 1);
  assert.equal(parser.wireBytes(1), undefined);
});
