/** The chat endpoint's stream writer and the text a batch of chunks arrived in (wireTextOf). */
import assert from "node:assert/strict";
import { once } from "node:events";
import http from "node:http";
import { test } from "node:test";
import type { ChatOutcome, ChatService } from "../../src/inference/calls.js";
import { forgetRawText, withRawText, withWireText } from "../../src/providers/raw-event.js";
import type { JsonObject } from "../../src/providers/types.js";
import { createChatCompletionsHandler } from "../../src/server/v1/chat-completions.js";
import { createLogger } from "../../src/telemetry/logger.js";

/** The body a chat completion request streaming `batches` answers with, through the real handler on port 0. */
async function streamed(batches: JsonObject[][]): Promise<string> {
  const chat: ChatService = {
    complete: async (): Promise<ChatOutcome> => ({
      kind: "stream",
      chunks: {
        async *[Symbol.asyncIterator]() {
          for (const batch of batches) yield* batch;
        },
        async *batches() {
          yield* batches;
        },
      },
    }),
    countTokens: async () => ({}),
    refuse: () => undefined,
  };
  const handle = createChatCompletionsHandler({ chat, maxBodyBytes: 1 << 20, logger: createLogger({ level: "silent" }) });
  const server = http.createServer((req, res) => void handle(req, res));
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  try {
    const address = server.address();
    assert.ok(address !== null && typeof address === "object");
    const res = await fetch(`http://127.0.0.1:${address.port}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "a" }], stream: true }),
    });
    assert.equal(res.status, 200);
    return await res.text();
  } finally {
    server.close();
  }
}

/** A chunk parsed from `text` and marked with it, as a provider's stream hands it over. */
function arrived(text: string): JsonObject {
  return withRawText(JSON.parse(text) as JsonObject, text);
}

// The marks below give the read's text spaced otherwise than the chunks' own, which a provider's stream never
// does, so that the answer shows which of the two went out.

test("sends a batch's marked leading chunks as the text they arrived in, then frames the rest", async () => {
  const batch = [arrived('{"n":1}'), arrived('{"n":2}'), { n: 3 }];
  withWireText(batch, 'data: {"n": 1}\n\ndata: {"n": 2}\n\n', 2);
  assert.equal(await streamed([batch]), 'data: {"n": 1}\n\ndata: {"n": 2}\n\ndata: {"n":3}\n\ndata: [DONE]\n\n');
});

test("frames a marked batch again when one of its chunks was changed since it arrived", async () => {
  const changed = arrived('{"n":1}');
  forgetRawText(changed);
  changed["n"] = 9;
  const batch = [changed, arrived('{"n":2}')];
  withWireText(batch, 'data: {"n": 1}\n\ndata: {"n": 2}\n\n', 2);
  assert.equal(await streamed([batch]), 'data: {"n":9}\n\ndata: {"n":2}\n\ndata: [DONE]\n\n');
});

test("sends a batch whose chunks all arrived together unchanged as the bytes they arrived in", async () => {
  const batch = [arrived('{"n":1}'), arrived('{"n":2}')];
  withWireText(batch, 'data: {"n": 1}\n\ndata: {"n": 2}\n\n', 2, Buffer.from('data: {"n":  1}\n\ndata: {"n":  2}\n\n'));
  assert.equal(await streamed([batch]), 'data: {"n":  1}\n\ndata: {"n":  2}\n\ndata: [DONE]\n\n');
});

test("sends a batch's marked leading chunks as their text, not their bytes, when more chunks follow them", async () => {
  const batch = [arrived('{"n":1}'), { n: 2 }];
  withWireText(batch, 'data: {"n": 1}\n\n', 1, Buffer.from('data: {"n":  1}\n\n'));
  assert.equal(await streamed([batch]), 'data: {"n": 1}\n\ndata: {"n":2}\n\ndata: [DONE]\n\n');
});
