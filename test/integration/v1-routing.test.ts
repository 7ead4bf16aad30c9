/**
 * /v1 provider routing through the real app and the official `openai` SDK, as the mock upstreams see it:
 * Azure deployments, key aliases, weighted provider and key choice over many requests, and the rows of
 * the spec's error table that v1-chat.test.ts leaves out (allowed_models and key_ids deny by default,
 * request fallbacks outside the key's providers, the weight order of governance fallbacks).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import OpenAI from "openai";
import type { ProviderFileConfig, VirtualKeyFileConfig } from "../../src/config/file-config.js";
import type { Random } from "../../src/routing/types.js";
import { seededRandom } from "../../src/routing/weighted-random.js";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { startMockAnthropic } from "../fixtures/mock-anthropic.js";
import { MOCK_TOOL_ARGUMENTS, startMockOpenAi, type MockUpstream, type RecordedRequest } from "../fixtures/mock-openai.js";
import { startApp, type TestApp } from "../helpers/app.js";
import { errorType, refusal } from "../helpers/inference.js";

const WEATHER_TOOL = {
  type: "function" as const,
  function: { name: "get_weather", description: "Weather of a city", parameters: { type: "object", properties: { location: { type: "string" } }, required: ["location"] } },
};

/** A provider key as the config file gives it, with test defaults. */
function fileKey(id: string, value: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { id, name: id, value, ...overrides };
}

/** A provider of the config file at a mock's URL. */
function fileProvider(baseUrl: string | null, ...keys: Record<string, unknown>[]): ProviderFileConfig {
  return { keys, network_config: { base_url: baseUrl ?? "" } };
}

/** A virtual key of the config file. */
function virtualKey(value: string, providerConfigs: Record<string, unknown>[]): VirtualKeyFileConfig {
  return { id: value, name: value, value, provider_configs: providerConfigs };
}

function client(app: TestApp, apiKey: string): OpenAI {
  return new OpenAI({ apiKey, baseURL: `${app.url}/v1`, maxRetries: 0 });
}

/** Runs `once` `total` times with at most `concurrency` in flight (the machine has two cores). */
async function runMany(total: number, once: () => Promise<unknown>, concurrency = 4): Promise<void> {
  let started = 0;
  const worker = async (): Promise<void> => {
    while (started < total) {
      started++;
      await once();
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

/** Fails unless `hits` of `total` draws lie within 5 binomial standard deviations of probability `p`. */
function assertShareNear(hits: number, total: number, p: number): void {
  const sd = Math.sqrt((p * (1 - p)) / total);
  const share = hits / total;
  assert.ok(Math.abs(share - p) <= 5 * sd, `share ${share.toFixed(3)} of ${total} is more than 5 sd (${(5 * sd).toFixed(3)}) from ${p}`);
}

describe("Azure through the SDK", () => {
  const VK = "sk-gw-azure";
  let azure: MockUpstream;
  let app: TestApp;

  before(async () => {
    azure = await startMockOpenAi();
    const azureKeyConfig = { endpoint: azure.url, deployments: { "gpt-4o": "my-gpt4o" }, api_version: "2024-10-21" };
    const inference = inferenceOptionsFromFile(
      // No base_url: the key's endpoint is where Azure requests go.
      { azure: fileProvider(null, fileKey("az-1", "azure-secret", { azure_key_config: azureKeyConfig })) },
      [virtualKey(VK, [{ provider: "azure", allowed_models: ["gpt-4o"], key_ids: ["*"], weight: 1 }])],
    );
    app = await startApp({ inference });
  });

  after(async () => {
    await app?.stop();
    await azure?.close();
  });

  function assertDeploymentRequest(request: RecordedRequest): void {
    assert.equal(request.path, "/openai/deployments/my-gpt4o/chat/completions");
    assert.equal(request.query["api-version"], "2024-10-21");
    assert.equal(request.headers["api-key"], "azure-secret");
  }

  test("completes a chat at the key's deployment with api-version and api-key", async () => {
    const completion = await client(app, VK).chat.completions.create({ model: "azure/gpt-4o", messages: [{ role: "user", content: "hello azure" }] });
    assert.equal(completion.choices[0]?.message.content, "echo: hello azure");
    assertDeploymentRequest(azure.last());
  });

  test("streams a chat from the key's deployment with api-version and api-key", async () => {
    const stream = await client(app, VK).chat.completions.create({ model: "azure/gpt-4o", stream: true, messages: [{ role: "user", content: "one two three" }] });
    let text = "";
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
    assert.equal(text, "echo: one two three");
    assertDeploymentRequest(azure.last());
    assert.equal(azure.last().body?.["stream"], true);
  });

  test("returns a tool call from the key's deployment with api-version and api-key", async () => {
    const completion = await client(app, VK).chat.completions.create({ model: "azure/gpt-4o", tools: [WEATHER_TOOL], messages: [{ role: "user", content: "weather in Paris?" }] });
    const call = completion.choices[0]?.message.tool_calls?.[0];
    assert.equal(completion.choices[0]?.finish_reason, "tool_calls");
    assert.ok(call && call.type === "function");
    assert.equal(call.function.name, "get_weather");
    assert.deepEqual(JSON.parse(call.function.arguments), JSON.parse(MOCK_TOOL_ARGUMENTS));
    assertDeploymentRequest(azure.last());
  });

  test("never sends the caller's virtual key to Azure", async () => {
    await client(app, VK).chat.completions.create({ model: "azure/gpt-4o", messages: [{ role: "user", content: "hi" }] });
    const headers = azure.last().headers;
    assert.ok(!Object.values(headers).some((value) => value.includes(VK)), "the virtual key reached the upstream");
  });
});

describe("key aliases", () => {
  const VK = "sk-gw-alias";
  let openai: MockUpstream;
  let anthropic: MockUpstream;
  let app: TestApp;

  before(async () => {
    openai = await startMockOpenAi();
    anthropic = await startMockAnthropic();
    const inference = inferenceOptionsFromFile(
      {
        openai: fileProvider(openai.url, fileKey("oa-1", "sk-openai-1", { aliases: { fast: "gpt-4o-mini-2024-07-18" } })),
        // `models` is restricted and does not list the alias, so the alias must stay unreachable.
        anthropic: fileProvider(anthropic.url, fileKey("an-1", "sk-ant-1", { models: ["claude-sonnet-4-5"], aliases: { sonnet: "claude-sonnet-4-5-20250929" } })),
      },
      [
        virtualKey(VK, [
          { provider: "openai", allowed_models: ["fast"], key_ids: ["*"], weight: 1 },
          // The virtual key allows the alias, so only the provider key's rule can refuse it.
          { provider: "anthropic", allowed_models: ["claude-sonnet-4-5", "sonnet"], key_ids: ["*"], weight: 1 },
        ]),
      ],
    );
    app = await startApp({ inference });
  });

  after(async () => {
    await app?.stop();
    await openai?.close();
    await anthropic?.close();
  });

  test("sends the upstream the id an alias maps to", async () => {
    const completion = await client(app, VK).chat.completions.create({ model: "openai/fast", messages: [{ role: "user", content: "quick" }] });
    assert.equal(completion.choices[0]?.message.content, "echo: quick");
    assert.equal(openai.last().body?.["model"], "gpt-4o-mini-2024-07-18");
  });

  test("refuses an alias missing from the key's restricted models list with a 400", async () => {
    const before = anthropic.requests.length;
    const err = await refusal(client(app, VK).chat.completions.create({ model: "anthropic/sonnet", messages: [{ role: "user", content: "hi" }] }));
    assert.equal(err.status, 400);
    assert.equal(errorType(err), "caller_model_not_allowed");
    assert.equal(anthropic.requests.length, before, "the upstream was called");
  });
});

describe("weighted selection", () => {
  const TOTAL = 400;
  const PROVIDER_SPLIT = "sk-gw-split";
  const KEY_SPLIT = "sk-gw-keys";
  let openai: MockUpstream;
  let anthropic: MockUpstream;
  let app: TestApp;

  before(async () => {
    openai = await startMockOpenAi();
    anthropic = await startMockAnthropic();
    const inference = inferenceOptionsFromFile(
      {
        openai: fileProvider(openai.url, fileKey("oa-light", "sk-light", { weight: 1 }), fileKey("oa-heavy", "sk-heavy", { weight: 3 })),
        anthropic: fileProvider(anthropic.url, fileKey("an-1", "sk-ant-1")),
      },
      [
        virtualKey(PROVIDER_SPLIT, [
          { provider: "openai", allowed_models: ["house-model"], key_ids: ["*"], weight: 3 },
          { provider: "anthropic", allowed_models: ["house-model"], key_ids: ["*"], weight: 1 },
        ]),
        virtualKey(KEY_SPLIT, [{ provider: "openai", allowed_models: ["gpt-4o-mini"], key_ids: ["*"], weight: 1 }]),
      ],
    );
    // No seeded random: the bound must hold for the dice production uses.
    app = await startApp({ inference });
  });

  after(async () => {
    await app?.stop();
    await openai?.close();
    await anthropic?.close();
  });

  test("sends a bare model to providers in proportion to their weights", async () => {
    const openaiBefore = openai.requests.length;
    const anthropicBefore = anthropic.requests.length;
    const sdk = client(app, PROVIDER_SPLIT);
    await runMany(TOTAL, () => sdk.chat.completions.create({ model: "house-model", messages: [{ role: "user", content: "hi" }] }));
    const toOpenai = openai.requests.length - openaiBefore;
    assert.equal(toOpenai + anthropic.requests.length - anthropicBefore, TOTAL);
    assertShareNear(toOpenai, TOTAL, 0.75);
  });

  test("spreads one provider's requests over its keys in proportion to their weights", async () => {
    const start = openai.requests.length;
    const sdk = client(app, KEY_SPLIT);
    await runMany(TOTAL, () => sdk.chat.completions.create({ model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "hi" }] }));
    const seen = openai.requests.slice(start).map((request) => request.headers["authorization"]);
    assert.equal(seen.length, TOTAL);
    assert.ok(seen.every((value) => value === "Bearer sk-heavy" || value === "Bearer sk-light"), "a request carried neither key");
    assertShareNear(seen.filter((value) => value === "Bearer sk-heavy").length, TOTAL, 0.75);
  });
});

describe("routing refusals and fallbacks", () => {
  const LISTS = "sk-gw-lists";
  const NO_MODELS = "sk-gw-no-models";
  const ONLY_NO_MODELS = "sk-gw-only-no-models";
  const NO_KEYS = "sk-gw-no-keys";
  const OPENAI_ONLY = "sk-gw-openai-only";
  const THREE = "sk-gw-three";
  const GHOST_FIRST = "sk-gw-ghost-first";
  let openai: MockUpstream;
  let anthropic: MockUpstream;
  let spare: MockUpstream;
  let app: TestApp;
  let dice: Random = seededRandom(20240);

  const all = { allowed_models: ["*"], key_ids: ["*"], weight: 1 };

  before(async () => {
    openai = await startMockOpenAi();
    anthropic = await startMockAnthropic();
    spare = await startMockOpenAi();
    const inference = inferenceOptionsFromFile(
      {
        openai: fileProvider(openai.url, fileKey("oa-1", "sk-openai-1")),
        anthropic: fileProvider(anthropic.url, fileKey("an-1", "sk-ant-1")),
        // Any other name is a custom OpenAI-compatible provider: a third upstream for the fallback order.
        spare: fileProvider(spare.url, fileKey("sp-1", "sk-spare-1")),
      },
      [
        virtualKey(LISTS, [
          { provider: "openai", allowed_models: ["gpt-4o-mini"], key_ids: ["*"], weight: 1 },
          { provider: "anthropic", allowed_models: ["claude-sonnet-4-5"], key_ids: ["*"], weight: 1 },
        ]),
        virtualKey(NO_MODELS, [{ provider: "openai", allowed_models: [], key_ids: ["*"], weight: 1 }, { provider: "anthropic", ...all }]),
        virtualKey(ONLY_NO_MODELS, [{ provider: "openai", allowed_models: [], key_ids: ["*"], weight: 1 }]),
        virtualKey(NO_KEYS, [{ provider: "openai", allowed_models: ["*"], key_ids: [], weight: 1 }, { provider: "anthropic", ...all }]),
        virtualKey(OPENAI_ONLY, [{ provider: "openai", ...all }]),
        // Listed in ascending weight, so the descending fallback order differs from the configured one
        // whichever provider the weighted draw picks first.
        virtualKey(THREE, [
          { provider: "openai", allowed_models: ["house-model"], key_ids: ["*"], weight: 1 },
          { provider: "anthropic", allowed_models: ["house-model"], key_ids: ["*"], weight: 2 },
          { provider: "spare", allowed_models: ["house-model"], key_ids: ["*"], weight: 5 },
        ]),
        // "ghost" names no provider of this gateway; its weight makes it the first pick for most draws.
        virtualKey(GHOST_FIRST, [
          { provider: "openai", ...all },
          { provider: "ghost", allowed_models: ["gpt-4o-mini"], key_ids: ["*"], weight: 5 },
        ]),
      ],
    );
    // Seeded so a failing run can be replayed; the fallback-order test swaps in fixed draws.
    app = await startApp({ inference: { ...inference, random: () => dice() } });
  });

  after(async () => {
    await app?.stop();
    await openai?.close();
    await anthropic?.close();
    await spare?.close();
  });

  /** Request counts of every mock, to show a refusal reached no upstream. */
  function upstreamCalls(): number {
    return openai.requests.length + anthropic.requests.length + spare.requests.length;
  }

  test("refuses a model no provider config of the key allows with a 400", async () => {
    const before = upstreamCalls();
    const err = await refusal(client(app, LISTS).chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "hi" }] }));
    assert.equal(err.status, 400);
    assert.equal(errorType(err), "caller_model_not_allowed");
    assert.match(err.message, /not allowed for any provider/);
    assert.equal(upstreamCalls(), before);
  });

  test("refuses a provider whose config has allowed_models [] with a 400", async () => {
    const before = upstreamCalls();
    const err = await refusal(client(app, NO_MODELS).chat.completions.create({ model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "hi" }] }));
    assert.equal(err.status, 400);
    assert.equal(errorType(err), "policy_provider_not_allowed");
    assert.equal(upstreamCalls(), before);
  });

  test("refuses every model when the key's only config has allowed_models [] with a 400", async () => {
    const before = upstreamCalls();
    const err = await refusal(client(app, ONLY_NO_MODELS).chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] }));
    assert.equal(err.status, 400);
    assert.equal(errorType(err), "policy_no_providers");
    assert.equal(upstreamCalls(), before);
  });

  test("refuses a provider whose config has key_ids [] with a 400", async () => {
    const before = upstreamCalls();
    const err = await refusal(client(app, NO_KEYS).chat.completions.create({ model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "hi" }] }));
    assert.equal(err.status, 400);
    assert.equal(errorType(err), "policy_provider_not_allowed");
    assert.match(err.message, /blocked/);
    assert.equal(upstreamCalls(), before);
  });

  test("serves a request whose fallbacks name a provider outside the key's set", async () => {
    const params = { model: "openai/gpt-4o-mini", fallbacks: ["anthropic/claude-sonnet-4-5"], messages: [{ role: "user" as const, content: "fine" }] };
    const completion = await client(app, OPENAI_ONLY).chat.completions.create(params);
    assert.equal(completion.choices[0]?.message.content, "echo: fine");
  });

  test("drops a fallback outside the key's set and returns the primary's error when the primary fails", async () => {
    const anthropicBefore = anthropic.requests.length;
    openai.failNext(500, "openai broke");
    const params = { model: "openai/gpt-4o-mini", fallbacks: ["anthropic/claude-sonnet-4-5"], messages: [{ role: "user" as const, content: "rescue me" }] };
    const err = await refusal(client(app, OPENAI_ONLY).chat.completions.create(params));
    assert.equal(err.status, 502);
    assert.equal(errorType(err), "provider_unavailable");
    assert.match(err.message, /openai broke/);
    assert.equal(anthropic.requests.length, anthropicBefore, "the dropped fallback was called");
  });

  test("tries the key's other providers by weight descending after the weighted pick fails", async () => {
    const mocks = new Map([
      ["openai", openai],
      ["anthropic", anthropic],
      ["spare", spare],
    ]);
    const byWeight = ["spare", "anthropic", "openai"];
    const firstPicks = new Set<string>();
    // Draws spread over [0, 1) so the weighted pick (1:2:5) lands on each provider in some round.
    for (const draw of [0.05, 0.25, 0.9]) {
      dice = () => draw;
      const since = Math.max(0, ...[...mocks.values()].map((mock) => mock.requests.at(-1)?.sequence ?? 0));
      for (const [name, mock] of mocks) mock.failNext(500, `${name} broke`);
      const err = await refusal(client(app, THREE).chat.completions.create({ model: "house-model", messages: [{ role: "user", content: "hi" }] }));
      const calls = [...mocks]
        .flatMap(([name, mock]) => mock.requests.filter((r) => r.sequence > since).map((r) => ({ name, sequence: r.sequence })))
        .sort((a, b) => a.sequence - b.sequence)
        .map((call) => call.name);
      const [first] = calls;
      assert.ok(first !== undefined, "no upstream was called");
      firstPicks.add(first);
      assert.deepEqual(calls, [first, ...byWeight.filter((name) => name !== first)]);
      assert.equal(err.status, 502);
      assert.equal(errorType(err), "provider_unavailable");
      assert.match(err.message, new RegExp(`${first} broke`), "the answer is not the first pick's error");
    }
    dice = seededRandom(20240);
    assert.equal(firstPicks.size, 3, `the draws picked only ${[...firstPicks].join(", ")} first; the order was not shown for every pick`);
  });

  test("falls through a target whose provider is not configured to the next one", async () => {
    dice = () => 0.9;
    try {
      const before = openai.requests.length;
      const completion = await client(app, GHOST_FIRST).chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "past the ghost" }] });
      assert.equal(completion.choices[0]?.message.content, "echo: past the ghost");
      assert.equal(openai.requests.length, before + 1);
    } finally {
      dice = seededRandom(20240);
    }
  });
});
