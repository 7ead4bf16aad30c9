/**
 * client.allowed_headers through the real server: which of a /v1 caller's headers reach the upstream, on
 * chat completions and the Responses API, streamed and not, with the list changed live by PATCH /config.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ANTHROPIC_VERSION } from "../../src/providers/anthropic/adapter.js";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { startMockAnthropic } from "../fixtures/mock-anthropic.js";
import { startMockOpenAi, type MockUpstream } from "../fixtures/mock-openai.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { fileKey } from "../helpers/inference.js";

const VIRTUAL_KEY = "sk-gw-headers";

let openai: MockUpstream;
let anthropic: MockUpstream;
let app: TestApp;

/** One /v1 call with `headers` beside the virtual key; fails unless it answers 200, and reads the answer to its end. */
async function call(path: "/v1/chat/completions" | "/v1/responses", body: Record<string, unknown>, headers: Record<string, string>): Promise<void> {
  const res = await fetch(`${app.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${VIRTUAL_KEY}`, ...headers },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  assert.equal(res.status, 200, text);
}

const CHAT = { model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "hi" }] };
const RESPONSES = { model: "openai/gpt-4o-mini", input: "hi" };

async function setAllowedHeaders(allowed: string[]): Promise<void> {
  const res = await api(app, "PATCH", "/config", { client: { allowed_headers: allowed } });
  assert.equal(res.status, 200, JSON.stringify(res.body));
}

before(async () => {
  openai = await startMockOpenAi();
  anthropic = await startMockAnthropic();
  const inference = inferenceOptionsFromFile(
    {
      openai: { keys: [fileKey("oa-1")], network_config: { base_url: openai.url } },
      anthropic: { keys: [fileKey("an-1", { models: ["claude-haiku-4-5"] })], network_config: { base_url: anthropic.url } },
    },
    [
      {
        id: "vk-headers",
        name: "headers",
        value: VIRTUAL_KEY,
        provider_configs: [
          { provider: "openai", allowed_models: ["*"], key_ids: ["*"], weight: 1 },
          { provider: "anthropic", allowed_models: ["*"], key_ids: ["*"], weight: 1 },
        ],
      },
    ],
  );
  app = await startApp({ inference });
});

after(async () => {
  await app?.stop();
  await openai?.close();
  await anthropic?.close();
});

describe('with the default ["*"]', () => {
  const variants = [
    { name: "a chat completion", path: "/v1/chat/completions", body: CHAT },
    { name: "a streamed chat completion", path: "/v1/chat/completions", body: { ...CHAT, stream: true } },
    { name: "a Responses call", path: "/v1/responses", body: RESPONSES },
    { name: "a streamed Responses call", path: "/v1/responses", body: { ...RESPONSES, stream: true } },
  ] as const;
  for (const variant of variants) {
    test(`forwards the caller's own headers on ${variant.name}`, async () => {
      await call(variant.path, variant.body, { "x-team": "search", "x-stainless-os": "Linux", "user-agent": "my-app/1.0" });
      const seen = openai.last().headers;
      assert.equal(seen["x-team"], "search");
      assert.equal(seen["x-stainless-os"], "Linux");
      assert.equal(seen["user-agent"], "my-app/1.0");
    });
  }

  test("never forwards the caller's credentials, cookies or x-gw-* headers", async () => {
    await call("/v1/chat/completions", CHAT, {
      "x-api-key": "sk-caller-secret",
      "api-key": "sk-caller-secret",
      "x-goog-api-key": "sk-caller-secret",
      cookie: "session=caller",
      "x-gw-dim-team": "search",
      "proxy-authorization": "Basic c2VjcmV0",
    });
    const seen = openai.last().headers;
    assert.equal(seen["authorization"], "Bearer sk-oa-1", "the provider key, not the caller's virtual key");
    for (const name of ["x-api-key", "api-key", "x-goog-api-key", "cookie", "x-gw-dim-team", "proxy-authorization"]) {
      assert.equal(seen[name], undefined, `${name} reached the upstream`);
    }
  });

  test("lets the provider's own headers win over forwarded ones", async () => {
    await call("/v1/chat/completions", { ...CHAT, model: "anthropic/claude-haiku-4-5" }, { "anthropic-version": "1999-01-01", "x-team": "search" });
    const seen = anthropic.last().headers;
    assert.equal(seen["anthropic-version"], ANTHROPIC_VERSION);
    assert.equal(seen["x-api-key"], "sk-an-1");
    assert.equal(seen["x-team"], "search");
  });
});

describe("with a list set by PATCH /config", () => {
  after(() => setAllowedHeaders(["*"]));

  test("forwards only the listed names, whatever their case, and the headers a prefix covers", async () => {
    await setAllowedHeaders(["X-Team", "x-stainless-*"]);
    await call("/v1/chat/completions", CHAT, { "x-team": "search", "x-stainless-arch": "x64", "x-other": "no", "user-agent": "my-app/1.0" });
    const seen = openai.last().headers;
    assert.equal(seen["x-team"], "search");
    assert.equal(seen["x-stainless-arch"], "x64");
    assert.equal(seen["x-other"], undefined);
    assert.notEqual(seen["user-agent"], "my-app/1.0");
  });

  test("forwards nothing of the caller's with an empty list", async () => {
    await setAllowedHeaders([]);
    await call("/v1/responses", RESPONSES, { "x-team": "search" });
    assert.equal(openai.last().headers["x-team"], undefined);
  });

  test("never forwards a credential header even when the list names it", async () => {
    await setAllowedHeaders(["x-api-key", "authorization", "x-team"]);
    await call("/v1/chat/completions", CHAT, { "x-api-key": "sk-caller-secret", "x-team": "search" });
    const seen = openai.last().headers;
    assert.equal(seen["x-api-key"], undefined);
    assert.equal(seen["authorization"], "Bearer sk-oa-1");
    assert.equal(seen["x-team"], "search");
  });

  test("PATCH /config refuses an entry that is not a header name or a prefix", async () => {
    const res = await api(app, "PATCH", "/config", { client: { allowed_headers: ["x-team", "x-*-id"] } });
    assert.equal(res.status, 400);
    assert.match(res.body.error.message, /^client\.allowed_headers\[1\]: "x-\*-id" is not a header name/);
  });
});
