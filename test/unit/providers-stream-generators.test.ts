/**
 * Streams iterate with generator functions created once, not per request. V8 gives every new generator
 * function its own initial map in old space, pointing back at the function; a generator created per
 * request therefore keeps the request's whole closure alive through young-generation GCs (measured in
 * `npm run bench`: streamed requests survived into old space and scavenge pauses tripled).
 */
import assert from "node:assert/strict";
import { Readable } from "node:stream";
import { test } from "node:test";
import { providerStream, type EventTranslator } from "../../src/providers/http/provider-stream.js";
import type { UpstreamResponse } from "../../src/providers/http/upstream-http.js";
import { bridgeResponsesStream } from "../../src/providers/responses-bridge/bridge.js";
import type { JsonObject, ProviderAdapter, ProviderStream } from "../../src/providers/types.js";

function upstream(text: string): UpstreamResponse {
  // The body type is undici's BodyReadable; a Readable of the same bytes is all providerStream reads.
  return { status: 200, body: Readable.from([Buffer.from(text)]) as unknown as UpstreamResponse["body"], maxBytes: 1_000_000, contentType: "text/event-stream" };
}

const passThrough: EventTranslator = async function* (events) {
  for await (const event of events) yield JSON.parse(event.data) as JsonObject;
};

async function collect(stream: AsyncIterable<JsonObject>): Promise<JsonObject[]> {
  const out: JsonObject[] = [];
  for await (const item of stream) out.push(item);
  return out;
}

test("every provider stream iterates with the same generator function", async () => {
  const a = providerStream("openai", upstream('data: {"n":1}\n\n'), undefined, passThrough, () => null);
  const b = providerStream("openai", upstream('data: {"n":2}\n\n'), undefined, passThrough, () => null);
  assert.equal(a[Symbol.asyncIterator], b[Symbol.asyncIterator]);
  assert.deepEqual(await collect(a), [{ n: 1 }]);
  assert.deepEqual(await collect(b), [{ n: 2 }]);
});

test("every bridged Responses stream iterates with the same generator function", async () => {
  const chunks: JsonObject[] = [{ id: "c1", model: "m", choices: [{ index: 0, delta: { content: "hi" }, finish_reason: "stop" }] }];
  const chat = (): ProviderStream => ({
    status: 200,
    usage: () => ({ input_tokens: 1, output_tokens: 1 }),
    async *[Symbol.asyncIterator]() {
      yield* chunks;
    },
  });
  const adapter = { chatStream: async () => chat() } as unknown as ProviderAdapter;
  const a = await bridgeResponsesStream(adapter, { model: "m", input: "hello" }, {} as never);
  const b = await bridgeResponsesStream(adapter, { model: "m", input: "hello" }, {} as never);
  assert.equal(a[Symbol.asyncIterator], b[Symbol.asyncIterator]);
  const events = await collect(a);
  assert.equal(events[0]?.["type"], "response.created");
  assert.equal(events.at(-1)?.["type"], "response.completed");
  assert.deepEqual(a.usage(), { input_tokens: 1, output_tokens: 1 });
});
