/**
 * The vertex adapter through the real app and the official `openai` SDK, against a mock Vertex AI whose
 * token endpoint verifies the service account's signed JWT assertion and whose API checks the bearer token
 * it issued: Gemini models (generateContent, SSE stream, function calling) and Claude models (rawPredict and
 * streamRawPredict with Anthropic bodies), token caching, aliases, and a refused service account.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type OpenAI from "openai";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { MOCK_GEMINI_ARGS, startMockGoogle, type MockGoogle } from "../fixtures/mock-google.js";
import { testServiceAccount, withTokenUri, type TestServiceAccount } from "../fixtures/service-account.js";
import { startApp, type TestApp } from "../helpers/app.js";
import { errorType, readChatStream, refusal, sdk } from "../helpers/inference.js";

const VK = "sk-gw-vertex";
const PROJECT = "test-project";
const REGION = "europe-west4";
const WEATHER_TOOL = {
  type: "function" as const,
  function: { name: "get_weather", description: "Weather of a city", parameters: { type: "object", properties: { location: { type: "string" } } } },
};
const VIRTUAL_KEYS = [{ id: "vk", name: "vk", value: VK, is_active: true, provider_configs: [{ provider: "vertex", allowed_models: ["*"], key_ids: ["*"], weight: 1 }] }];

let account: TestServiceAccount;
let mock: MockGoogle;
let app: TestApp;
let client: OpenAI;

/** A vertex provider whose key holds `credentials` (the JSON key as a string, or as an object). */
function vertexProvider(credentials: unknown): Record<string, unknown> {
  return {
    keys: [
      {
        id: "v1",
        name: "v1",
        models: ["gemini-2.5-flash", "claude-sonnet-4-5", "claude-sonnet-4-5@20250929", "flash"],
        aliases: { flash: "gemini-2.5-flash" },
        vertex_key_config: { project_id: PROJECT, region: REGION, auth_credentials: credentials },
      },
    ],
    network_config: { base_url: mock.url },
  };
}

before(async () => {
  account = testServiceAccount("gateway");
  mock = await startMockGoogle({ apiKey: "unused", serviceAccount: { clientEmail: account.clientEmail, publicKey: account.publicKey } });
  account = withTokenUri(account, mock.tokenUri);
  app = await startApp({ inference: inferenceOptionsFromFile({ vertex: vertexProvider(JSON.stringify(account.json)) }, VIRTUAL_KEYS) });
  client = sdk(app, VK);
});

after(async () => {
  await app?.stop();
  await mock?.close();
});

describe("vertex", () => {
  test("calls a Gemini model's generateContent with a bearer token from the service account, fetched once", async () => {
    const before = mock.issuedTokens.length;
    const first = await client.chat.completions.create({ model: "vertex/gemini-2.5-flash", messages: [{ role: "user", content: "hello" }] });
    const second = await client.chat.completions.create({ model: "vertex/gemini-2.5-flash", messages: [{ role: "user", content: "again" }] });
    assert.equal(first.choices[0]?.message.content, "echo: hello");
    assert.equal(second.choices[0]?.message.content, "echo: again");
    assert.equal(mock.issuedTokens.length - before, 1, "one token serves both calls");
    const req = mock.last();
    assert.equal(req.path, `/v1/projects/${PROJECT}/locations/${REGION}/publishers/google/models/gemini-2.5-flash:generateContent`);
    assert.equal(req.headers["authorization"], `Bearer ${mock.issuedTokens.at(-1)}`);
  });

  test("sends the model an alias maps to", async () => {
    await client.chat.completions.create({ model: "vertex/flash", messages: [{ role: "user", content: "hi" }] });
    assert.match(mock.last().path, /\/models\/gemini-2\.5-flash:generateContent$/);
  });

  test("streams a Gemini model through streamGenerateContent", async () => {
    const stream = await client.chat.completions.create({ model: "vertex/gemini-2.5-flash", messages: [{ role: "user", content: "a b" }], stream: true, stream_options: { include_usage: true } });
    const { text, finish, usage } = await readChatStream(stream);
    assert.equal(text, "echo: a b");
    assert.equal(finish, "stop");
    assert.equal(usage?.prompt_tokens, 9);
    assert.match(mock.last().path, /:streamGenerateContent$/);
  });

  test("returns a Gemini model's function call as tool_calls", async () => {
    const answer = await client.chat.completions.create({ model: "vertex/gemini-2.5-flash", messages: [{ role: "user", content: "weather?" }], tools: [WEATHER_TOOL] });
    const call = answer.choices[0]?.message.tool_calls?.[0];
    assert.ok(call && call.type === "function");
    assert.equal(call.function.name, "get_weather");
    assert.deepEqual(JSON.parse(call.function.arguments), MOCK_GEMINI_ARGS);
  });

  test("calls a Claude model's rawPredict with an Anthropic body, Vertex's anthropic_version and no model", async () => {
    const answer = await client.chat.completions.create({
      model: "vertex/claude-sonnet-4-5@20250929",
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "hello claude" },
      ],
    });
    assert.equal(answer.choices[0]?.message.content, "echo: hello claude");
    const req = mock.last();
    assert.equal(req.path, `/v1/projects/${PROJECT}/locations/${REGION}/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict`);
    assert.equal(req.body?.["anthropic_version"], "vertex-2023-10-16");
    assert.equal(req.body?.["system"], "Be brief.");
    assert.ok(!("model" in (req.body ?? {})));
  });

  test("streams a Claude model through streamRawPredict, tool calls included", async () => {
    const stream = await client.chat.completions.create({ model: "vertex/claude-sonnet-4-5", messages: [{ role: "user", content: "weather?" }], tools: [WEATHER_TOOL], stream: true });
    const { toolName, toolArgs, finish } = await readChatStream(stream);
    assert.equal(toolName, "get_weather");
    assert.deepEqual(JSON.parse(toolArgs), { location: "Paris" });
    assert.equal(finish, "tool_calls");
    assert.match(mock.last().path, /:streamRawPredict$/);
  });

  test("concurrent first requests share one token fetch", async () => {
    const other = await startApp({ inference: inferenceOptionsFromFile({ vertex: vertexProvider(JSON.stringify(account.json)) }, VIRTUAL_KEYS) });
    const before = mock.issuedTokens.length;
    // Slow answers keep the three requests' token waits overlapping.
    mock.latencyMs = 50;
    try {
      const answers = await Promise.all(
        ["one", "two", "three"].map((text) => sdk(other, VK).chat.completions.create({ model: "vertex/gemini-2.5-flash", messages: [{ role: "user", content: text }] })),
      );
      assert.deepEqual(
        answers.map((a) => a.choices[0]?.message.content),
        ["echo: one", "echo: two", "echo: three"],
      );
      assert.equal(mock.issuedTokens.length - before, 1);
    } finally {
      mock.latencyMs = 0;
      await other.stop();
    }
  });

  test("fetches a new token when the cached one is about to expire", async () => {
    const other = await startApp({ inference: inferenceOptionsFromFile({ vertex: vertexProvider(JSON.stringify(account.json)) }, VIRTUAL_KEYS) });
    const before = mock.issuedTokens.length;
    // A token valid for less than the refresh margin is never reused.
    mock.tokenLifetimeSeconds = 30;
    try {
      for (const text of ["first", "second"]) {
        await sdk(other, VK).chat.completions.create({ model: "vertex/gemini-2.5-flash", messages: [{ role: "user", content: text }] });
      }
      assert.equal(mock.issuedTokens.length - before, 2);
    } finally {
      mock.tokenLifetimeSeconds = 3599;
      await other.stop();
    }
  });

  test("accepts the service account's JSON key as an object", async () => {
    const other = await startApp({ inference: inferenceOptionsFromFile({ vertex: vertexProvider(account.json) }, VIRTUAL_KEYS) });
    try {
      const answer = await sdk(other, VK).chat.completions.create({ model: "vertex/gemini-2.5-flash", messages: [{ role: "user", content: "object key" }] });
      assert.equal(answer.choices[0]?.message.content, "echo: object key");
    } finally {
      await other.stop();
    }
  });

  test("a service account the token endpoint refuses fails as provider_auth", async () => {
    const stranger = withTokenUri(testServiceAccount("stranger"), mock.tokenUri);
    const other = await startApp({ inference: inferenceOptionsFromFile({ vertex: vertexProvider(JSON.stringify(stranger.json)) }, VIRTUAL_KEYS) });
    try {
      const err = await refusal(sdk(other, VK).chat.completions.create({ model: "vertex/gemini-2.5-flash", messages: [{ role: "user", content: "hi" }] }));
      assert.equal(err.status, 502);
      assert.equal(errorType(err), "provider_auth");
      assert.match(err.message, /invalid_grant|refused/);
    } finally {
      await other.stop();
    }
  });

  test("maps an upstream 429 to provider_rate_limited", async () => {
    // Warm the token first, so the failure is the API's and not the token endpoint's.
    await client.chat.completions.create({ model: "vertex/gemini-2.5-flash", messages: [{ role: "user", content: "warm" }] });
    mock.failNext(429, "Quota exceeded for aiplatform.googleapis.com/generate_content_requests_per_minute");
    const err = await refusal(client.chat.completions.create({ model: "vertex/gemini-2.5-flash", messages: [{ role: "user", content: "hi" }] }));
    assert.equal(err.status, 429);
    assert.equal(errorType(err), "provider_rate_limited");
  });
});
