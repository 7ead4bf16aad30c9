/** The SSE parser the provider streams rely on. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { parseSse, type SseEvent } from "../../src/providers/http/sse.js";

async function parse(pieces: string[]): Promise<SseEvent[]> {
  const bytes = (async function* () {
    for (const piece of pieces) yield new TextEncoder().encode(piece);
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
