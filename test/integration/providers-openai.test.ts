/** The OpenAI-compatible family (openai, azure, groq, mistral, openrouter, ollama, custom) against the mock OpenAI upstream. */
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import { GatewayError } from "../../src/errors.js";
import { chunkFields, rawTextOf, wireTextOf, type WireText } from "../../src/providers/raw-event.js";
import { ProviderError } from "../../src/providers/provider-error.js";
import { createProviderAdapter } from "../../src/providers/registry.js";
import type { JsonObject, ProviderAdapter, ProviderKey } from "../../src/providers/types.js";
import { MOCK_OPENAI_MODELS, MOCK_TOOL_ARGUMENTS, startMockOpenAi, type MockUpstream } from "../fixtures/mock-openai.js";
import { startSseUpstream } from "../fixtures/sse-upstream.js";
import { eventually, providerKey } from "../helpers/provider-keys.js";

const WEATHER_TOOL = { type: "function", function: { name: "get_weather", parameters: { type: "object", properties: { location: { type: "string" } } } } };

let mock: MockUpstream;
let openai: ProviderAdapter;
const adapters: ProviderAdapter[] = [];
const key = providerKey();

function adapter(name: string, baseUrl: string | null = mock.url): ProviderAdapter {
  const created = createProviderAdapter({ name, baseUrl, keys: [] });
  adapters.push(created);
  return created;
}

async function collect(stream: AsyncIterable<JsonObject>): Promise<JsonObject[]> {
  const out: JsonObject[] = [];
  for await (const chunk of stream) out.push(chunk);
  return out;
}

/** Runs `use` against an upstream on port 0 that answers every request with these SSE data lines. */
async function withSseUpstream(data: string[], use: (url: string) => Promise<void>): Promise<void> {
  const upstream = await startSseUpstream(data);
  try {
    await use(upstream.url);
  } finally {
    await upstream.close();
  }
}

function deltas(chunks: JsonObject[]): JsonObject[] {
  return chunks.flatMap((c) => (c["choices"] as JsonObject[]).map((choice) => choice["delta"] as JsonObject));
}

async function rejectsWith(promise: Promise<unknown>, errorType: string, status: number | null, rotate: boolean): Promise<ProviderError> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof ProviderError, `expected a ProviderError, got ${String(err)}`);
    assert.equal(err.errorType, errorType);
    assert.equal(err.upstreamStatus, status);
    assert.equal(err.rotateKey, rotate);
    return err;
  }
  assert.fail("expected a rejection");
}

before(async () => {
  mock = await startMockOpenAi();
  openai = adapter("openai");
});
beforeEach(() => {
  mock.requests.length = 0;
  mock.hangStreams = false;
  mock.latencyMs = 0;
});
after(async () => {
  for (const a of adapters) await a.close();
  await mock.close();
});

describe("openai chat", () => {
  test("returns the upstream completion and its usage", async () => {
    const result = await openai.chat({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi there" }] }, { key });
    assert.equal(result.status, 200);
    const choice = (result.body["choices"] as JsonObject[])[0]!;
    assert.deepEqual(choice["message"], { role: "assistant", content: "echo: hi there", refusal: null });
    assert.deepEqual(result.usage, { input_tokens: 11, output_tokens: 3 });
  });

  test("sends the key as a bearer token to /v1/chat/completions", async () => {
    await openai.chat({ model: "gpt-4o-mini", messages: [{ role: "user", content: "x" }] }, { key });
    assert.equal(mock.last().path, "/v1/chat/completions");
    assert.equal(mock.last().headers["authorization"], "Bearer sk-test-1");
  });

  test("passes unknown request fields through unchanged and drops fallbacks", async () => {
    await openai.chat(
      { model: "gpt-4o-mini", messages: [{ role: "user", content: "x" }], seed: 42, logit_bias: { "50256": -100 }, x_vendor: { a: [1] }, fallbacks: ["anthropic/claude"] },
      { key },
    );
    const body = mock.last().body!;
    assert.equal(body["seed"], 42);
    assert.deepEqual(body["logit_bias"], { "50256": -100 });
    assert.deepEqual(body["x_vendor"], { a: [1] });
    assert.equal("fallbacks" in body, false);
  });

  test("sends the model id exactly as given", async () => {
    await openai.chat({ model: "my-org/Fine-Tuned:v2", messages: [{ role: "user", content: "x" }] }, { key });
    assert.equal(mock.last().body!["model"], "my-org/Fine-Tuned:v2");
  });

  test("returns a tool call", async () => {
    const result = await openai.chat({ model: "gpt-4o", messages: [{ role: "user", content: "weather?" }], tools: [WEATHER_TOOL] }, { key });
    const choice = (result.body["choices"] as JsonObject[])[0]!;
    assert.equal(choice["finish_reason"], "tool_calls");
    const call = ((choice["message"] as JsonObject)["tool_calls"] as JsonObject[])[0]!;
    assert.deepEqual(call["function"], { name: "get_weather", arguments: MOCK_TOOL_ARGUMENTS });
  });

  test("honours a base URL that ends in /v1", async () => {
    const withV1 = adapter("openai", `${mock.url}/v1/`);
    await withV1.chat({ model: "gpt-4o-mini", messages: [{ role: "user", content: "x" }] }, { key });
    assert.equal(mock.last().path, "/v1/chat/completions");
  });
});

describe("openai streaming", () => {
  test("streams chunks and reports usage without showing the caller a usage chunk it did not ask for", async () => {
    const stream = await openai.chatStream({ model: "gpt-4o-mini", messages: [{ role: "user", content: "one two" }], stream: true }, { key });
    const chunks = await collect(stream);
    assert.equal(deltas(chunks).map((d) => d["content"] ?? "").join(""), "echo: one two");
    assert.ok(chunks.every((c) => (c["choices"] as unknown[]).length > 0 && !("usage" in c)));
    assert.deepEqual(stream.usage(), { input_tokens: 11, output_tokens: 3 });
    assert.deepEqual(mock.last().body!["stream_options"], { include_usage: true });
  });

  test("keeps the usage chunk when the caller asked for it", async () => {
    const stream = await openai.chatStream({ model: "m", messages: [{ role: "user", content: "a" }], stream: true, stream_options: { include_usage: true } }, { key });
    const chunks = await collect(stream);
    const last = chunks[chunks.length - 1]!;
    assert.deepEqual(last["choices"], []);
    assert.equal((last["usage"] as JsonObject)["prompt_tokens"], 11);
  });

  test("with text-only chunks, passes plain chunks unparsed and still reads the usage it keeps from the caller", async () => {
    const stream = await openai.chatStream({ model: "gpt-4o-mini", messages: [{ role: "user", content: "one two" }], stream: true }, { key, textOnlyChunks: true });
    const chunks = await collect(stream);
    assert.ok(chunks.every((c) => rawTextOf(c) !== undefined));
    // Unparsed: a text-only chunk has no fields of its own.
    assert.ok(chunks.every((c) => Object.keys(c).length === 0));
    const fields = chunks.map((c) => chunkFields(c) ?? {});
    assert.equal(deltas(fields).map((d) => d["content"] ?? "").join(""), "echo: one two");
    assert.ok(fields.every((c) => !("usage" in c)));
    assert.deepEqual(stream.usage(), { input_tokens: 11, output_tokens: 3 });
  });

  test("with text-only chunks, passes chunks whose usage is null unparsed, as OpenAI sends them once usage is asked for", async () => {
    const chunk = (content: string) => JSON.stringify({ id: "c", object: "chat.completion.chunk", choices: [{ index: 0, delta: { content } }], usage: null });
    const usage = JSON.stringify({ id: "c", object: "chat.completion.chunk", choices: [], usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 } });
    await withSseUpstream([chunk("a"), chunk("b"), usage, "[DONE]"], async (url) => {
      const stream = await adapter("openai", url).chatStream({ model: "m", messages: [{ role: "user", content: "a" }], stream: true }, { key, textOnlyChunks: true });
      const chunks = await collect(stream);
      assert.deepEqual(chunks.map((c) => rawTextOf(c)), [chunk("a"), chunk("b")]);
      assert.ok(chunks.every((c) => Object.keys(c).length === 0));
      assert.deepEqual(stream.usage(), { input_tokens: 5, output_tokens: 2 });
    });
  });

  test("with text-only chunks, still fails on an error the upstream sends mid-stream", async () => {
    const part = JSON.stringify({ id: "c", object: "chat.completion.chunk", choices: [{ index: 0, delta: { content: "part" } }] });
    await withSseUpstream([part, JSON.stringify({ error: { message: "overloaded" } })], async (url) => {
      const stream = await adapter("openai", url).chatStream({ model: "m", messages: [{ role: "user", content: "a" }], stream: true }, { key, textOnlyChunks: true });
      const seen: JsonObject[] = [];
      await assert.rejects(async () => {
        for await (const chunk of stream) seen.push(chunk);
      }, /failed mid-stream: overloaded/);
      assert.equal(seen.length, 1);
    });
  });

  test("with text-only chunks, parses a chunk sent as several data lines", async () => {
    // One event whose JSON spans two `data:` lines: one `data:` line out cannot carry its text as it came.
    await withSseUpstream(['{"id":"c","object":"chat.completion.chunk",\ndata: "choices":[{"index":0,"delta":{"content":"part"}}]}', "[DONE]"], async (url) => {
      const stream = await adapter("openai", url).chatStream({ model: "m", messages: [{ role: "user", content: "a" }], stream: true }, { key, textOnlyChunks: true });
      const chunks = await collect(stream);
      assert.equal(chunks.length, 1);
      assert.deepEqual(deltas(chunks), [{ content: "part" }]);
    });
  });

  test("hands over the events of one network read as one batch", async () => {
    const part = JSON.stringify({ id: "c", object: "chat.completion.chunk", choices: [{ index: 0, delta: { content: "part" } }] });
    // One write of three small events: one read on loopback.
    await withSseUpstream([part, part, part, "[DONE]"], async (url) => {
      const stream = await adapter("openai", url).chatStream({ model: "m", messages: [{ role: "user", content: "a" }], stream: true }, { key, textOnlyChunks: true });
      assert.ok(stream.batches, "an SSE chat stream offers batches");
      const sizes: number[] = [];
      for await (const batch of stream.batches()) sizes.push(batch.length);
      assert.deepEqual(sizes, [3]);
    });
  });

  test("marks a batch's leading unchanged chunks with the text they arrived as, up to the first it drops", async () => {
    const part = JSON.stringify({ id: "c", object: "chat.completion.chunk", choices: [{ index: 0, delta: { content: "part" } }] });
    // One read: two plain chunks, then the usage-only chunk the caller did not ask for (dropped), then the end.
    const usage = JSON.stringify({ id: "c", object: "chat.completion.chunk", choices: [], usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 } });
    await withSseUpstream([part, part, usage, "[DONE]"], async (url) => {
      const stream = await adapter("openai", url).chatStream({ model: "m", messages: [{ role: "user", content: "a" }], stream: true }, { key, textOnlyChunks: true });
      assert.ok(stream.batches, "an SSE chat stream offers batches");
      const marks: (WireText | undefined)[] = [];
      for await (const batch of stream.batches()) marks.push(wireTextOf(batch));
      const text = `data: ${part}\n\ndata: ${part}\n\n`;
      // The bytes are the read's own, up to the dropped chunk.
      assert.deepEqual(
        marks.map((mark) => mark && { ...mark, bytes: mark.bytes && Buffer.from(mark.bytes).toString("latin1") }),
        [{ text, count: 2, bytes: text }],
      );
    });
  });

  test("marks no chunk of a batch whose first chunk was changed", async () => {
    const usage = JSON.stringify({ id: "c", object: "chat.completion.chunk", choices: [{ index: 0, delta: { content: "last" } }], usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 } });
    await withSseUpstream([usage, "[DONE]"], async (url) => {
      const stream = await adapter("openai", url).chatStream({ model: "m", messages: [{ role: "user", content: "a" }], stream: true }, { key, textOnlyChunks: true });
      assert.ok(stream.batches, "an SSE chat stream offers batches");
      const marks: (WireText | undefined)[] = [];
      for await (const batch of stream.batches()) marks.push(wireTextOf(batch));
      // The caller did not ask for usage, so the chunk goes out without it: not as it arrived.
      assert.deepEqual(marks, [undefined]);
    });
  });

  test("in batches, hands over the events before a failing one, then fails", async () => {
    const part = JSON.stringify({ id: "c", object: "chat.completion.chunk", choices: [{ index: 0, delta: { content: "part" } }] });
    await withSseUpstream([part, part, JSON.stringify({ error: { message: "overloaded" } })], async (url) => {
      const stream = await adapter("openai", url).chatStream({ model: "m", messages: [{ role: "user", content: "a" }], stream: true }, { key, textOnlyChunks: true });
      const batches = stream.batches?.();
      assert.ok(batches, "an SSE chat stream offers batches");
      const seen: number[] = [];
      await assert.rejects(async () => {
        for await (const batch of batches) seen.push(batch.length);
      }, /failed mid-stream: overloaded/);
      assert.deepEqual(seen, [2]);
    });
  });

  test("streams a tool call with its arguments split across chunks", async () => {
    const stream = await openai.chatStream({ model: "m", messages: [{ role: "user", content: "w" }], tools: [WEATHER_TOOL], stream: true }, { key });
    const calls = deltas(await collect(stream)).flatMap((d) => (d["tool_calls"] as JsonObject[] | undefined) ?? []);
    assert.equal((calls[0]!["function"] as JsonObject)["name"], "get_weather");
    assert.equal(calls.map((c) => (c["function"] as JsonObject)["arguments"]).join(""), MOCK_TOOL_ARGUMENTS);
  });

  test("aborting the signal mid-stream frees the upstream request", async () => {
    mock.hangStreams = true;
    const controller = new AbortController();
    const stream = await openai.chatStream({ model: "m", messages: [{ role: "user", content: "a b c" }], stream: true }, { key, signal: controller.signal });
    const seen: JsonObject[] = [];
    await assert.rejects(async () => {
      for await (const chunk of stream) {
        seen.push(chunk);
        if (seen.length === 2) controller.abort();
      }
    });
    assert.ok(await eventually(() => mock.abortedStreams >= 1 && mock.openStreams === 0), "the mock saw the stream closed early");
  });

  test("breaking out of the loop frees the upstream request", async () => {
    mock.hangStreams = true;
    const before = mock.abortedStreams;
    const stream = await openai.chatStream({ model: "m", messages: [{ role: "user", content: "a b c" }], stream: true }, { key });
    for await (const chunk of stream) {
      if ((chunk["choices"] as JsonObject[])[0]?.["delta"]) break;
    }
    assert.ok(await eventually(() => mock.abortedStreams === before + 1 && mock.openStreams === 0));
  });
});

describe("openai errors", () => {
  const call = () => openai.chat({ model: "m", messages: [{ role: "user", content: "x" }] }, { key });

  test("maps 429 to provider_rate_limited and asks to rotate the key", async () => {
    mock.failNext(429, "Rate limit reached for requests");
    const err = await rejectsWith(call(), "provider_rate_limited", 429, true);
    assert.match(err.message, /Rate limit reached for requests/);
  });

  test("maps 401 to provider_auth and asks to rotate the key", async () => {
    mock.failNext(401, "Incorrect API key provided");
    await rejectsWith(call(), "provider_auth", 401, true);
  });

  test("maps 402 to provider_payment and asks to rotate the key", async () => {
    mock.failNext(402, "Insufficient credits");
    await rejectsWith(call(), "provider_payment", 402, true);
  });

  test("maps 400 to provider_bad_request without rotating", async () => {
    mock.failNext(400, "Invalid value for messages");
    await rejectsWith(call(), "provider_bad_request", 400, false);
  });

  test("maps 500 to provider_unavailable without rotating", async () => {
    mock.failNext(500, "The server had an error");
    await rejectsWith(call(), "provider_unavailable", 500, false);
  });

  test("a streaming call fails before any chunk when the upstream answers 429", async () => {
    mock.failNext(429, "slow down");
    await rejectsWith(openai.chatStream({ model: "m", messages: [], stream: true }, { key }), "provider_rate_limited", 429, true);
  });

  test("maps a refused connection to provider_unavailable", async () => {
    const closed = adapter("openai", "http://127.0.0.1:1");
    await rejectsWith(closed.chat({ model: "m", messages: [] }, { key }), "provider_unavailable", null, false);
  });

  test("maps a slow upstream to provider_timeout", async () => {
    mock.latencyMs = 500;
    await rejectsWith(openai.chat({ model: "m", messages: [] }, { key, timeoutMs: 50 }), "provider_timeout", null, false);
  });
});

describe("openai responses and models", () => {
  test("returns a Responses API answer with usage", async () => {
    const result = await openai.responses({ model: "gpt-4o", input: "hello", store: false }, { key });
    assert.equal(result.body["object"], "response");
    assert.deepEqual(result.usage, { input_tokens: 7, output_tokens: 2 });
    assert.equal(mock.last().path, "/v1/responses");
    assert.equal(mock.last().body!["store"], false);
  });

  test("streams Responses events and reads usage from response.completed", async () => {
    const stream = await openai.responsesStream({ model: "gpt-4o", input: "hello", stream: true }, { key });
    const events = await collect(stream);
    assert.equal(events[0]!["type"], "response.created");
    assert.equal(events[events.length - 1]!["type"], "response.completed");
    assert.deepEqual(stream.usage(), { input_tokens: 7, output_tokens: 2 });
  });

  test("lists the upstream's models", async () => {
    const models = await openai.listModels(key);
    assert.deepEqual(models.map((m) => m.id), MOCK_OPENAI_MODELS);
  });
});

describe("azure", () => {
  const azureKey: ProviderKey = providerKey({
    value: "azure-secret",
    azure: { endpoint: "", deployments: { "gpt-4o": "prod-gpt4o" }, apiVersion: "2024-10-21" },
  });

  test("posts to the deployment URL with api-version and the api-key header", async () => {
    const azure = adapter("azure", null);
    const k = { ...azureKey, azure: { ...azureKey.azure!, endpoint: `${mock.url}/` } };
    await azure.chat({ model: "gpt-4o", messages: [{ role: "user", content: "x" }], seed: 1 }, { key: k });
    const req = mock.last();
    assert.equal(req.path, "/openai/deployments/prod-gpt4o/chat/completions");
    assert.deepEqual(req.query, { "api-version": "2024-10-21" });
    assert.equal(req.headers["api-key"], "azure-secret");
    assert.equal(req.headers["authorization"], undefined);
    assert.equal(req.body!["seed"], 1);
  });

  test("uses the model id as the deployment when the key maps none", async () => {
    const azure = adapter("azure");
    await azure.chat({ model: "gpt-4o-mini", messages: [] }, { key: azureKey });
    assert.equal(mock.last().path, "/openai/deployments/gpt-4o-mini/chat/completions");
  });

  test("streams from the deployment URL", async () => {
    const azure = adapter("azure");
    const chunks = await collect(await azure.chatStream({ model: "gpt-4o", messages: [{ role: "user", content: "hey" }], stream: true }, { key: azureKey }));
    assert.equal(deltas(chunks).map((d) => d["content"] ?? "").join(""), "echo: hey");
    assert.equal(mock.last().path, "/openai/deployments/prod-gpt4o/chat/completions");
  });

  test("lists the key's deployments as its models", async () => {
    const azure = adapter("azure");
    assert.deepEqual((await azure.listModels(azureKey)).map((m) => m.id), ["gpt-4o"]);
  });

  test("refuses a key without azure_key_config", async () => {
    const azure = adapter("azure");
    await assert.rejects(azure.chat({ model: "m", messages: [] }, { key }), (err: unknown) => err instanceof GatewayError && /azure_key_config/.test(err.message));
  });
});

describe("the rest of the family", () => {
  for (const name of ["groq", "mistral", "openrouter", "ollama", "custom", "my-vllm"]) {
    test(`${name} honours base_url and sends the request through unchanged`, async () => {
      const a = adapter(name);
      const result = await a.chat({ model: "some/model", messages: [{ role: "user", content: "hi" }], top_k: 3 }, { key });
      assert.equal((result.body["choices"] as JsonObject[]).length, 1);
      assert.equal(mock.last().path, "/v1/chat/completions");
      assert.equal(mock.last().body!["top_k"], 3);
      assert.equal(mock.last().headers["authorization"], "Bearer sk-test-1");
    });
  }

  test("ollama sends no authorization header for an empty key", async () => {
    const a = adapter("ollama");
    await a.chat({ model: "llama3", messages: [] }, { key: providerKey({ value: "" }) });
    assert.equal(mock.last().headers["authorization"], undefined);
  });

  test("a custom provider without a base URL is refused", () => {
    assert.throws(() => createProviderAdapter({ name: "my-vllm", baseUrl: null, keys: [] }), /network_config\.base_url/);
  });
});
