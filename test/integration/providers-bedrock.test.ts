/**
 * The Bedrock adapter through the real app and the official `openai` SDK, against a mock Bedrock runtime
 * that verifies every request's SigV4 signature: Converse and ConverseStream (event-stream framing), tools,
 * aliases, usage, and upstream failures mapped to the gateway's error types.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type OpenAI from "openai";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { MALFORMED_CONVERSE, MOCK_BEDROCK_TOOL_INPUT, startMockBedrock, type MockBedrock } from "../fixtures/mock-bedrock.js";
import { startApp, type TestApp } from "../helpers/app.js";
import { errorType, readChatStream, refusal, sdk } from "../helpers/inference.js";

const CREDS = { accessKey: "AKIAMOCKKEY", secretKey: "mock-secret-key", sessionToken: "mock-session-token", region: "eu-west-1" };
const MODEL = "anthropic.claude-3-5-sonnet-20240620-v1:0";
const VK = "sk-gw-bedrock";
const WEATHER_TOOL = {
  type: "function" as const,
  function: { name: "get_weather", description: "Weather of a city", parameters: { type: "object", properties: { location: { type: "string" } } } },
};

let mock: MockBedrock;
let app: TestApp;
let client: OpenAI;

function bedrockKey(id: string, secretKey: string): Record<string, unknown> {
  return {
    id,
    name: id,
    models: [MODEL, "sonnet", ...Object.keys(MALFORMED_CONVERSE)],
    aliases: { sonnet: MODEL },
    bedrock_key_config: { access_key: CREDS.accessKey, secret_key: secretKey, session_token: CREDS.sessionToken, region: CREDS.region },
  };
}

before(async () => {
  mock = await startMockBedrock(CREDS);
  const inference = inferenceOptionsFromFile(
    {
      bedrock: { keys: [bedrockKey("good", CREDS.secretKey)], network_config: { base_url: mock.url } },
    },
    [{ id: "vk", name: "vk", value: VK, is_active: true, provider_configs: [{ provider: "bedrock", allowed_models: ["*"], key_ids: ["*"], weight: 1 }] }],
  );
  app = await startApp({ inference });
  client = sdk(app, VK);
});

after(async () => {
  await app?.stop();
  await mock?.close();
});

describe("bedrock", () => {
  test("answers a chat completion through Converse with a verified signature", async () => {
    const answer = await client.chat.completions.create({
      model: `bedrock/${MODEL}`,
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "hello there" },
      ],
      max_tokens: 50,
      temperature: 0.5,
      stop: ["END"],
    });
    assert.equal(answer.choices[0]?.message.content, "echo: hello there");
    assert.equal(answer.choices[0]?.finish_reason, "stop");
    assert.deepEqual(answer.usage, { prompt_tokens: 13, completion_tokens: 3, total_tokens: 16 });
    const req = mock.last();
    assert.equal(req.rawPath, `/model/${encodeURIComponent(MODEL)}/converse`);
    assert.deepEqual(req.body?.["system"], [{ text: "Be brief." }]);
    assert.deepEqual(req.body?.["inferenceConfig"], { maxTokens: 50, temperature: 0.5, stopSequences: ["END"] });
    assert.equal(req.headers["x-amz-security-token"], CREDS.sessionToken);
  });

  test("sends the model an alias maps to", async () => {
    await client.chat.completions.create({ model: "bedrock/sonnet", messages: [{ role: "user", content: "hi" }] });
    assert.equal(mock.last().rawPath, `/model/${encodeURIComponent(MODEL)}/converse`);
  });

  test("streams ConverseStream events as chunks with usage", async () => {
    const stream = await client.chat.completions.create({
      model: `bedrock/${MODEL}`,
      messages: [{ role: "user", content: "one two three" }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const { text, finish, usage } = await readChatStream(stream);
    assert.equal(text, "echo: one two three");
    assert.equal(finish, "stop");
    assert.equal(usage?.prompt_tokens, 13);
    assert.equal(mock.last().rawPath, `/model/${encodeURIComponent(MODEL)}/converse-stream`);
  });

  test("translates tools to toolConfig and toolUse back to tool_calls", async () => {
    const answer = await client.chat.completions.create({ model: `bedrock/${MODEL}`, messages: [{ role: "user", content: "weather?" }], tools: [WEATHER_TOOL], tool_choice: "required" });
    const call = answer.choices[0]?.message.tool_calls?.[0];
    assert.equal(answer.choices[0]?.finish_reason, "tool_calls");
    assert.ok(call && call.type === "function");
    assert.equal(call.function.name, "get_weather");
    assert.deepEqual(JSON.parse(call.function.arguments), MOCK_BEDROCK_TOOL_INPUT);
    const toolConfig = mock.last().body?.["toolConfig"] as Record<string, unknown>;
    assert.deepEqual(toolConfig["toolChoice"], { any: {} });
    assert.deepEqual(toolConfig["tools"], [{ toolSpec: { name: "get_weather", description: "Weather of a city", inputSchema: { json: WEATHER_TOOL.function.parameters } } }]);
  });

  test("sends tool results as toolResult blocks", async () => {
    const answer = await client.chat.completions.create({
      model: `bedrock/${MODEL}`,
      tools: [WEATHER_TOOL],
      messages: [
        { role: "user", content: "weather?" },
        { role: "assistant", content: null, tool_calls: [{ id: "tooluse_1", type: "function", function: { name: "get_weather", arguments: '{"location":"Paris"}' } }] },
        { role: "tool", tool_call_id: "tooluse_1", content: "sunny" },
      ],
    });
    assert.equal(answer.choices[0]?.message.content, "tool said: sunny");
    const messages = mock.last().body?.["messages"] as Record<string, unknown>[];
    assert.deepEqual(messages[1], { role: "assistant", content: [{ toolUse: { toolUseId: "tooluse_1", name: "get_weather", input: { location: "Paris" } } }] });
    assert.deepEqual(messages[2], { role: "user", content: [{ toolResult: { toolUseId: "tooluse_1", content: [{ text: "sunny" }] } }] });
  });

  test("streams a tool call as tool_call deltas", async () => {
    const stream = await client.chat.completions.create({ model: `bedrock/${MODEL}`, messages: [{ role: "user", content: "weather?" }], tools: [WEATHER_TOOL], stream: true });
    const { toolName: name, toolArgs: args, finish } = await readChatStream(stream);
    assert.equal(name, "get_weather");
    assert.deepEqual(JSON.parse(args), MOCK_BEDROCK_TOOL_INPUT);
    assert.equal(finish, "tool_calls");
  });

  test("sends a data-URL image inline and refuses an http image URL", async () => {
    await client.chat.completions.create({
      model: `bedrock/${MODEL}`,
      messages: [{ role: "user", content: [{ type: "text", text: "what is it" }, { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } }] }],
    });
    const content = (mock.last().body?.["messages"] as Record<string, unknown>[])[0]?.["content"];
    assert.deepEqual(content, [{ text: "what is it" }, { image: { format: "png", source: { bytes: "iVBORw0KGgo=" } } }]);
    const err = await refusal(
      client.chat.completions.create({ model: `bedrock/${MODEL}`, messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "https://example.com/a.png" } }] }] }),
    );
    assert.equal(err.status, 400);
    assert.match(err.message, /inline only/);
  });

  test("serves the Responses API through the chat translation", async () => {
    const response = await client.responses.create({ model: `bedrock/${MODEL}`, input: "via responses" });
    assert.equal(response.output_text, "echo: via responses");
    assert.equal(mock.last().rawPath, `/model/${encodeURIComponent(MODEL)}/converse`);
  });

  test("maps a 429 to provider_rate_limited", async () => {
    mock.failNext(429, "Too many requests");
    const err = await refusal(client.chat.completions.create({ model: `bedrock/${MODEL}`, messages: [{ role: "user", content: "hi" }] }));
    assert.equal(err.status, 429);
    assert.equal(errorType(err), "provider_rate_limited");
  });

  test("maps a mid-stream throttlingException to an error event", async () => {
    mock.streamException = "throttlingException";
    const stream = await client.chat.completions.create({ model: `bedrock/${MODEL}`, messages: [{ role: "user", content: "a b c" }], stream: true });
    await assert.rejects(
      (async () => {
        for await (const _chunk of stream) {
          // drained until the error event
        }
      })(),
      (err: Error) => /throttlingException/.test(err.message),
    );
  });

  test("a key whose secret the upstream does not accept fails as provider_auth", async () => {
    const inference = inferenceOptionsFromFile(
      { bedrock: { keys: [bedrockKey("bad", "wrong-secret")], network_config: { base_url: mock.url } } },
      [{ id: "vk", name: "vk", value: VK, is_active: true, provider_configs: [{ provider: "bedrock", allowed_models: ["*"], key_ids: ["*"], weight: 1 }] }],
    );
    const other = await startApp({ inference });
    try {
      const err = await refusal(sdk(other, VK).chat.completions.create({ model: `bedrock/${MODEL}`, messages: [{ role: "user", content: "hi" }] }));
      assert.equal(err.status, 502);
      assert.equal(errorType(err), "provider_auth");
      assert.match(err.message, /signature/);
    } finally {
      await other.stop();
    }
  });
});

describe("bedrock answers that break Converse's shape", () => {
  for (const [model, missing] of [
    ["malformed.no-message", /answered HTTP 200 with a response without output\.message\.content/],
    ["malformed.nameless-tool", /a toolUse block without a toolUseId or a name/],
  ] as const) {
    test(`${model} is a provider_unavailable naming what is missing`, async () => {
      const err = await refusal(client.chat.completions.create({ model: `bedrock/${model}`, messages: [{ role: "user", content: "hi" }] }));
      assert.equal(err.status, 502);
      assert.equal(errorType(err), "provider_unavailable");
      assert.match(err.message, missing);
    });
  }
});
