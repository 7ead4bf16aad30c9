/** The AWS event-stream decoder Bedrock's streams go through: framing across chunk boundaries, and CRC checks. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { EventStreamCodec } from "@smithy/core/event-streams";
import { decodeEventStream } from "../../src/providers/bedrock/event-stream.js";
import { exceptionFrame } from "../fixtures/mock-bedrock.js";

const codec = new EventStreamCodec(
  (bytes) => Buffer.from(bytes).toString("utf8"),
  (text) => Buffer.from(text, "utf8"),
);

function frame(type: string, payload: unknown): Uint8Array {
  return codec.encode({
    headers: { ":message-type": { type: "string", value: "event" }, ":event-type": { type: "string", value: type } },
    body: Buffer.from(JSON.stringify(payload), "utf8"),
  });
}

async function* chunked(bytes: Uint8Array, size: number): AsyncGenerator<Uint8Array> {
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}

async function decodeAll(body: AsyncIterable<Uint8Array>): Promise<{ event: string; data: string }[]> {
  const out: { event: string; data: string }[] = [];
  for await (const event of decodeEventStream(body)) out.push(event);
  return out;
}

describe("AWS event-stream decoding", () => {
  test("decodes messages split across arbitrary chunk boundaries", async () => {
    const bytes = Buffer.concat([frame("messageStart", { role: "assistant" }), frame("contentBlockDelta", { contentBlockIndex: 0, delta: { text: "hé" } })]);
    const events = await decodeAll(chunked(bytes, 7));
    assert.deepEqual(events, [
      { event: "messageStart", data: '{"role":"assistant"}' },
      { event: "contentBlockDelta", data: '{"contentBlockIndex":0,"delta":{"text":"hé"}}' },
    ]);
  });

  test("names an exception message by its exception type", async () => {
    const [event] = await decodeAll(chunked(exceptionFrame("throttlingException", "slow down"), 1024));
    assert.deepEqual(event, { event: "exception:throttlingException", data: '{"message":"slow down"}' });
  });

  test("fails on a message whose checksum does not match", async () => {
    const bytes = Buffer.from(frame("messageStop", { stopReason: "end_turn" }));
    // Flip one payload byte: the message CRC no longer matches.
    const at = bytes.length - 8;
    bytes[at] = (bytes[at] ?? 0) ^ 0xff;
    await assert.rejects(decodeAll(chunked(bytes, 1024)), /checksum/i);
  });
});
