/**
 * Budgets and token rate limits of a virtual key's provider configs, through /v1 with the official SDK:
 * spending (priced from the bundled table) excludes a provider, traffic moves to the next one, a window
 * reset restores it, and the counters survive a restart. Time is a fake clock the test moves.
 */
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import OpenAI from "openai";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { startMockAnthropic } from "../fixtures/mock-anthropic.js";
import { startMockOpenAi, type MockUpstream } from "../fixtures/mock-openai.js";
import { startApp, type TestApp } from "../helpers/app.js";
import { fileKey } from "../helpers/inference.js";

const HOUR = 3_600_000;
let openai: MockUpstream;
let anthropic: MockUpstream;
let now = Date.UTC(2026, 0, 1);

/**
 * Both providers serve the bare name "house-model": OpenAI as gpt-4o-mini, Anthropic as claude-sonnet-4-5,
 * through key aliases. OpenAI has the larger weight and the dice always pick the first choice, so OpenAI
 * serves until its limit excludes it.
 */
function options(openaiConfig: Record<string, unknown>) {
  return {
    ...inferenceOptionsFromFile(
      {
        openai: { keys: [fileKey("oa", { aliases: { "house-model": "gpt-4o-mini" } })], network_config: { base_url: openai.url } },
        anthropic: { keys: [fileKey("an", { aliases: { "house-model": "claude-sonnet-4-5" } })], network_config: { base_url: anthropic.url } },
      },
      [
        {
          id: "vk",
          name: "limited",
          value: "sk-gw-limited",
          provider_configs: [
            { provider: "openai", allowed_models: ["house-model"], key_ids: ["*"], weight: 10, ...openaiConfig },
            { provider: "anthropic", allowed_models: ["house-model"], key_ids: ["*"], weight: 1 },
          ],
        },
      ],
    ),
    random: () => 0,
    clock: () => now,
  };
}

function sdk(app: TestApp): OpenAI {
  return new OpenAI({ apiKey: "sk-gw-limited", baseURL: `${app.url}/v1`, maxRetries: 0 });
}

/** Which mock answered one request. */
async function servedBy(app: TestApp): Promise<"openai" | "anthropic"> {
  const before = openai.requests.length;
  const completion = await sdk(app).chat.completions.create({ model: "house-model", messages: [{ role: "user", content: "hi" }] });
  assert.ok(completion.choices[0]?.message.content);
  return openai.requests.length > before ? "openai" : "anthropic";
}

before(async () => {
  openai = await startMockOpenAi();
  anthropic = await startMockAnthropic();
});

after(async () => {
  await openai?.close();
  await anthropic?.close();
});

describe("budgets", () => {
  let app: TestApp;
  // One mock chat costs about 3.5e-6 USD at gpt-4o-mini prices (11 prompt + a few completion tokens).
  const budget = { budgets: [{ max_limit: 0.000005, reset_duration: "1h" }] };

  beforeEach(async () => {
    now = Date.UTC(2026, 0, 1);
  });

  test("spending the budget moves traffic to the next provider and the window reset restores it", async () => {
    app = await startApp({ inference: options(budget) });
    try {
      assert.equal(await servedBy(app), "openai");
      assert.equal(await servedBy(app), "openai");
      // Two requests spent about 7e-6 USD, over the 5e-6 budget.
      assert.equal(await servedBy(app), "anthropic");
      assert.equal(await servedBy(app), "anthropic");
      now += HOUR;
      assert.equal(await servedBy(app), "openai");
    } finally {
      await app.stop();
    }
  });

  test("an explicit provider over budget is refused with a 402 policy_budget_exceeded", async () => {
    app = await startApp({ inference: options(budget) });
    try {
      const client = sdk(app);
      await client.chat.completions.create({ model: "openai/house-model", messages: [{ role: "user", content: "hi" }] });
      await client.chat.completions.create({ model: "openai/house-model", messages: [{ role: "user", content: "hi" }] });
      const err = await client.chat.completions.create({ model: "openai/house-model", messages: [{ role: "user", content: "hi" }] }).then(
        () => assert.fail("over budget but served"),
        (e: unknown) => e,
      );
      assert.ok(err instanceof OpenAI.APIError);
      assert.equal(err.status, 402);
      assert.equal((err.error as { type?: string }).type, "policy_budget_exceeded");
    } finally {
      await app.stop();
    }
  });

  test("spent budget survives a restart", async () => {
    app = await startApp({ inference: options(budget) });
    let restarted: TestApp | undefined;
    try {
      await servedBy(app);
      await servedBy(app);
      await app.stop({ keepData: true });
      restarted = await startApp(app.restartOptions);
      assert.equal(await servedBy(restarted), "anthropic");
    } finally {
      await (restarted ?? app).stop();
    }
  });
});

describe("token rate limits", () => {
  test("reaching the token limit moves traffic to the next provider and the window reset restores it", async () => {
    now = Date.UTC(2026, 0, 1);
    // One mock chat uses 13 tokens (11 prompt + 2 completion): two fit under 20, the third does not.
    const app = await startApp({ inference: options({ rate_limit: { token_max_limit: 20, token_reset_duration: "1m" } }) });
    try {
      assert.equal(await servedBy(app), "openai");
      assert.equal(await servedBy(app), "openai");
      assert.equal(await servedBy(app), "anthropic");
      now += 60_000;
      assert.equal(await servedBy(app), "openai");
    } finally {
      await app.stop();
    }
  });

  test("an explicit provider at its token limit is refused with a 429 policy_rate_limited", async () => {
    now = Date.UTC(2026, 0, 1);
    const app = await startApp({ inference: options({ rate_limit: { token_max_limit: 10, token_reset_duration: "1m" } }) });
    try {
      const client = sdk(app);
      await client.chat.completions.create({ model: "openai/house-model", messages: [{ role: "user", content: "hi" }] });
      const err = await client.chat.completions.create({ model: "openai/house-model", messages: [{ role: "user", content: "hi" }] }).then(
        () => assert.fail("at the limit but served"),
        (e: unknown) => e,
      );
      assert.ok(err instanceof OpenAI.APIError);
      assert.equal(err.status, 429);
      assert.equal((err.error as { type?: string }).type, "policy_rate_limited");
    } finally {
      await app.stop();
    }
  });
});
