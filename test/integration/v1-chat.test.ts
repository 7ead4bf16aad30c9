/**
 * POST /v1/chat/completions through the real app and the official `openai` SDK, against the mock OpenAI
 * and Anthropic upstreams: chats, streams and tool calls, the routing errors, key rotation, fallbacks and
 * a client that leaves mid-stream.
 */
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import OpenAI from "openai";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { MOCK_TOOL_INPUT, startMockAnthropic } from "../fixtures/mock-anthropic.js";
import { MOCK_TOOL_ARGUMENTS, startMockOpenAi, type MockUpstream } from "../fixtures/mock-openai.js";
import { startApp, type TestApp } from "../helpers/app.js";
import { errorType, refusal } from "../helpers/inference.js";
import { eventually } from "../helpers/provider-keys.js";

const WEATHER_TOOL = {
  type: "function" as const,
  function: { name: "get_weather", description: "Weather of a city", parameters: { type: "object", properties: { location: { type: "string" } }, required: ["location"] } },
};

const ALL = "sk-gw-all";
const OPENAI_ONLY = "sk-gw-openai-only";
const NO_PROVIDERS = "sk-gw-no-providers";
const INACTIVE = "sk-gw-inactive";

let openai: MockUpstream;
let anthropic: MockUpstream;
let app: TestApp;

function client(apiKey: string | null): OpenAI {
  // A null Authorization sends no credential at all (routing without governance).
  return new OpenAI({ apiKey: apiKey ?? "unused", baseURL: `${app.url}/v1`, maxRetries: 0, ...(apiKey === null ? { defaultHeaders: { authorization: null } } : {}) });
}

before(async () => {
  openai = await startMockOpenAi();
  anthropic = await startMockAnthropic();
  const openaiConfig = { provider: "openai", allowed_models: ["gpt-4o-mini"], key_ids: ["*"], weight: 1 };
  const anthropicConfig = { provider: "anthropic", allowed_models: ["claude-sonnet-4-5"], key_ids: ["*"], weight: 1 };
  const inference = inferenceOptionsFromFile(
    {
      openai: {
        keys: [
          { id: "oa-1", name: "first", value: "sk-openai-1", models: [], aliases: {}, weight: 1 },
          { id: "oa-2", name: "second", value: "sk-openai-2", models: [], aliases: {}, weight: 1 },
        ],
        network_config: { base_url: openai.url },
      },
      anthropic: {
        keys: [{ id: "an-1", name: "main", value: "sk-ant-1", models: [], aliases: {}, weight: 1 }],
        network_config: { base_url: anthropic.url },
      },
    },
    [
      { id: "vk-all", name: "all", value: ALL, is_active: true, provider_configs: [openaiConfig, anthropicConfig] },
      { id: "vk-openai", name: "openai-only", value: OPENAI_ONLY, provider_configs: [openaiConfig] },
      { id: "vk-none", name: "no-providers", value: NO_PROVIDERS, provider_configs: [] },
      { id: "vk-off", name: "inactive", value: INACTIVE, is_active: false, provider_configs: [openaiConfig] },
    ],
  );
  app = await startApp({ inference });
});

after(async () => {
  await app?.stop();
  await openai?.close();
  await anthropic?.close();
});

beforeEach(() => {
  openai.hangStreams = false;
  anthropic.hangStreams = false;
});

for (const [provider, model] of [
  ["openai", "openai/gpt-4o-mini"],
  ["anthropic", "anthropic/claude-sonnet-4-5"],
] as const) {
  describe(`against mock ${provider}`, () => {
    test("completes a chat", async () => {
      const completion = await client(ALL).chat.completions.create({ model, messages: [{ role: "user", content: "hello there" }] });
      assert.equal(completion.choices[0]?.message.content, "echo: hello there");
      assert.ok((completion.usage?.prompt_tokens ?? 0) > 0);
    });

    test("streams a chat", async () => {
      const stream = await client(ALL).chat.completions.create({ model, stream: true, messages: [{ role: "user", content: "one two three" }] });
      let text = "";
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
      assert.equal(text, "echo: one two three");
    });

    test("returns a tool call", async () => {
      const completion = await client(ALL).chat.completions.create({ model, tools: [WEATHER_TOOL], messages: [{ role: "user", content: "weather in Paris?" }] });
      const call = completion.choices[0]?.message.tool_calls?.[0];
      assert.equal(completion.choices[0]?.finish_reason, "tool_calls");
      assert.ok(call && call.type === "function");
      assert.equal(call.function.name, "get_weather");
      assert.deepEqual(JSON.parse(call.function.arguments), JSON.parse(provider === "openai" ? MOCK_TOOL_ARGUMENTS : MOCK_TOOL_INPUT));
    });
  });
}

test("sends the upstream the model without the provider prefix", async () => {
  await client(ALL).chat.completions.create({ model: "anthropic/claude-sonnet-4-5", messages: [{ role: "user", content: "hi" }] });
  assert.equal(anthropic.last().body?.["model"], "claude-sonnet-4-5");
});

test("refuses a bare model no provider serves with a 400 asking for provider/model", async () => {
  const err = await refusal(client(null).chat.completions.create({ model: "mystery-model", messages: [{ role: "user", content: "hi" }] }));
  assert.equal(err.status, 400);
  assert.equal(errorType(err), "caller_provider_required");
  assert.match(err.message, /<provider>\/<model>/);
});

test("refuses a provider outside the key's allowed set named by prefix with a 400", async () => {
  const err = await refusal(client(OPENAI_ONLY).chat.completions.create({ model: "anthropic/claude-sonnet-4-5", messages: [{ role: "user", content: "hi" }] }));
  assert.equal(err.status, 400);
  assert.equal(errorType(err), "policy_provider_not_allowed");
});

test("refuses a bare model only a provider outside the key's allowed set serves with a 400", async () => {
  const err = await refusal(client(OPENAI_ONLY).chat.completions.create({ model: "claude-sonnet-4-5", messages: [{ role: "user", content: "hi" }] }));
  assert.equal(err.status, 400);
  assert.match(err.message, /not allowed/);
});

test("refuses every model for a key with empty provider_configs with a 400", async () => {
  const err = await refusal(client(NO_PROVIDERS).chat.completions.create({ model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "hi" }] }));
  assert.equal(err.status, 400);
  assert.equal(errorType(err), "policy_no_providers");
});

test("refuses an unknown virtual key with a 401", async () => {
  const err = await refusal(client("sk-gw-nobody").chat.completions.create({ model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "hi" }] }));
  assert.equal(err.status, 401);
  assert.equal(errorType(err), "caller_unknown_virtual_key");
});

test("refuses an inactive virtual key", async () => {
  const err = await refusal(client(INACTIVE).chat.completions.create({ model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "hi" }] }));
  assert.equal(err.status, 403);
  assert.equal(errorType(err), "policy_virtual_key_inactive");
});

test("answers a missing messages list with a 400 in the OpenAI envelope", async () => {
  const res = await fetch(`${app.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${ALL}` },
    body: JSON.stringify({ model: "openai/gpt-4o-mini" }),
  });
  assert.equal(res.status, 400);
  const body = (await res.json()) as { error: Record<string, unknown> };
  assert.equal(body.error["type"], "caller_invalid_request");
  assert.equal(body.error["param"], "messages");
  assert.equal(typeof body.error["message"], "string");
  assert.ok("code" in body.error);
});

test("rotates to the second key when the first answers 429", async () => {
  const before = openai.requests.length;
  openai.failNext(429, "slow down");
  const completion = await client(ALL).chat.completions.create({ model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "again" }] });
  assert.equal(completion.choices[0]?.message.content, "echo: again");
  const tried = openai.requests.slice(before).map((r) => r.headers["authorization"]);
  assert.equal(tried.length, 2);
  assert.notEqual(tried[0], tried[1]);
});

test("falls back to the next provider when the first fails", async () => {
  openai.failNext(500, "upstream broke");
  const params = {
    model: "openai/gpt-4o-mini",
    fallbacks: ["anthropic/claude-sonnet-4-5"],
    messages: [{ role: "user" as const, content: "rescue me" }],
  };
  const completion = await client(ALL).chat.completions.create(params);
  assert.equal(completion.choices[0]?.message.content, "echo: rescue me");
  assert.equal(anthropic.last().body?.["model"], "claude-sonnet-4-5");
});

test("frees the upstream stream when the client disconnects mid-stream", async () => {
  openai.hangStreams = true;
  const abortedBefore = openai.abortedStreams;
  const stream = await client(ALL).chat.completions.create({ model: "openai/gpt-4o-mini", stream: true, messages: [{ role: "user", content: "never ending" }] });
  for await (const chunk of stream) {
    if (chunk.choices[0]?.delta.content) break;
  }
  assert.ok(await eventually(() => openai.openStreams === 0), "the upstream stream is still open");
  assert.equal(openai.abortedStreams, abortedBefore + 1);
});
