/**
 * The Anthropic Messages endpoints under /anthropic through the real app and the official
 * `@anthropic-ai/sdk`, against the mock Anthropic upstream (the request forwarded as is) and the mock
 * OpenAI one (translated to chat completions and back): messages, streams with their event sequence,
 * a tool round trip, count_tokens, governance refusals and bad input in Anthropic's error envelope.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import Anthropic from "@anthropic-ai/sdk";
import { ANTHROPIC_VERSION } from "../../src/providers/anthropic/adapter.js";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { MOCK_TOOL_INPUT, startMockAnthropic } from "../fixtures/mock-anthropic.js";
import { MOCK_REASONING, startMockOpenAi, type MockUpstream } from "../fixtures/mock-openai.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { parseExposition, total, type Sample } from "../helpers/exposition.js";
import { fileKey, rejection } from "../helpers/inference.js";
import { eventually } from "../helpers/provider-keys.js";

const KEY = "sk-gw-coder";
const BROKE = "sk-gw-broke";
const SLOW = "sk-gw-slow";
const WEATHER_TOOL = {
  name: "get_weather",
  description: "Weather of a city",
  input_schema: { type: "object" as const, properties: { location: { type: "string" } }, required: ["location"] },
};
const PNG_BASE64 = "iVBORw0KGgo=";

let openai: MockUpstream;
let anthropic: MockUpstream;
let app: TestApp;

function client(options: { apiKey?: string | null; authToken?: string } = {}): Anthropic {
  return new Anthropic({ apiKey: options.apiKey === undefined ? KEY : options.apiKey, authToken: options.authToken ?? null, baseURL: `${app.url}/anthropic`, maxRetries: 0 });
}

/** The API error a request must fail with; fails the test when it succeeds. */
function refusal(promise: Promise<unknown>): Promise<InstanceType<typeof Anthropic.APIError>> {
  return rejection(promise, Anthropic.APIError);
}

/** The Anthropic envelope's error type of a refusal. */
function errorType(err: InstanceType<typeof Anthropic.APIError>): unknown {
  const body = err.error as { type?: unknown; error?: { type?: unknown } } | undefined;
  assert.equal(body?.type, "error");
  return body?.error?.type;
}

/** Event types with each run of content_block_delta folded into one. */
function folded(types: readonly string[]): string[] {
  return types.filter((type, i) => type !== "content_block_delta" || types[i - 1] !== "content_block_delta");
}

function textOf(message: Anthropic.Message): string {
  return message.content.map((block) => (block.type === "text" ? block.text : "")).join("");
}

async function scrape(): Promise<Sample[]> {
  const res = await fetch(`${app.url}/metrics`);
  return parseExposition(await res.text());
}

/**
 * Both mocks as providers (with `network` added to each one's network_config), and the keys: `coder` allowed
 * both, `broke` and `slow` with a budget and a token limit one request spends.
 */
function inferenceOptions(network: Record<string, unknown> = {}) {
  return inferenceOptionsFromFile(
    {
      openai: { keys: [fileKey("oa")], network_config: { base_url: openai.url, ...network } },
      anthropic: { keys: [fileKey("an")], network_config: { base_url: anthropic.url, ...network } },
    },
    [
      {
        id: "vk-coder",
        name: "coder",
        value: KEY,
        provider_configs: [
          { provider: "anthropic", allowed_models: ["claude-sonnet-4-5"], key_ids: ["*"], weight: 1 },
          { provider: "openai", allowed_models: ["gpt-4o-mini"], key_ids: ["*"], weight: 1 },
        ],
      },
      {
        id: "vk-broke",
        name: "broke",
        value: BROKE,
        provider_configs: [{ provider: "openai", allowed_models: ["gpt-4o-mini"], key_ids: ["*"], weight: 1, budgets: [{ max_limit: 0.000000001, reset_duration: "1h" }] }],
      },
      {
        id: "vk-slow",
        name: "slow",
        value: SLOW,
        provider_configs: [{ provider: "openai", allowed_models: ["gpt-4o-mini"], key_ids: ["*"], weight: 1, rate_limit: { token_max_limit: 1, token_reset_duration: "1h" } }],
      },
    ],
  );
}

before(async () => {
  openai = await startMockOpenAi();
  anthropic = await startMockAnthropic();
  app = await startApp({ inference: inferenceOptions() });
});

after(async () => {
  await app?.stop();
  await openai?.close();
  await anthropic?.close();
});

for (const [provider, model] of [
  ["anthropic", "anthropic/claude-sonnet-4-5"],
  ["openai", "openai/gpt-4o-mini"],
] as const) {
  describe(`reaching ${provider}`, () => {
    const upstream = (): MockUpstream => (provider === "anthropic" ? anthropic : openai);

    test("answers a message with text, stop reason and usage", async () => {
      const message = await client().messages.create({ model, max_tokens: 100, messages: [{ role: "user", content: "hello there" }] });
      assert.equal(message.type, "message");
      assert.equal(message.role, "assistant");
      assert.equal(textOf(message), "echo: hello there");
      assert.equal(message.stop_reason, "end_turn");
      assert.ok(message.usage.input_tokens > 0);
      assert.ok(message.usage.output_tokens > 0);
    });

    test("streams with Anthropic's event sequence and the stream helper's final message", async () => {
      const stream = client().messages.stream({ model, max_tokens: 100, messages: [{ role: "user", content: "one two three" }] });
      const types: string[] = [];
      for await (const event of stream) types.push(event.type);
      const final = await stream.finalMessage();
      assert.equal(textOf(final), "echo: one two three");
      assert.equal(final.stop_reason, "end_turn");
      assert.ok(final.usage.output_tokens > 0);
      // The SDK hands out every event but ping; consecutive deltas folded into one entry.
      assert.deepEqual(folded(types), ["message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"]);
    });

    test("sends every SSE event under an event line naming its type, ping included", async () => {
      const res = await fetch(`${app.url}/anthropic/v1/messages`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": KEY },
        body: JSON.stringify({ model, max_tokens: 100, stream: true, messages: [{ role: "user", content: "raw events" }] }),
      });
      assert.equal(res.headers.get("content-type"), "text/event-stream");
      const events = (await res.text()).split("\n\n").filter((frame) => frame !== "");
      const types = events.map((frame) => {
        const [eventLine, dataLine] = frame.split("\n");
        const type = eventLine?.replace(/^event: /, "");
        assert.equal((JSON.parse(dataLine?.replace(/^data: /, "") ?? "") as { type?: string }).type, type);
        return type ?? "";
      });
      assert.deepEqual(folded(types), ["message_start", "ping", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"]);
    });

    test("round-trips a tool: tool_use first, then the answer to the tool_result", async () => {
      const messages: Anthropic.MessageParam[] = [{ role: "user", content: "weather in Paris?" }];
      const first = await client().messages.create({ model, max_tokens: 100, tools: [WEATHER_TOOL], messages });
      assert.equal(first.stop_reason, "tool_use");
      const use = first.content.find((block) => block.type === "tool_use");
      assert.ok(use && use.type === "tool_use");
      assert.equal(use.name, "get_weather");
      assert.deepEqual(use.input, JSON.parse(MOCK_TOOL_INPUT));
      messages.push({ role: "assistant", content: first.content }, { role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: "sunny" }] });
      const second = await client().messages.create({ model, max_tokens: 100, tools: [WEATHER_TOOL], messages });
      assert.equal(textOf(second), "tool said: sunny");
      assert.equal(second.stop_reason, "end_turn");
    });

    test("streams a tool use as input_json_delta events", async () => {
      const stream = client().messages.stream({ model, max_tokens: 100, tools: [WEATHER_TOOL], messages: [{ role: "user", content: "weather?" }] });
      const deltas: string[] = [];
      stream.on("streamEvent", (event) => {
        if (event.type === "content_block_delta" && event.delta.type === "input_json_delta") deltas.push(event.delta.partial_json);
      });
      const final = await stream.finalMessage();
      assert.equal(final.stop_reason, "tool_use");
      assert.equal(deltas.join(""), MOCK_TOOL_INPUT);
      const use = final.content.find((block) => block.type === "tool_use");
      assert.deepEqual(use?.type === "tool_use" ? use.input : null, JSON.parse(MOCK_TOOL_INPUT));
    });

    test("accepts the virtual key as a bearer token", async () => {
      const sent = upstream().requests.length;
      const message = await client({ apiKey: null, authToken: KEY }).messages.create({ model, max_tokens: 10, messages: [{ role: "user", content: "bearer" }] });
      assert.equal(textOf(message), "echo: bearer");
      assert.equal(upstream().requests.length, sent + 1);
    });
  });
}

describe("forwarded to anthropic", () => {
  test("sends the client's own bytes when only a bare model is named", async () => {
    const body = JSON.stringify({ max_tokens: 50, model: "claude-sonnet-4-5", messages: [{ role: "user", content: "raw" }], temperature: 0.5 });
    const res = await api(app, "POST", "/anthropic/v1/messages", body, { "x-api-key": KEY, "content-type": "application/json" });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(anthropic.last().body, JSON.parse(body));
  });

  test("keeps system blocks, top_k and metadata as sent, with the provider prefix removed from the model", async () => {
    // Sampling fields the SDK's types leave out still go over the wire; a variable skips the excess-property check.
    const params = {
      model: "anthropic/claude-sonnet-4-5",
      max_tokens: 20,
      system: [{ type: "text" as const, text: "Be brief.", cache_control: { type: "ephemeral" as const } }],
      top_k: 5,
      metadata: { user_id: "u-1" },
      messages: [{ role: "user" as const, content: "hi" }],
    };
    await client().messages.create(params);
    const body = anthropic.last().body!;
    assert.equal(body["model"], "claude-sonnet-4-5");
    assert.deepEqual(body["system"], [{ type: "text", text: "Be brief.", cache_control: { type: "ephemeral" } }]);
    assert.equal(body["top_k"], 5);
    assert.deepEqual(body["metadata"], { user_id: "u-1" });
  });

  test("counts tokens with the provider's count_tokens endpoint", async () => {
    const messages: Anthropic.MessageParam[] = [{ role: "user", content: "count me" }];
    const counted = await client().messages.countTokens({ model: "anthropic/claude-sonnet-4-5", messages });
    assert.equal(anthropic.last().path, "/v1/messages/count_tokens");
    assert.equal(counted.input_tokens, JSON.stringify(messages).length);
  });
});

describe("fallbacks", () => {
  test("a failed openai call falls back to anthropic, which gets the request without the gateway's fallbacks field", async () => {
    openai.failNext(500, "upstream broke");
    // `fallbacks` is a gateway field the SDK's types do not know; a variable skips the excess-property check.
    const params = { model: "openai/gpt-4o-mini", fallbacks: ["anthropic/claude-sonnet-4-5"], max_tokens: 10, messages: [{ role: "user" as const, content: "rescue me" }] };
    const message = await client().messages.create(params);
    assert.equal(textOf(message), "echo: rescue me");
    const body = anthropic.last().body!;
    assert.equal(body["model"], "claude-sonnet-4-5");
    assert.equal("fallbacks" in body, false);
  });
});

describe("translated for openai", () => {
  test("sends the OpenAI chat shape: system, stop, sampling, tools and tool choice", async () => {
    const params = {
      model: "openai/gpt-4o-mini",
      max_tokens: 64,
      system: "Be brief.",
      temperature: 0.3,
      top_p: 0.9,
      top_k: 7,
      stop_sequences: ["END"],
      tools: [WEATHER_TOOL],
      tool_choice: { type: "tool" as const, name: "get_weather", disable_parallel_tool_use: true },
      metadata: { user_id: "u-2" },
      messages: [{ role: "user" as const, content: "hi" }],
    };
    await client().messages.create(params);
    const body = openai.last().body!;
    assert.equal(openai.last().path, "/v1/chat/completions");
    assert.deepEqual(body["messages"], [
      { role: "system", content: "Be brief." },
      { role: "user", content: "hi" },
    ]);
    assert.equal(body["max_completion_tokens"], 64, "OpenAI's reasoning models refuse max_tokens");
    assert.equal(body["max_tokens"], undefined);
    assert.equal(body["temperature"], 0.3);
    assert.equal(body["top_p"], 0.9);
    assert.equal(body["top_k"], undefined);
    assert.deepEqual(body["stop"], ["END"]);
    assert.deepEqual(body["tools"], [{ type: "function", function: { name: "get_weather", description: "Weather of a city", parameters: WEATHER_TOOL.input_schema } }]);
    assert.deepEqual(body["tool_choice"], { type: "function", function: { name: "get_weather" } });
    assert.equal(body["parallel_tool_calls"], false);
    assert.equal(body["user"], "u-2");
  });

  test("sends tool_use and tool_result blocks as tool_calls and a tool message", async () => {
    await client().messages.create({
      model: "openai/gpt-4o-mini",
      max_tokens: 64,
      messages: [
        { role: "user", content: "weather?" },
        { role: "assistant", content: [{ type: "text", text: "Checking." }, { type: "tool_use", id: "toolu_1", name: "get_weather", input: { location: "Paris" } }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: [{ type: "text", text: "sunny" }] }, { type: "text", text: "thanks" }] },
      ],
    });
    assert.deepEqual(openai.last().body!["messages"], [
      { role: "user", content: "weather?" },
      { role: "assistant", content: "Checking.", tool_calls: [{ id: "toolu_1", type: "function", function: { name: "get_weather", arguments: '{"location":"Paris"}' } }] },
      { role: "tool", tool_call_id: "toolu_1", content: "sunny" },
      { role: "user", content: "thanks" },
    ]);
  });

  test("sends base64 and URL images as image_url parts", async () => {
    await client().messages.create({
      model: "openai/gpt-4o-mini",
      max_tokens: 64,
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "what is this?" },
            { type: "image", source: { type: "base64", media_type: "image/png", data: PNG_BASE64 } },
            { type: "image", source: { type: "url", url: "https://example.com/cat.png" } },
          ],
        },
      ],
    });
    assert.deepEqual(openai.last().body!["messages"], [
      {
        role: "user",
        content: [
          { type: "text", text: "what is this?" },
          { type: "image_url", image_url: { url: `data:image/png;base64,${PNG_BASE64}` } },
          { type: "image_url", image_url: { url: "https://example.com/cat.png" } },
        ],
      },
    ]);
  });

  test("sends the images of a tool result after the tool message, in a user message", async () => {
    await client().messages.create({
      model: "openai/gpt-4o-mini",
      max_tokens: 64,
      messages: [
        { role: "user", content: "screenshot?" },
        { role: "assistant", content: [{ type: "tool_use", id: "toolu_s", name: "screenshot", input: {} }] },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "toolu_s", content: [{ type: "text", text: "taken" }, { type: "image", source: { type: "base64", media_type: "image/png", data: PNG_BASE64 } }] },
          ],
        },
      ],
    });
    assert.deepEqual(openai.last().body!["messages"], [
      { role: "user", content: "screenshot?" },
      { role: "assistant", content: null, tool_calls: [{ id: "toolu_s", type: "function", function: { name: "screenshot", arguments: "{}" } }] },
      { role: "tool", tool_call_id: "toolu_s", content: "taken" },
      { role: "user", content: [{ type: "image_url", image_url: { url: `data:image/png;base64,${PNG_BASE64}` } }] },
    ]);
  });

  test("asks the upstream for usage on a stream and reports it in message_delta", async () => {
    const stream = client().messages.stream({ model: "openai/gpt-4o-mini", max_tokens: 100, messages: [{ role: "user", content: "usage please" }] });
    const final = await stream.finalMessage();
    assert.deepEqual(openai.last().body!["stream_options"], { include_usage: true });
    assert.equal(final.usage.input_tokens, 11);
    assert.equal(final.usage.output_tokens, 3);
  });

  test("answers upstream reasoning as a thinking block before the text", async () => {
    const message = await client().messages.create({ model: "openai/gpt-4o-mini", max_tokens: 64, messages: [{ role: "user", content: "think: hard" }] });
    assert.deepEqual(
      message.content.map((block) => block.type),
      ["thinking", "text"],
    );
    assert.equal(message.content[0]?.type === "thinking" ? message.content[0].thinking : null, MOCK_REASONING);
  });

  test("streams upstream reasoning as thinking_delta events in their own block, then the text block", async () => {
    const stream = client().messages.stream({ model: "openai/gpt-4o-mini", max_tokens: 64, messages: [{ role: "user", content: "think: hard" }] });
    const blocks: string[] = [];
    const thinking: string[] = [];
    stream.on("streamEvent", (event) => {
      if (event.type === "content_block_start") blocks.push(`${event.index}:${event.content_block.type}`);
      if (event.type === "content_block_delta" && event.delta.type === "thinking_delta") thinking.push(event.delta.thinking);
    });
    const final = await stream.finalMessage();
    assert.deepEqual(blocks, ["0:thinking", "1:text"]);
    assert.equal(thinking.join(""), MOCK_REASONING);
    assert.equal(textOf(final), "echo: think: hard");
  });

  test("estimates count_tokens without calling the provider", async () => {
    const sent = openai.requests.length;
    const counted = await client().messages.countTokens({ model: "openai/gpt-4o-mini", system: "abcd", messages: [{ role: "user", content: "12345678" }] });
    // 12 characters are 3 tokens, plus 3 for the one message.
    assert.equal(counted.input_tokens, 6);
    assert.equal(openai.requests.length, sent);
  });

  test("labels the inference metrics with method=chat", async () => {
    const before = await scrape();
    await client().messages.create({ model: "openai/gpt-4o-mini", max_tokens: 10, messages: [{ role: "user", content: "count me" }] });
    const samples = await scrape();
    const match = { provider: "openai", model: "gpt-4o-mini", method: "chat" };
    assert.equal(total(samples, "gw_success_requests_total", match) - total(before, "gw_success_requests_total", match), 1);
    const http = { path: "/anthropic/v1/messages", method: "POST", status: "200" };
    assert.equal(total(samples, "http_requests_total", http) - total(before, "http_requests_total", http), 1);
  });
});

describe("refusals in Anthropic's error envelope", () => {
  test("an unknown virtual key is an authentication_error", async () => {
    const err = await refusal(client({ apiKey: "sk-gw-nobody" }).messages.create({ model: "openai/gpt-4o-mini", max_tokens: 10, messages: [{ role: "user", content: "hi" }] }));
    assert.equal(err.status, 401);
    assert.equal(errorType(err), "authentication_error");
  });

  test("a spent budget is a permission_error with status 402", async () => {
    const broke = client({ apiKey: BROKE });
    await broke.messages.create({ model: "openai/gpt-4o-mini", max_tokens: 10, messages: [{ role: "user", content: "spend" }] });
    const err = await refusal(broke.messages.create({ model: "openai/gpt-4o-mini", max_tokens: 10, messages: [{ role: "user", content: "again" }] }));
    assert.equal(err.status, 402);
    assert.equal(errorType(err), "permission_error");
    assert.match(err.message, /budget/);
  });

  test("a spent token limit is a rate_limit_error with status 429", async () => {
    const slow = client({ apiKey: SLOW });
    await slow.messages.create({ model: "openai/gpt-4o-mini", max_tokens: 10, messages: [{ role: "user", content: "spend" }] });
    const err = await refusal(slow.messages.create({ model: "openai/gpt-4o-mini", max_tokens: 10, messages: [{ role: "user", content: "again" }] }));
    assert.equal(err.status, 429);
    assert.equal(errorType(err), "rate_limit_error");
  });

  test("count_tokens refuses an unknown virtual key with an authentication_error", async () => {
    const err = await refusal(client({ apiKey: "sk-gw-nobody" }).messages.countTokens({ model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "hi" }] }));
    assert.equal(err.status, 401);
    assert.equal(errorType(err), "authentication_error");
  });

  test("a model the key does not allow is refused before any upstream call", async () => {
    const sent = openai.requests.length + anthropic.requests.length;
    const err = await refusal(client().messages.create({ model: "openai/gpt-4o", max_tokens: 10, messages: [{ role: "user", content: "hi" }] }));
    assert.equal(Math.floor((err.status ?? 0) / 100), 4);
    assert.equal(openai.requests.length + anthropic.requests.length, sent);
  });

  const base = { model: "openai/gpt-4o-mini", max_tokens: 10, messages: [{ role: "user", content: "hi" }] };
  for (const [name, body, pattern] of [
    ["a missing max_tokens", { model: "openai/gpt-4o-mini", messages: base.messages }, /max_tokens: required/],
    ["a fractional max_tokens", { ...base, max_tokens: 1.5 }, /max_tokens: required, a whole number/],
    ["missing messages", { model: base.model, max_tokens: 10 }, /messages: required/],
    ["a system role in messages", { ...base, messages: [{ role: "system", content: "x" }] }, /messages\[0\]\.role: "system" is not a role/],
    ["a content block type the role cannot send", { ...base, messages: [{ role: "user", content: [{ type: "tool_use", id: "t", name: "n", input: {} }] }] }, /messages\[0\]\.content\[0\]\.type: "tool_use" is not a content block a user message can send/],
    ["an unknown content block type", { ...base, messages: [{ role: "user", content: [{ type: "video", url: "x" }] }] }, /"video" is not a content block/],
    [
      "a tool_result answering no tool_use",
      { ...base, messages: [{ role: "user", content: "a" }, { role: "assistant", content: [{ type: "tool_use", id: "toolu_a", name: "n", input: {} }] }, { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_b", content: "x" }] }] },
      /messages\[2\]\.content\[0\]\.tool_use_id: "toolu_b" answers no tool_use block/,
    ],
    ["invalid JSON", "{not json", /JSON/i],
  ] as const) {
    test(`${name} is an invalid_request_error and nothing goes upstream`, async () => {
      const sent = openai.requests.length + anthropic.requests.length;
      const res = await api(app, "POST", "/anthropic/v1/messages", typeof body === "string" ? body : JSON.stringify(body), { "x-api-key": KEY, "content-type": "application/json" });
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.equal(res.body.type, "error");
      assert.equal(res.body.error.type, "invalid_request_error");
      assert.match(res.body.error.message, pattern);
      assert.equal(openai.requests.length + anthropic.requests.length, sent);
    });
  }

  test("count_tokens checks its body the same way", async () => {
    const res = await api(app, "POST", "/anthropic/v1/messages/count_tokens", { model: "openai/gpt-4o-mini", messages: [{ role: "tool", content: "x" }] }, { "x-api-key": KEY });
    assert.equal(res.status, 400);
    assert.equal(res.body.error.type, "invalid_request_error");
    assert.match(res.body.error.message, /messages\[0\]\.role/);
  });

  test("GET on the messages path is a 405 in the Anthropic envelope", async () => {
    const res = await api(app, "GET", "/anthropic/v1/messages", undefined, { "x-api-key": KEY });
    assert.equal(res.status, 405);
    assert.equal(res.body.type, "error");
    assert.equal(res.body.error.type, "invalid_request_error");
  });
});

describe("client.allowed_headers", () => {
  async function setAllowedHeaders(allowed: string[]): Promise<void> {
    const res = await api(app, "PATCH", "/config", { client: { allowed_headers: allowed } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
  }

  function withHeaders(): Anthropic {
    return new Anthropic({
      apiKey: KEY,
      baseURL: `${app.url}/anthropic`,
      maxRetries: 0,
      defaultHeaders: { "anthropic-version": "2099-01-01", "anthropic-beta": "future-feature-2099", "x-team": "search" },
    });
  }

  after(() => setAllowedHeaders(["*"]));

  for (const stream of [false, true]) {
    test(`passes the caller's anthropic-version and anthropic-beta through to Anthropic when allowed${stream ? ", streamed" : ""}`, async () => {
      await setAllowedHeaders(["anthropic-version", "anthropic-beta"]);
      const params = { model: "anthropic/claude-sonnet-4-5", max_tokens: 10, messages: [{ role: "user" as const, content: "hi" }] };
      if (stream) await withHeaders().messages.stream(params).finalMessage();
      else await withHeaders().messages.create(params);
      const seen = anthropic.last().headers;
      assert.equal(seen["anthropic-version"], "2099-01-01");
      assert.equal(seen["anthropic-beta"], "future-feature-2099");
      assert.equal(seen["x-team"], undefined);
      assert.equal(seen["x-api-key"], "sk-an", "the provider's key replaces the caller's virtual key");
    });
  }

  test("drops headers outside the list and sends the gateway's own anthropic-version", async () => {
    await setAllowedHeaders(["x-team"]);
    await withHeaders().messages.create({ model: "anthropic/claude-sonnet-4-5", max_tokens: 10, messages: [{ role: "user", content: "hi" }] });
    const seen = anthropic.last().headers;
    assert.equal(seen["anthropic-version"], ANTHROPIC_VERSION);
    assert.equal(seen["anthropic-beta"], undefined);
    assert.equal(seen["x-team"], "search");
  });

  test("forwards allowed headers to a translated provider too, and to count_tokens", async () => {
    await setAllowedHeaders(["x-team"]);
    await withHeaders().messages.create({ model: "openai/gpt-4o-mini", max_tokens: 10, messages: [{ role: "user", content: "hi" }] });
    assert.equal(openai.last().headers["x-team"], "search");
    assert.equal(openai.last().headers["anthropic-beta"], undefined);
    await withHeaders().messages.countTokens({ model: "anthropic/claude-sonnet-4-5", messages: [{ role: "user", content: "hi" }] });
    assert.equal(anthropic.last().headers["x-team"], "search");
  });
});

describe("streams that end early", () => {
  let stalling: TestApp;

  before(async () => {
    // A short stream idle timeout turns a mock's held-open stream into a failure after the headers went out.
    stalling = await startApp({ inference: inferenceOptions({ stream_idle_timeout_in_seconds: 1 }) });
  });

  after(async () => {
    openai.hangStreams = false;
    anthropic.hangStreams = false;
    await stalling?.stop();
  });

  for (const [provider, model] of [
    ["anthropic", "anthropic/claude-sonnet-4-5"],
    ["openai", "openai/gpt-4o-mini"],
  ] as const) {
    const upstream = (): MockUpstream => (provider === "anthropic" ? anthropic : openai);

    test(`a client that leaves mid-stream frees the ${provider} upstream stream`, async () => {
      upstream().hangStreams = true;
      const aborted = upstream().abortedStreams;
      const stream = client().messages.stream({ model, max_tokens: 100, messages: [{ role: "user", content: "never ending" }] });
      for await (const event of stream) if (event.type === "content_block_delta") break;
      assert.ok(await eventually(() => upstream().openStreams === 0), "the upstream stream is still open");
      assert.equal(upstream().abortedStreams, aborted + 1);
      upstream().hangStreams = false;
    });

    test(`a ${provider} stream that stalls ends in an error event the SDK raises`, async () => {
      upstream().hangStreams = true;
      const stream = new Anthropic({ apiKey: KEY, baseURL: `${stalling.url}/anthropic`, maxRetries: 0 }).messages.stream({
        model,
        max_tokens: 100,
        messages: [{ role: "user", content: "stall here" }],
      });
      const seen: string[] = [];
      const failure = await rejection(
        (async () => {
          for await (const event of stream) seen.push(event.type);
        })(),
        Anthropic.APIError,
      );
      upstream().hangStreams = false;
      assert.ok(seen.includes("content_block_delta"), seen.join(","));
      assert.equal((failure.error as { type?: unknown; error?: { type?: unknown } }).error?.type, "api_error");
    });
  }
});
