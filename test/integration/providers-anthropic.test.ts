/** The Anthropic adapter against the mock Messages API: translation both ways, streaming, errors, abort. */
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import { GatewayError } from "../../src/errors.js";
import { ANTHROPIC_VERSION } from "../../src/providers/anthropic/adapter.js";
import { ProviderError } from "../../src/providers/provider-error.js";
import { createProviderAdapter } from "../../src/providers/registry.js";
import type { JsonObject, ProviderAdapter } from "../../src/providers/types.js";
import { MOCK_ANTHROPIC_MODELS, MOCK_TOOL_INPUT, startMockAnthropic, type MockUpstream } from "../fixtures/mock-anthropic.js";
import { eventually, providerKey } from "../helpers/provider-keys.js";

const WEATHER_TOOL = {
  type: "function",
  function: { name: "get_weather", description: "Weather of a city", parameters: { type: "object", properties: { location: { type: "string" } }, required: ["location"] } },
};
const PNG_DATA_URL = "data:image/png;base64,iVBORw0KGgo=";

let mock: MockUpstream;
let anthropic: ProviderAdapter;
const key = providerKey({ value: "sk-ant-test" });

async function collect(stream: AsyncIterable<JsonObject>): Promise<JsonObject[]> {
  const out: JsonObject[] = [];
  for await (const chunk of stream) out.push(chunk);
  return out;
}

function firstChoice(body: JsonObject): JsonObject {
  return (body["choices"] as JsonObject[])[0]!;
}

function deltas(chunks: JsonObject[]): JsonObject[] {
  return chunks.flatMap((c) => (c["choices"] as JsonObject[]).map((choice) => choice["delta"] as JsonObject));
}

before(async () => {
  mock = await startMockAnthropic();
  anthropic = createProviderAdapter({ name: "anthropic", baseUrl: mock.url, keys: [] });
});
beforeEach(() => {
  mock.requests.length = 0;
  mock.hangStreams = false;
});
after(async () => {
  await anthropic.close();
  await mock.close();
});

describe("anthropic request translation", () => {
  test("sends x-api-key and anthropic-version to /v1/messages", async () => {
    await anthropic.chat({ model: "claude-sonnet-4-5", messages: [{ role: "user", content: "hi" }] }, { key });
    const req = mock.last();
    assert.equal(req.path, "/v1/messages");
    assert.equal(req.headers["x-api-key"], "sk-ant-test");
    assert.equal(req.headers["anthropic-version"], ANTHROPIC_VERSION);
    assert.equal(req.headers["authorization"], undefined);
  });

  test("moves system messages to the system field and defaults max_tokens", async () => {
    await anthropic.chat(
      { model: "claude-sonnet-4-5", messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "hi" }], temperature: 0.2, stop: "END" },
      { key },
    );
    const body = mock.last().body!;
    assert.equal(body["system"], "Be brief.");
    assert.deepEqual(body["messages"], [{ role: "user", content: [{ type: "text", text: "hi" }] }]);
    assert.equal(body["max_tokens"], 4096);
    assert.equal(body["temperature"], 0.2);
    assert.deepEqual(body["stop_sequences"], ["END"]);
  });

  test("sends the model id exactly as given", async () => {
    await anthropic.chat({ model: "claude-3-5-sonnet-20241022", messages: [{ role: "user", content: "x" }], max_tokens: 10 }, { key });
    assert.equal(mock.last().body!["model"], "claude-3-5-sonnet-20241022");
    assert.equal(mock.last().body!["max_tokens"], 10);
  });

  test("translates data-URL and http images to image blocks", async () => {
    const result = await anthropic.chat(
      {
        model: "claude-sonnet-4-5",
        messages: [
          {
            role: "user",
            content: [
              { type: "text", text: "what is this?" },
              { type: "image_url", image_url: { url: PNG_DATA_URL } },
              { type: "image_url", image_url: { url: "https://example.com/cat.jpg" } },
            ],
          },
        ],
      },
      { key },
    );
    const content = ((mock.last().body!["messages"] as JsonObject[])[0]!["content"]) as JsonObject[];
    assert.deepEqual(content[1], { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } });
    assert.deepEqual(content[2], { type: "image", source: { type: "url", url: "https://example.com/cat.jpg" } });
    assert.equal((firstChoice(result.body)["message"] as JsonObject)["content"], "saw 2 image(s): base64,url");
  });

  test("rejects an image URL that is neither a data URL nor http", async () => {
    const call = anthropic.chat({ model: "m", messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "ftp://x/y.png" } }] }] }, { key });
    await assert.rejects(call, (err: unknown) => err instanceof GatewayError && err.type === "caller_invalid_request" && err.field === "messages[0].content[0].image_url.url");
    assert.equal(mock.requests.length, 0);
  });

  test("translates tools, tool_choice and parallel_tool_calls", async () => {
    await anthropic.chat(
      { model: "m", messages: [{ role: "user", content: "w" }], tools: [WEATHER_TOOL], tool_choice: { type: "function", function: { name: "get_weather" } }, parallel_tool_calls: false },
      { key },
    );
    const body = mock.last().body!;
    assert.deepEqual(body["tools"], [{ name: "get_weather", description: "Weather of a city", input_schema: WEATHER_TOOL.function.parameters }]);
    assert.deepEqual(body["tool_choice"], { type: "tool", name: "get_weather", disable_parallel_tool_use: true });
  });

  test("maps tool_choice required to any", async () => {
    await anthropic.chat({ model: "m", messages: [{ role: "user", content: "w" }], tools: [WEATHER_TOOL], tool_choice: "required" }, { key });
    assert.deepEqual(mock.last().body!["tool_choice"], { type: "any" });
  });

  test("turns assistant tool_calls into tool_use and tool messages into one user turn of tool_results", async () => {
    const result = await anthropic.chat(
      {
        model: "m",
        tools: [WEATHER_TOOL],
        messages: [
          { role: "user", content: "weather in Paris and Rome?" },
          {
            role: "assistant",
            content: null,
            tool_calls: [
              { id: "toolu_1", type: "function", function: { name: "get_weather", arguments: '{"location":"Paris"}' } },
              { id: "toolu_2", type: "function", function: { name: "get_weather", arguments: '{"location":"Rome"}' } },
            ],
          },
          { role: "tool", tool_call_id: "toolu_1", content: "sunny" },
          { role: "tool", tool_call_id: "toolu_2", content: "rainy" },
        ],
      },
      { key },
    );
    const messages = mock.last().body!["messages"] as JsonObject[];
    assert.equal(messages.length, 3);
    assert.deepEqual(messages[1], {
      role: "assistant",
      content: [
        { type: "tool_use", id: "toolu_1", name: "get_weather", input: { location: "Paris" } },
        { type: "tool_use", id: "toolu_2", name: "get_weather", input: { location: "Rome" } },
      ],
    });
    assert.deepEqual(messages[2], {
      role: "user",
      content: [
        { type: "tool_result", tool_use_id: "toolu_1", content: "sunny" },
        { type: "tool_result", tool_use_id: "toolu_2", content: "rainy" },
      ],
    });
    assert.equal((firstChoice(result.body)["message"] as JsonObject)["content"], "tool said: sunny");
  });

  test("rejects tool call arguments that are not JSON", async () => {
    const call = anthropic.chat(
      { model: "m", messages: [{ role: "assistant", content: null, tool_calls: [{ id: "t", type: "function", function: { name: "f", arguments: "{nope" } }] }] },
      { key },
    );
    await assert.rejects(call, (err: unknown) => err instanceof GatewayError && err.field === "messages[0].tool_calls[0].function.arguments");
  });
});

describe("anthropic response translation", () => {
  test("returns an OpenAI chat.completion with usage including cached input", async () => {
    const result = await anthropic.chat({ model: "claude-sonnet-4-5", messages: [{ role: "user", content: "hello you" }] }, { key });
    assert.equal(result.body["object"], "chat.completion");
    assert.equal(result.body["id"], "msg_mock_01");
    const choice = firstChoice(result.body);
    assert.equal(choice["finish_reason"], "stop");
    assert.equal((choice["message"] as JsonObject)["content"], "echo: hello you");
    assert.deepEqual(result.usage, { input_tokens: 15, output_tokens: 3 });
    assert.deepEqual(result.body["usage"], { prompt_tokens: 15, completion_tokens: 3, total_tokens: 18 });
  });

  test("returns tool_use as tool_calls with finish_reason tool_calls", async () => {
    const result = await anthropic.chat({ model: "m", messages: [{ role: "user", content: "w" }], tools: [WEATHER_TOOL] }, { key });
    const choice = firstChoice(result.body);
    assert.equal(choice["finish_reason"], "tool_calls");
    const message = choice["message"] as JsonObject;
    assert.equal(message["content"], null);
    assert.deepEqual(message["tool_calls"], [{ id: "toolu_mock_1", type: "function", function: { name: "get_weather", arguments: MOCK_TOOL_INPUT } }]);
  });
});

describe("anthropic streaming", () => {
  test("translates text events to chat.completion.chunks with a finish reason and usage", async () => {
    const stream = await anthropic.chatStream({ model: "m", messages: [{ role: "user", content: "one two" }], stream: true }, { key });
    const chunks = await collect(stream);
    assert.ok(chunks.every((c) => c["object"] === "chat.completion.chunk" && c["id"] === "msg_mock_01"));
    assert.equal(deltas(chunks)[0]!["role"], "assistant");
    assert.equal(deltas(chunks).map((d) => d["content"] ?? "").join(""), "echo: one two");
    assert.equal(firstChoice(chunks[chunks.length - 1]!)["finish_reason"], "stop");
    assert.deepEqual(stream.usage(), { input_tokens: 15, output_tokens: 3 });
    assert.equal(mock.last().body!["stream"], true);
  });

  test("adds a usage chunk when the caller asked for it", async () => {
    const chunks = await collect(await anthropic.chatStream({ model: "m", messages: [{ role: "user", content: "a" }], stream: true, stream_options: { include_usage: true } }, { key }));
    const last = chunks[chunks.length - 1]!;
    assert.deepEqual(last["choices"], []);
    assert.deepEqual(last["usage"], { prompt_tokens: 15, completion_tokens: 2, total_tokens: 17 });
  });

  test("translates tool_use and input_json_delta to streamed tool_calls", async () => {
    const chunks = await collect(await anthropic.chatStream({ model: "m", messages: [{ role: "user", content: "w" }], tools: [WEATHER_TOOL], stream: true }, { key }));
    const calls = deltas(chunks).flatMap((d) => (d["tool_calls"] as JsonObject[] | undefined) ?? []);
    assert.deepEqual(calls[0], { index: 0, id: "toolu_mock_1", type: "function", function: { name: "get_weather", arguments: "" } });
    assert.equal(calls.map((c) => (c["function"] as JsonObject)["arguments"]).join(""), MOCK_TOOL_INPUT);
    assert.equal(firstChoice(chunks[chunks.length - 1]!)["finish_reason"], "tool_calls");
  });

  test("aborting the signal mid-stream frees the upstream request", async () => {
    mock.hangStreams = true;
    const controller = new AbortController();
    const stream = await anthropic.chatStream({ model: "m", messages: [{ role: "user", content: "a b c" }], stream: true }, { key, signal: controller.signal });
    let count = 0;
    await assert.rejects(async () => {
      for await (const _ of stream) {
        if (++count === 2) controller.abort();
      }
    });
    assert.ok(await eventually(() => mock.abortedStreams >= 1 && mock.openStreams === 0), "the mock saw the stream closed early");
  });
});

describe("anthropic errors", () => {
  const call = () => anthropic.chat({ model: "m", messages: [{ role: "user", content: "x" }] }, { key });
  const cases: [number, string, boolean][] = [
    [429, "provider_rate_limited", true],
    [401, "provider_auth", true],
    [402, "provider_payment", true],
    [400, "provider_bad_request", false],
    [500, "provider_unavailable", false],
    [529, "provider_unavailable", false],
  ];
  for (const [status, errorType, rotate] of cases) {
    test(`maps ${status} to ${errorType}${rotate ? " and asks to rotate the key" : ""}`, async () => {
      mock.failNext(status, `upstream says ${status}`);
      await assert.rejects(call(), (err: unknown) => {
        assert.ok(err instanceof ProviderError);
        assert.equal(err.upstreamStatus, status);
        assert.equal(err.errorType, errorType);
        assert.equal(err.rotateKey, rotate);
        assert.match(err.message, new RegExp(`upstream says ${status}`));
        return true;
      });
    });
  }
});

describe("anthropic responses bridge and models", () => {
  test("answers a Responses request through the Messages API", async () => {
    const result = await anthropic.responses({ model: "claude-sonnet-4-5", input: "hello", instructions: "Be nice.", max_output_tokens: 50 }, { key });
    assert.equal(mock.last().body!["system"], "Be nice.");
    assert.equal(mock.last().body!["max_tokens"], 50);
    assert.equal(result.body["object"], "response");
    const item = (result.body["output"] as JsonObject[])[0]!;
    assert.deepEqual(item["content"], [{ type: "output_text", text: "echo: hello", annotations: [] }]);
    assert.deepEqual(result.body["usage"], { input_tokens: 15, output_tokens: 2, total_tokens: 17 });
  });

  test("streams a Responses function call from a tool_use", async () => {
    const stream = await anthropic.responsesStream(
      { model: "m", input: [{ role: "user", content: [{ type: "input_text", text: "w" }] }], tools: [{ type: "function", name: "get_weather", parameters: { type: "object" } }], stream: true },
      { key },
    );
    const events = await collect(stream);
    assert.equal(events[0]!["type"], "response.created");
    const done = events.find((e) => e["type"] === "response.function_call_arguments.done")!;
    assert.equal(done["arguments"], MOCK_TOOL_INPUT);
    const completed = events[events.length - 1]!;
    assert.equal(completed["type"], "response.completed");
    assert.equal(((completed["response"] as JsonObject)["output"] as JsonObject[])[0]!["name"], "get_weather");
    assert.deepEqual(stream.usage(), { input_tokens: 15, output_tokens: 6 });
  });

  test("lists the upstream's models", async () => {
    assert.deepEqual((await anthropic.listModels(key)).map((m) => m.id), MOCK_ANTHROPIC_MODELS);
  });
});
