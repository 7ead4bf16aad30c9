/**
 * A provider key whose upstream answers 429 with retry-after is skipped by key selection until that time
 * passes, then used again, through /v1 with the official SDK. Time is a fake clock the test moves; the
 * dice always pick the first eligible key, so without the backoff the first key would serve every request.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { startMockOpenAi, type MockUpstream } from "../fixtures/mock-openai.js";
import { startApp, type TestApp } from "../helpers/app.js";
import { fileKey, sdk } from "../helpers/inference.js";

let openai: MockUpstream;
let now = Date.UTC(2026, 0, 1);

before(async () => {
  openai = await startMockOpenAi();
});

after(async () => {
  await openai?.close();
});

/** Sends one chat; answers the keys the upstream saw, in order. */
async function chat(app: TestApp): Promise<string[]> {
  const before = openai.requests.length;
  await sdk(app, null).chat.completions.create({ model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "hi" }] });
  return openai.requests.slice(before).map((request) => request.headers["authorization"] ?? "");
}

describe("a provider key told to retry after a while", () => {
  let app: TestApp;

  before(async () => {
    app = await startApp({
      inference: {
        ...inferenceOptionsFromFile({ openai: { keys: [fileKey("k1"), fileKey("k2")], network_config: { base_url: openai.url } } }, []),
        random: () => 0,
        clock: () => now,
      },
    });
  });

  after(async () => {
    await app?.stop();
  });

  test("is skipped until its retry-after passes, then used again", async () => {
    assert.deepEqual(await chat(app), ["Bearer sk-k1"]);
    openai.failNext(429, "slow down", 1, { "retry-after": "30" });
    assert.deepEqual(await chat(app), ["Bearer sk-k1", "Bearer sk-k2"]);
    now += 29_000;
    assert.deepEqual(await chat(app), ["Bearer sk-k2"]);
    now += 2_000;
    assert.deepEqual(await chat(app), ["Bearer sk-k1"]);
  });
});
