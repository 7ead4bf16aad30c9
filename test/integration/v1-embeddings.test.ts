/**
 * POST /v1/embeddings through the real app and the official `openai` SDK: passed through to an
 * OpenAI-compatible mock (token arrays and dimensions included, Azure's deployments too), translated to Bedrock Titan (a mock that
 * verifies the SigV4 signature), Gemini's batchEmbedContents and Vertex's predict; floats and base64; body
 * checks; a provider without embeddings; and the `embedding` method label of the upstream metrics.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type OpenAI from "openai";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { startMockAnthropic } from "../fixtures/mock-anthropic.js";
import { startMockBedrock, type MockBedrock } from "../fixtures/mock-bedrock.js";
import { startMockGoogle, type MockGoogle } from "../fixtures/mock-google.js";
import { startMockOpenAi } from "../fixtures/mock-openai.js";
import { MOCK_EMBEDDING_DIMENSIONS, mockVector, type MockUpstream } from "../fixtures/mock-upstream.js";
import { testServiceAccount, withTokenUri } from "../fixtures/service-account.js";
import { startApp, type TestApp } from "../helpers/app.js";
import { parseExposition, total } from "../helpers/exposition.js";
import { errorType, refusal, sdk } from "../helpers/inference.js";

const VK = "sk-gw-embed";
const AWS = { accessKey: "AKIAEMBED", secretKey: "embed-secret", region: "us-east-1" };
const TITAN = "amazon.titan-embed-text-v2:0";

let openai: MockUpstream;
let anthropic: MockUpstream;
let bedrock: MockBedrock;
let google: MockGoogle;
let app: TestApp;
let client: OpenAI;

/** What the SDK returns for a mock vector: float32 values, as base64 carries them. */
function float32(vector: number[]): number[] {
  return vector.map((v) => Math.fround(v));
}

before(async () => {
  let account = testServiceAccount("embed");
  openai = await startMockOpenAi();
  anthropic = await startMockAnthropic();
  bedrock = await startMockBedrock(AWS);
  google = await startMockGoogle({ apiKey: "AIza-embed", serviceAccount: { clientEmail: account.clientEmail, publicKey: account.publicKey } });
  account = withTokenUri(account, google.tokenUri);
  const all = (provider: string) => ({ provider, allowed_models: ["*"], key_ids: ["*"], weight: 1 });
  const inference = inferenceOptionsFromFile(
    {
      openai: { keys: [{ id: "oa", name: "oa", value: "sk-openai", models: ["text-embedding-3-small"] }], network_config: { base_url: openai.url } },
      azure: {
        keys: [{ id: "az", name: "az", value: "sk-azure", models: ["embed-small"], azure_key_config: { endpoint: openai.url, deployments: { "embed-small": "dep-embed" }, api_version: "2024-10-21" } }],
      },
      anthropic: { keys: [{ id: "an", name: "an", value: "sk-ant", models: ["claude-sonnet-4-5"] }], network_config: { base_url: anthropic.url } },
      bedrock: {
        keys: [{ id: "br", name: "br", models: [TITAN, "titan"], aliases: { titan: TITAN }, bedrock_key_config: { access_key: AWS.accessKey, secret_key: AWS.secretKey, region: AWS.region } }],
        network_config: { base_url: bedrock.url },
      },
      gemini: { keys: [{ id: "gm", name: "gm", value: "AIza-embed", models: ["text-embedding-004"] }], network_config: { base_url: google.url } },
      vertex: {
        keys: [{ id: "vx", name: "vx", models: ["text-embedding-005"], vertex_key_config: { project_id: "p-embed", region: "us-central1", auth_credentials: account.json } }],
        network_config: { base_url: google.url },
      },
    },
    [{ id: "vk", name: "vk", value: VK, is_active: true, provider_configs: ["openai", "azure", "anthropic", "bedrock", "gemini", "vertex"].map(all) }],
  );
  app = await startApp({ inference });
  client = sdk(app, VK);
});

after(async () => {
  await app?.stop();
  for (const mock of [openai, anthropic, bedrock, google]) await mock?.close();
});

describe("/v1/embeddings", () => {
  test("passes a request through to an OpenAI-compatible provider", async () => {
    const res = await client.embeddings.create({ model: "openai/text-embedding-3-small", input: ["alpha", "beta gamma"], encoding_format: "float", dimensions: 3 });
    assert.deepEqual(
      res.data.map((d) => d.embedding),
      [mockVector("alpha", 3), mockVector("beta gamma", 3)],
    );
    assert.equal(res.usage.prompt_tokens, 3);
    const req = openai.last();
    assert.equal(req.path, "/v1/embeddings");
    assert.deepEqual(req.body, { model: "text-embedding-3-small", input: ["alpha", "beta gamma"], encoding_format: "float", dimensions: 3 });
  });

  test("passes token arrays through to an OpenAI-compatible provider", async () => {
    const res = await client.embeddings.create({ model: "openai/text-embedding-3-small", input: [[1, 2, 3]], encoding_format: "float" });
    assert.deepEqual(res.data[0]?.embedding, mockVector("1 2 3", MOCK_EMBEDDING_DIMENSIONS));
    assert.deepEqual(openai.last().body?.["input"], [[1, 2, 3]]);
  });

  test("sends Azure embeddings to the model's deployment", async () => {
    const res = await client.embeddings.create({ model: "azure/embed-small", input: "azure text", encoding_format: "float" });
    assert.deepEqual(res.data[0]?.embedding, mockVector("azure text", MOCK_EMBEDDING_DIMENSIONS));
    const req = openai.last();
    assert.equal(req.path, "/openai/deployments/dep-embed/embeddings");
    assert.equal(req.query["api-version"], "2024-10-21");
    assert.equal(req.headers["api-key"], "sk-azure");
  });

  test("translates to Bedrock Titan invoke calls, one per input, signed", async () => {
    const before = bedrock.requests.length;
    const res = await client.embeddings.create({ model: "bedrock/titan", input: ["one", "two words"], dimensions: 5 });
    // The SDK asks for base64 by default and decodes it: the gateway encoded the float32 values.
    assert.deepEqual(
      res.data.map((d) => d.embedding),
      [float32(mockVector("one", 5)), float32(mockVector("two words", 5))],
    );
    assert.deepEqual(
      res.data.map((d) => d.index),
      [0, 1],
    );
    assert.equal(res.usage.prompt_tokens, 3);
    const calls = bedrock.requests.slice(before);
    assert.equal(calls.length, 2);
    assert.equal(calls[0]?.rawPath, `/model/${encodeURIComponent(TITAN)}/invoke`);
    assert.deepEqual(calls.map((c) => c.body?.["inputText"]).sort(), ["one", "two words"]);
    assert.equal(calls[0]?.body?.["dimensions"], 5);
  });

  test("translates to Gemini's batchEmbedContents", async () => {
    const res = await client.embeddings.create({ model: "gemini/text-embedding-004", input: "hello gemini", encoding_format: "float" });
    assert.deepEqual(res.data[0]?.embedding, mockVector("hello gemini", MOCK_EMBEDDING_DIMENSIONS));
    const req = google.last();
    assert.equal(req.path, "/v1beta/models/text-embedding-004:batchEmbedContents");
    assert.deepEqual(req.body, { requests: [{ model: "models/text-embedding-004", content: { parts: [{ text: "hello gemini" }] } }] });
  });

  test("translates to Vertex's predict with a bearer token", async () => {
    const res = await client.embeddings.create({ model: "vertex/text-embedding-005", input: ["a b c"], dimensions: 2, encoding_format: "float" });
    assert.deepEqual(res.data[0]?.embedding, mockVector("a b c", 2));
    assert.equal(res.usage.prompt_tokens, 3);
    const req = google.last();
    assert.equal(req.path, "/v1/projects/p-embed/locations/us-central1/publishers/google/models/text-embedding-005:predict");
    assert.deepEqual(req.body, { instances: [{ content: "a b c" }], parameters: { outputDimensionality: 2 } });
    assert.match(req.headers["authorization"] ?? "", /^Bearer ya29\.mock-/);
  });

  test("refuses token arrays for a provider that embeds text only", async () => {
    const err = await refusal(client.embeddings.create({ model: "gemini/text-embedding-004", input: [[1, 2]] }));
    assert.equal(err.status, 400);
    assert.match(err.message, /text only/);
  });

  test("refuses a provider without an embeddings API", async () => {
    const err = await refusal(client.embeddings.create({ model: "anthropic/claude-sonnet-4-5", input: "x" }));
    assert.equal(err.status, 400);
    assert.equal(errorType(err), "caller_unsupported_operation");
  });

  for (const [why, body, param] of [
    ["an empty input", { model: "openai/text-embedding-3-small", input: "" }, "input"],
    ["a missing input", { model: "openai/text-embedding-3-small" }, "input"],
    ["an unknown encoding_format", { model: "openai/text-embedding-3-small", input: "x", encoding_format: "hex" }, "encoding_format"],
    ["dimensions that are not a positive whole number", { model: "openai/text-embedding-3-small", input: "x", dimensions: 0 }, "dimensions"],
    ["stream", { model: "openai/text-embedding-3-small", input: "x", stream: true }, "stream"],
  ] as const) {
    test(`refuses ${why} with a 400 naming ${param}`, async () => {
      const before = openai.requests.length;
      const res = await fetch(`${app.url}/v1/embeddings`, { method: "POST", headers: { authorization: `Bearer ${VK}`, "content-type": "application/json" }, body: JSON.stringify(body) });
      assert.equal(res.status, 400);
      const error = ((await res.json()) as { error: { param: string } }).error;
      assert.equal(error.param, param);
      assert.equal(openai.requests.length, before, "nothing went upstream");
    });
  }

  test("counts upstream calls under the embedding method label", async () => {
    await client.embeddings.create({ model: "openai/text-embedding-3-small", input: "count me" });
    const samples = parseExposition(await (await fetch(`${app.url}/metrics`)).text());
    assert.ok(total(samples, "gw_upstream_requests_total", { method: "embedding", provider: "openai" }) >= 1);
    assert.ok(total(samples, "gw_input_tokens_total", { method: "embedding", provider: "openai" }) >= 2);
  });
});
