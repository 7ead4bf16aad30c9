/**
 * POST /v1/responses through the real app and the official `openai` SDK, against the mock OpenAI upstream
 * (its own Responses endpoint) and the mock Anthropic one (through the Responses bridge): text answers,
 * streams, a function tool call, body checks, fallbacks, the `method` metric label, a client that leaves
 * mid-stream and an upstream that fails mid-stream.
 */
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import OpenAI from "openai";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { MOCK_TOOL_INPUT, startMockAnthropic } from "../fixtures/mock-anthropic.js";
import { startMockOpenAi, type MockUpstream } from "../fixtures/mock-openai.js";
import { startApp, type TestApp } from "../helpers/app.js";
import { parseExposition, total, type Sample } from "../helpers/exposition.js";
import { eventually } from "../helpers/provider-keys.js";

const WEATHER_TOOL = {
  type: "function" as const,
  name: "get_weather",
  description: "Weather of a city",
  parameters: { type: "object", properties: { location: { type: "string" } }, required: ["location"] },
  strict: false,
};

const ALL = "sk-gw-all";

let openai: MockUpstream;
let anthropic: MockUpstream;
let app: TestApp;

function client(on: TestApp = app): OpenAI {
  return new OpenAI({ apiKey: ALL, baseURL: `${on.url}/v1`, maxRetries: 0 });
}

function inferenceOptions(network: Record<string, unknown> = {}) {
  const openaiConfig = { provider: "openai", allowed_models: ["gpt-4o-mini"], key_ids: ["*"], weight: 1 };
  const anthropicConfig = { provider: "anthropic", allowed_models: ["claude-sonnet-4-5"], key_ids: ["*"], weight: 1 };
  return inferenceOptionsFromFile(
    {
      openai: {
        keys: [{ id: "oa-1", name: "main", value: "sk-openai-1", models: [], aliases: {}, weight: 1, azureKeyConfig: null, bedrockKeyConfig: null, vertexKeyConfig: null }],
        network_config: { base_url: openai.url, ...network },
      },
      anthropic: {
        keys: [{ id: "an-1", name: "main", value: "sk-ant-1", models: [], aliases: {}, weight: 1, azureKeyConfig: null, bedrockKeyConfig: null, vertexKeyConfig: null }],
        network_config: { base_url: anthropic.url },
      },
    },
    [{ id: "vk-all", name: "all", value: ALL, is_active: true, provider_configs: [openaiConfig, anthropicConfig] }],
  );
}

async function scrape(): Promise<Sample[]> {
  const res = await fetch(`${app.url}/metrics`);
  assert.equal(res.status, 200);
  return parseExposition(await res.text());
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

beforeEach(() => {
  openai.hangStreams = false;
  anthropic.hangStreams = false;
});

for (const [provider, model] of [
  ["openai", "openai/gpt-4o-mini"],
  ["anthropic", "anthropic/claude-sonnet-4-5"],
] as const) {
  describe(`against mock ${provider}`, () => {
    test("answers with text", async () => {
      const response = await client().responses.create({ model, input: "hello there" });
      assert.equal(response.object, "response");
      assert.equal(response.status, "completed");
      assert.equal(response.output_text, "echo: hello there");
      assert.ok((response.usage?.input_tokens ?? 0) > 0);
    });

    test("streams text as Responses events ending in response.completed", async () => {
      const stream = await client().responses.create({ model, input: "one two three", stream: true });
      let text = "";
      let completed: OpenAI.Responses.Response | null = null;
      for await (const event of stream) {
        if (event.type === "response.output_text.delta") text += event.delta;
        if (event.type === "response.completed") completed = event.response;
      }
      assert.equal(text, "echo: one two three");
      assert.ok(completed, "no response.completed event");
      assert.equal(completed.status, "completed");
      const item = completed.output[0];
      assert.ok(item && item.type === "message");
      assert.deepEqual(item.content.map((part) => (part.type === "output_text" ? part.text : "")), ["echo: one two three"]);
    });
  });
}

// The mock OpenAI's Responses route only ever answers with text, so the tool call goes through the bridge.
test("returns a function tool call as a function_call output item", async () => {
  const response = await client().responses.create({ model: "anthropic/claude-sonnet-4-5", input: "weather in Paris?", tools: [WEATHER_TOOL] });
  const call = response.output.find((item) => item.type === "function_call");
  assert.ok(call && call.type === "function_call", JSON.stringify(response.output));
  assert.equal(call.name, "get_weather");
  assert.ok(call.call_id !== "");
  assert.deepEqual(JSON.parse(call.arguments), JSON.parse(MOCK_TOOL_INPUT));
});

test("sends the upstream the model without the provider prefix and the request fields unchanged", async () => {
  await client().responses.create({ model: "openai/gpt-4o-mini", input: "hi", instructions: "be brief", temperature: 0.5 });
  const body = openai.last().body;
  assert.equal(openai.last().path, "/v1/responses");
  assert.equal(body?.["model"], "gpt-4o-mini");
  assert.equal(body?.["instructions"], "be brief");
  assert.equal(body?.["temperature"], 0.5);
});

test("answers a missing input with a 400 naming input in the OpenAI envelope", async () => {
  const res = await fetch(`${app.url}/v1/responses`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${ALL}` },
    body: JSON.stringify({ model: "openai/gpt-4o-mini" }),
  });
  assert.equal(res.status, 400);
  const body = (await res.json()) as { error: Record<string, unknown> };
  assert.equal(body.error["type"], "caller_invalid_request");
  assert.equal(body.error["param"], "input");
  assert.equal(typeof body.error["message"], "string");
  assert.ok("code" in body.error);
});

test("answers an empty input list with a 400 naming input", async () => {
  const err = await client()
    .responses.create({ model: "openai/gpt-4o-mini", input: [] })
    .then(
      () => assert.fail("the request succeeded but should have been refused"),
      (e: unknown) => e,
    );
  assert.ok(err instanceof OpenAI.BadRequestError);
  assert.equal((err.error as { param?: unknown } | undefined)?.param, "input");
});

test("answers GET /v1/responses with a 405 that allows POST", async () => {
  const res = await fetch(`${app.url}/v1/responses`, { headers: { authorization: `Bearer ${ALL}` } });
  assert.equal(res.status, 405);
  assert.equal(res.headers.get("allow"), "POST");
  await res.body?.cancel();
});

test("falls back to the next provider when the first fails", async () => {
  openai.failNext(500, "upstream broke");
  // `fallbacks` is a gateway field the SDK's types do not know; a variable skips the excess-property check.
  const params = { model: "openai/gpt-4o-mini", fallbacks: ["anthropic/claude-sonnet-4-5"], input: "rescue me" };
  const response = await client().responses.create(params);
  assert.equal(response.output_text, "echo: rescue me");
  assert.equal(anthropic.last().body?.["model"], "claude-sonnet-4-5");
});

test("labels the inference metrics with method=responses", async () => {
  const before = await scrape();
  await client().responses.create({ model: "openai/gpt-4o-mini", input: "count me" });
  const samples = await scrape();
  const match = { provider: "openai", model: "gpt-4o-mini" };
  const delta = (name: string, method: string) => total(samples, name, { ...match, method }) - total(before, name, { ...match, method });
  assert.equal(delta("gw_upstream_requests_total", "responses"), 1);
  assert.equal(delta("gw_success_requests_total", "responses"), 1);
  assert.ok(delta("gw_output_tokens_total", "responses") > 0);
  assert.equal(delta("gw_upstream_requests_total", "chat"), 0);
});

test("frees the upstream stream when the client disconnects mid-stream", async () => {
  openai.hangStreams = true;
  const abortedBefore = openai.abortedStreams;
  const stream = await client().responses.create({ model: "openai/gpt-4o-mini", input: "never ending", stream: true });
  for await (const event of stream) {
    if (event.type === "response.output_text.delta") break;
  }
  assert.ok(await eventually(() => openai.openStreams === 0), "the upstream stream is still open");
  assert.equal(openai.abortedStreams, abortedBefore + 1);
});

describe("with an upstream that stalls mid-stream", () => {
  let stalling: TestApp;

  before(async () => {
    // A short stream idle timeout turns the mock's held-open stream into a failure after the headers went out.
    stalling = await startApp({ inference: inferenceOptions({ stream_idle_timeout_in_seconds: 1 }) });
  });
  after(async () => {
    await stalling?.stop();
  });

  test("raises the failure in the SDK as an API error after the events already sent", async () => {
    openai.hangStreams = true;
    const stream = await client(stalling).responses.create({ model: "openai/gpt-4o-mini", input: "stall here", stream: true });
    const seen: string[] = [];
    let failure: unknown = null;
    try {
      for await (const event of stream) seen.push(event.type);
    } catch (err) {
      failure = err;
    }
    assert.ok(seen.includes("response.output_text.delta"), seen.join(","));
    assert.ok(failure instanceof OpenAI.APIError, String(failure));
    assert.equal((failure.error as { type?: unknown } | undefined)?.type, "provider_timeout");
  });
});
