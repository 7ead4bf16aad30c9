/**
 * The gemini adapter (Generative Language API) through the real app and the official `openai` SDK, against
 * a mock that checks x-goog-api-key: generateContent and streamGenerateContent (SSE), function calling,
 * aliases, usage, list-models, upstream failures mapped to the gateway's error types, and the Anthropic
 * Messages endpoint through the chat translation (official `@anthropic-ai/sdk`).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import Anthropic from "@anthropic-ai/sdk";
import type OpenAI from "openai";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { MALFORMED_GEMINI, MOCK_GEMINI_ARGS, MOCK_GEMINI_MODELS, startMockGoogle, type MockGoogle } from "../fixtures/mock-google.js";
import { rsaKeyPair } from "../fixtures/rsa-key-pair.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { errorType, readChatStream, refusal, sdk } from "../helpers/inference.js";

const API_KEY = "AIza-mock-key";
const VK = "sk-gw-gemini";
const WEATHER_TOOL = {
  type: "function" as const,
  function: { name: "get_weather", description: "Weather of a city", parameters: { type: "object", properties: { location: { type: "string" } }, additionalProperties: false } },
};

let mock: MockGoogle;
let app: TestApp;
let client: OpenAI;

function geminiProvider(key: Record<string, unknown> = { models: ["gemini-2.5-flash", "flash"], aliases: { flash: "gemini-2.5-flash" } }): Record<string, unknown> {
  return { keys: [{ id: "g1", name: "g1", value: API_KEY, ...key }], network_config: { base_url: mock.url } };
}

const VIRTUAL_KEYS = [{ id: "vk", name: "vk", value: VK, is_active: true, provider_configs: [{ provider: "gemini", allowed_models: ["*"], key_ids: ["*"], weight: 1 }] }];

before(async () => {
  const { publicKey } = rsaKeyPair();
  mock = await startMockGoogle({ apiKey: API_KEY, serviceAccount: { clientEmail: "unused@example.iam.gserviceaccount.com", publicKey } });
  app = await startApp({ inference: inferenceOptionsFromFile({ gemini: geminiProvider() }, VIRTUAL_KEYS) });
  client = sdk(app, VK);
});

after(async () => {
  await app?.stop();
  await mock?.close();
});

describe("gemini", () => {
  test("answers a chat completion through generateContent with the API key", async () => {
    const answer = await client.chat.completions.create({
      model: "gemini/gemini-2.5-flash",
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "hello there" },
      ],
      max_tokens: 40,
      temperature: 0.3,
    });
    assert.equal(answer.choices[0]?.message.content, "echo: hello there");
    assert.equal(answer.choices[0]?.finish_reason, "stop");
    // Thinking tokens count as output.
    assert.deepEqual(answer.usage, { prompt_tokens: 9, completion_tokens: 5, total_tokens: 14 });
    const req = mock.last();
    assert.equal(req.path, "/v1beta/models/gemini-2.5-flash:generateContent");
    assert.equal(req.headers["x-goog-api-key"], API_KEY);
    assert.deepEqual(req.body?.["systemInstruction"], { parts: [{ text: "Be brief." }] });
    assert.deepEqual(req.body?.["contents"], [{ role: "user", parts: [{ text: "hello there" }] }]);
    assert.deepEqual(req.body?.["generationConfig"], { maxOutputTokens: 40, temperature: 0.3 });
  });

  test("answers /anthropic/v1/messages through generateContent, as an Anthropic message", async () => {
    const anthropic = new Anthropic({ apiKey: VK, baseURL: `${app.url}/anthropic`, maxRetries: 0 });
    const message = await anthropic.messages.create({
      model: "gemini/gemini-2.5-flash",
      system: "Be brief.",
      max_tokens: 40,
      messages: [{ role: "user", content: "hello there" }],
    });
    assert.deepEqual(message.content, [{ type: "text", text: "echo: hello there" }]);
    assert.equal(message.stop_reason, "end_turn");
    assert.equal(message.usage.input_tokens, 9);
    assert.equal(message.usage.output_tokens, 5);
    const req = mock.last();
    assert.equal(req.path, "/v1beta/models/gemini-2.5-flash:generateContent");
    assert.deepEqual(req.body?.["systemInstruction"], { parts: [{ text: "Be brief." }] });
    assert.deepEqual(req.body?.["contents"], [{ role: "user", parts: [{ text: "hello there" }] }]);
    assert.deepEqual(req.body?.["generationConfig"], { maxOutputTokens: 40 });
  });

  test("streams a function call to /anthropic/v1/messages as a tool_use block", async () => {
    const anthropic = new Anthropic({ apiKey: VK, baseURL: `${app.url}/anthropic`, maxRetries: 0 });
    const message = await anthropic.messages
      .stream({
        model: "gemini/gemini-2.5-flash",
        max_tokens: 40,
        messages: [{ role: "user", content: "weather?" }],
        tools: [{ name: "get_weather", description: "Weather of a city", input_schema: { type: "object", properties: { location: { type: "string" } } } }],
        tool_choice: { type: "tool", name: "get_weather" },
      })
      .finalMessage();
    assert.equal(message.stop_reason, "tool_use");
    const block = message.content[0];
    assert.ok(block?.type === "tool_use");
    assert.equal(block.name, "get_weather");
    assert.deepEqual(block.input, MOCK_GEMINI_ARGS);
    const req = mock.last();
    assert.equal(req.path, "/v1beta/models/gemini-2.5-flash:streamGenerateContent");
    assert.deepEqual(req.body?.["toolConfig"], { functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["get_weather"] } });
  });

  test("sends the model an alias maps to", async () => {
    await client.chat.completions.create({ model: "gemini/flash", messages: [{ role: "user", content: "hi" }] });
    assert.equal(mock.last().path, "/v1beta/models/gemini-2.5-flash:generateContent");
  });

  test("streams streamGenerateContent as chunks with usage", async () => {
    const stream = await client.chat.completions.create({
      model: "gemini/gemini-2.5-flash",
      messages: [{ role: "user", content: "one two three" }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const { text, finish, usage } = await readChatStream(stream);
    assert.equal(text, "echo: one two three");
    assert.equal(finish, "stop");
    assert.equal(usage?.prompt_tokens, 9);
    assert.equal(mock.last().path, "/v1beta/models/gemini-2.5-flash:streamGenerateContent");
    assert.equal(mock.last().query["alt"], "sse");
  });

  test("declares tools as functionDeclarations and returns functionCall as tool_calls", async () => {
    const answer = await client.chat.completions.create({
      model: "gemini/gemini-2.5-flash",
      messages: [{ role: "user", content: "weather?" }],
      tools: [WEATHER_TOOL],
      tool_choice: { type: "function", function: { name: "get_weather" } },
    });
    const call = answer.choices[0]?.message.tool_calls?.[0];
    assert.equal(answer.choices[0]?.finish_reason, "tool_calls");
    assert.ok(call && call.type === "function" && call.id.length > 0);
    assert.equal(call.function.name, "get_weather");
    assert.deepEqual(JSON.parse(call.function.arguments), MOCK_GEMINI_ARGS);
    const body = mock.last().body ?? {};
    // additionalProperties is not part of Gemini's schema subset.
    assert.deepEqual(body["tools"], [{ functionDeclarations: [{ name: "get_weather", description: "Weather of a city", parameters: { type: "object", properties: { location: { type: "string" } } } }] }]);
    assert.deepEqual(body["toolConfig"], { functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["get_weather"] } });
  });

  test("sends tool results as functionResponse parts named after the call", async () => {
    const answer = await client.chat.completions.create({
      model: "gemini/gemini-2.5-flash",
      tools: [WEATHER_TOOL],
      messages: [
        { role: "user", content: "weather?" },
        { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"location":"Paris"}' } }] },
        { role: "tool", tool_call_id: "call_1", content: '{"sky":"sunny"}' },
      ],
    });
    assert.equal(answer.choices[0]?.message.content, 'tool said: {"sky":"sunny"}');
    const contents = mock.last().body?.["contents"] as Record<string, unknown>[];
    assert.deepEqual(contents[1], { role: "model", parts: [{ functionCall: { name: "get_weather", args: { location: "Paris" } } }] });
    assert.deepEqual(contents[2], { role: "user", parts: [{ functionResponse: { name: "get_weather", response: { sky: "sunny" } } }] });
  });

  test("streams a function call as one tool_call delta", async () => {
    const stream = await client.chat.completions.create({ model: "gemini/gemini-2.5-flash", messages: [{ role: "user", content: "weather?" }], tools: [WEATHER_TOOL], stream: true });
    const { toolName: name, toolArgs: args, finish } = await readChatStream(stream);
    assert.equal(name, "get_weather");
    assert.deepEqual(JSON.parse(args), MOCK_GEMINI_ARGS);
    assert.equal(finish, "tool_calls");
  });

  test("sends a data-URL image as inlineData", async () => {
    await client.chat.completions.create({
      model: "gemini/gemini-2.5-flash",
      messages: [{ role: "user", content: [{ type: "text", text: "what" }, { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } }] }],
    });
    const contents = mock.last().body?.["contents"] as Record<string, unknown>[];
    assert.deepEqual(contents[0], { role: "user", parts: [{ text: "what" }, { inlineData: { mimeType: "image/png", data: "iVBORw0KGgo=" } }] });
  });

  test("maps a 429 to provider_rate_limited and a 503 to provider_unavailable", async () => {
    mock.failNext(429, "Resource has been exhausted");
    const limited = await refusal(client.chat.completions.create({ model: "gemini/gemini-2.5-flash", messages: [{ role: "user", content: "hi" }] }));
    assert.equal(limited.status, 429);
    assert.equal(errorType(limited), "provider_rate_limited");
    mock.failNext(503, "The model is overloaded");
    const down = await refusal(client.chat.completions.create({ model: "gemini/gemini-2.5-flash", messages: [{ role: "user", content: "hi" }] }));
    assert.equal(down.status, 502);
    assert.equal(errorType(down), "provider_unavailable");
    assert.match(down.message, /overloaded/);
  });

  test("maps an upstream that does not answer in time to provider_timeout", async () => {
    const slow = { ...geminiProvider(), network_config: { base_url: mock.url, default_request_timeout_in_seconds: 1 } };
    const other = await startApp({ inference: inferenceOptionsFromFile({ gemini: slow }, VIRTUAL_KEYS) });
    mock.latencyMs = 3000;
    try {
      const err = await refusal(sdk(other, VK).chat.completions.create({ model: "gemini/gemini-2.5-flash", messages: [{ role: "user", content: "hi" }] }));
      assert.equal(err.status, 504);
      assert.equal(errorType(err), "provider_timeout");
    } finally {
      mock.latencyMs = 0;
      await other.stop();
    }
  });

  test("a key the API rejects fails as provider_auth", async () => {
    const other = await startApp({ inference: inferenceOptionsFromFile({ gemini: geminiProvider({ value: "AIza-wrong", models: ["gemini-2.5-flash"] }) }, VIRTUAL_KEYS) });
    try {
      const err = await refusal(sdk(other, VK).chat.completions.create({ model: "gemini/gemini-2.5-flash", messages: [{ role: "user", content: "hi" }] }));
      assert.equal(err.status, 502);
      assert.equal(errorType(err), "provider_auth");
      assert.match(err.message, /API key not valid/);
    } finally {
      await other.stop();
    }
  });

  test("lists the API's models when the provider is added", async () => {
    const other = await startApp();
    try {
      const res = await api(other, "POST", "/api/v1/providers", { name: "gemini", ...geminiProvider({}) });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const models = await api(other, "GET", "/v1/models?provider=gemini");
      const ids = (models.body.data as { id: string }[]).map((m) => m.id);
      for (const id of MOCK_GEMINI_MODELS) assert.ok(ids.includes(`gemini/${id}`), `${id} in ${ids.join(",")}`);
    } finally {
      await other.stop();
    }
  });
});

describe("gemini answers that break generateContent's shape", () => {
  let other: TestApp;
  const ask = (model: string) => sdk(other, VK).chat.completions.create({ model: `gemini/${model}`, messages: [{ role: "user", content: "hi" }] });

  before(async () => {
    other = await startApp({ inference: inferenceOptionsFromFile({ gemini: geminiProvider({ models: Object.keys(MALFORMED_GEMINI) }) }, VIRTUAL_KEYS) });
  });
  after(async () => {
    await other?.stop();
  });

  for (const [model, missing] of [
    ["gemini-no-candidates", /answered HTTP 200 with a response without candidates/],
    ["gemini-nameless-call", /a functionCall without a name/],
  ] as const) {
    test(`${model} is a provider_unavailable naming what is missing`, async () => {
      const err = await refusal(ask(model));
      assert.equal(err.status, 502);
      assert.equal(errorType(err), "provider_unavailable");
      assert.match(err.message, missing);
    });
  }

  test("a blocked prompt without candidates is still an answer, finished by the content filter", async () => {
    const answer = await ask("gemini-blocked");
    assert.equal(answer.choices[0]?.finish_reason, "content_filter");
  });
});
