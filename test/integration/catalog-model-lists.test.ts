/**
 * Provider model lists in the catalog: fetched at start for the providers of the config file, an
 * unreachable provider being only a warning that does not hold up readiness.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { ProviderRecord } from "../../src/store/index.js";
import { MOCK_OPENAI_MODELS, startMockOpenAi, type MockUpstream } from "../fixtures/mock-openai.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { fileKey } from "../helpers/inference.js";

async function modelsOf(app: TestApp, provider: string): Promise<string[]> {
  const res = await api(app, "GET", `/v1/models?provider=${provider}`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.data.map((m: { id: string }) => m.id).sort();
}

describe("model lists at start", () => {
  let upstream: MockUpstream;
  let app: TestApp;
  before(async () => {
    upstream = await startMockOpenAi();
    // Custom providers: neither the bundled table nor the pricing data knows their models.
    const providers = {
      acme: { keys: [fileKey("a")], network_config: { base_url: upstream.url } },
      down: { keys: [fileKey("d")], network_config: { base_url: "http://127.0.0.1:9" } },
    };
    app = await startApp({ inference: inferenceOptionsFromFile(providers, []) });
  });
  after(async () => {
    await app.stop();
    await upstream.close();
  });

  test("the config file's providers are asked for their models at start and /v1/models?provider= lists them", async () => {
    const expected = MOCK_OPENAI_MODELS.map((m) => `acme/${m}`).sort();
    let listed = await modelsOf(app, "acme");
    // Bounded: 300 polls of 50 ms; the fetch runs in the background.
    for (let i = 0; i < 300 && listed.length < expected.length; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      listed = await modelsOf(app, "acme");
    }
    assert.deepEqual(listed, expected);
    const rec = await app.store.fork().findOneOrFail(ProviderRecord, { name: "acme" });
    assert.deepEqual([...rec.listedModels].sort(), [...MOCK_OPENAI_MODELS].sort());
  });

  test("an unreachable provider is a warning and the gateway is ready", async () => {
    let warned = false;
    for (let i = 0; i < 300 && !warned; i++) {
      warned = app.logLines.some((l) => /"provider":"down"/.test(l) && /could not list the provider's models/.test(l));
      if (!warned) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.ok(warned);
    assert.equal((await api(app, "GET", "/ready")).status, 200);
    assert.deepEqual(await modelsOf(app, "down"), []);
  });
});
