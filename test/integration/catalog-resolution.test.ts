/**
 * The model-catalog resolver through the real server with the OpenAI SDK: bare models resolved across
 * providers (the upstream receiving the provider's own id), the `model-catalog` routing log entry, the
 * /anthropic integration's preference for anthropic, and a virtual key's providers bounding the candidates.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { after, before, describe, test } from "node:test";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { startMockAnthropic } from "../fixtures/mock-anthropic.js";
import { startMockBedrock, type MockBedrock } from "../fixtures/mock-bedrock.js";
import { startMockOpenAi, type MockUpstream } from "../fixtures/mock-openai.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { errorType, fileKey, refusal, sdk } from "../helpers/inference.js";

const DATASHEET = {
  "openrouter/openai/gpt-cross": { litellm_provider: "openrouter", mode: "chat", input_cost_per_token: 1e-6, output_cost_per_token: 2e-6 },
  "groq/openai/gpt-oss-cross": { litellm_provider: "groq", mode: "chat", input_cost_per_token: 1e-7, output_cost_per_token: 2e-7 },
  "claude-cross": { litellm_provider: "anthropic", mode: "chat", input_cost_per_token: 3e-6, output_cost_per_token: 1.5e-5 },
};

const AWS = { accessKey: "AKIAMOCKKEY", secretKey: "mock-secret-key", sessionToken: "mock-session-token", region: "eu-west-1" };
const BEDROCK_ID = "us.anthropic.claude-host-x-20250101-v1:0";

describe("cross-provider resolution of bare models", () => {
  let dir: string;
  let openrouter: MockUpstream;
  let groq: MockUpstream;
  let acme: MockUpstream;
  let anthropic: MockUpstream;
  let bedrock: MockBedrock;
  let app: TestApp;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "gw-catalog-"));
    const file = join(dir, "prices.json");
    await writeFile(file, JSON.stringify(DATASHEET));
    [openrouter, groq, acme, anthropic] = await Promise.all([startMockOpenAi(), startMockOpenAi(), startMockOpenAi(), startMockAnthropic()]);
    bedrock = await startMockBedrock(AWS);
    const providers = {
      openrouter: { keys: [fileKey("or")], network_config: { base_url: openrouter.url } },
      groq: { keys: [fileKey("gq")], network_config: { base_url: groq.url } },
      // Sorts before anthropic, so it is the first direct candidate of claude-cross.
      acme: { keys: [fileKey("ac", { models: ["claude-cross"] })], network_config: { base_url: acme.url } },
      anthropic: { keys: [fileKey("an")], network_config: { base_url: anthropic.url } },
      bedrock: {
        keys: [{ id: "br", name: "br", models: [BEDROCK_ID], bedrock_key_config: { access_key: AWS.accessKey, secret_key: AWS.secretKey, session_token: AWS.sessionToken, region: AWS.region } }],
        network_config: { base_url: bedrock.url },
      },
    };
    app = await startApp({
      inference: inferenceOptionsFromFile(providers, []),
      pricing: { url: pathToFileURL(file).href, syncIntervalMs: 86_400_000 },
      // Level-1 load balancing would pick among the candidates by score; these tests watch the resolver alone.
      loadBalancer: { directionSelectionEnabled: false, routeSelectionEnabled: true, appendFallbacksToPinned: false, rerouteFailedDirections: false, pruneFailedFallbacks: false },
    });
  });
  after(async () => {
    await app.stop();
    await Promise.all([openrouter, groq, acme, anthropic, bedrock].map((m) => m.close()));
    await rm(dir, { recursive: true, force: true });
  });

  // The last chat call: list-models calls of the start-up run in the background and may come later.
  function upstreamModel(mock: MockUpstream): unknown {
    const calls = mock.requests.filter((r) => r.method === "POST");
    return (calls[calls.length - 1]?.body as { model?: unknown } | undefined)?.model;
  }

  test("an aggregator that lists vendor/model serves a bare model under its own id", async () => {
    const completion = await sdk(app, null).chat.completions.create({ model: "gpt-cross", messages: [{ role: "user", content: "hi" }] });
    assert.equal(completion.choices[0]?.message.content, "echo: hi");
    assert.equal(upstreamModel(openrouter), "openai/gpt-cross");
  });

  test("a fast-inference provider that lists vendor/model serves the vendor's model", async () => {
    await sdk(app, null).chat.completions.create({ model: "gpt-oss-cross", messages: [{ role: "user", content: "hi" }] });
    assert.equal(upstreamModel(groq), "openai/gpt-oss-cross");
  });

  test("a cloud model host serves a bare model its id contains after a dotted vendor prefix", async () => {
    await sdk(app, null).chat.completions.create({ model: "claude-host-x", messages: [{ role: "user", content: "hi" }] });
    const converse = bedrock.requests.filter((r) => r.method === "POST");
    const path = decodeURIComponent(converse[converse.length - 1]?.path ?? "");
    assert.ok(path.includes(`/model/${BEDROCK_ID}/`), path);
  });

  test("the resolver writes a model-catalog routing log entry with the model, its options and the selected provider", async () => {
    await sdk(app, null).chat.completions.create({ model: "gpt-cross", messages: [{ role: "user", content: "log" }] });
    const res = await api(app, "GET", "/api/governance/routing-log?limit=1");
    const [entry] = res.body.entries;
    assert.deepEqual(entry.engines, ["model-catalog"]);
    assert.equal(entry.provider, "openrouter");
    assert.equal(entry.model, "openai/gpt-cross");
    assert.match(entry.message, /^model-catalog: model "gpt-cross" has 1 catalog option \[openrouter \(aggregator: openai\/gpt-cross\)\]; selected provider "openrouter"/);
  });

  test("without an integration route the first catalog candidate serves the model", async () => {
    await sdk(app, null).chat.completions.create({ model: "claude-cross", messages: [{ role: "user", content: "first" }] });
    assert.equal(upstreamModel(acme), "claude-cross");
    const res = await api(app, "GET", "/api/governance/routing-log?limit=1");
    assert.match(res.body.entries[0].message, /has 2 catalog options \[acme, anthropic\]; selected provider "acme"/);
  });

  test("a request through /anthropic prefers anthropic when it is a candidate", async () => {
    const before = anthropic.requests.filter((r) => r.method === "POST").length;
    const res = await api(app, "POST", "/anthropic/v1/messages", { model: "claude-cross", max_tokens: 16, messages: [{ role: "user", content: "hi" }] });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(anthropic.requests.filter((r) => r.method === "POST").length, before + 1);
    assert.equal(upstreamModel(anthropic), "claude-cross");
  });

  test("a bare model no provider serves is a 400 asking for provider/model", async () => {
    const err = await refusal(sdk(app, null).chat.completions.create({ model: "nobody-serves-this", messages: [{ role: "user", content: "hi" }] }));
    assert.equal(err.status, 400);
    assert.equal(errorType(err), "caller_provider_required");
  });

  test("a virtual key's allowed providers bound the candidates", async () => {
    const created = await api(app, "POST", "/api/governance/virtual-keys", { name: "groq-only", provider_configs: [{ provider: "groq", allowed_models: ["*"], key_ids: ["*"], weight: 1 }] });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const key: string = created.body.virtual_key.value;
    const err = await refusal(sdk(app, key).chat.completions.create({ model: "gpt-cross", messages: [{ role: "user", content: "hi" }] }));
    assert.equal(err.status, 400);
    assert.equal(errorType(err), "caller_model_not_allowed");
    await sdk(app, key).chat.completions.create({ model: "gpt-oss-cross", messages: [{ role: "user", content: "hi" }] });
    assert.equal(upstreamModel(groq), "openai/gpt-oss-cross");
  });
});
