/**
 * Budgets and token limits under concurrency, through /v1 with plain fetch: a request reserves its worst
 * case (prompt estimate plus max_tokens, else the model's output bound) before the upstream call, capped at
 * what remains, so when one request's worst case covers a limit, fifteen sent at once let exactly one
 * through on one node, whatever level the limit sits at. The upstream answers slowly, so the whole burst is
 * in flight before the first answer settles, and reports far more tokens than any limit here holds.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { startCostlyUpstream } from "../fixtures/costly-upstream.js";
import type { MockUpstream } from "../fixtures/mock-upstream.js";
import { startApp, type TestApp } from "../helpers/app.js";
import { fileKey } from "../helpers/inference.js";

/** Requests sent at once. */
const CONCURRENT = 15;

let upstream: MockUpstream;

before(async () => {
  upstream = await startCostlyUpstream();
});

after(async () => {
  await upstream?.close();
});

const CONFIG = { provider: "openai", allowed_models: ["gpt-4o-mini"], key_ids: ["*"], weight: 1 };

/** An app with one OpenAI provider on the costly upstream, the given key and hierarchy groups. */
function startWith(key: Record<string, unknown>, groups: { business_unit?: Record<string, unknown>[]; customer?: Record<string, unknown>[]; team?: Record<string, unknown>[] } = {}): Promise<TestApp> {
  const providers = { openai: { keys: [fileKey("oa", { models: ["gpt-4o-mini"] })], network_config: { base_url: upstream.url } } };
  const virtualKey = { id: "vk-burst", name: "burst", value: "sk-gw-burst", provider_configs: [CONFIG], ...key };
  return startApp({ inference: inferenceOptionsFromFile(providers, [virtualKey], [], { business_unit: groups.business_unit ?? [], customer: groups.customer ?? [], team: groups.team ?? [] }) });
}

/** Sends CONCURRENT chats at once; answers each one's status and error type. */
async function burst(app: TestApp, extra: Record<string, unknown> = {}): Promise<{ status: number; type: string | null }[]> {
  const one = async (i: number) => {
    const res = await fetch(`${app.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer sk-gw-burst" },
      body: JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: `request ${i}` }], ...extra }),
    });
    const body = (await res.json()) as { error?: { type?: string } };
    return { status: res.status, type: body.error?.type ?? null };
  };
  return Promise.all(Array.from({ length: CONCURRENT }, (_, i) => one(i)));
}

/** Checks that exactly one request of the burst went through and every other was refused with `refusal`. */
function assertOneThrough(answers: { status: number; type: string | null }[], refusal: { status: number; type: string }): void {
  const accepted = answers.filter((a) => a.status === 200).length;
  assert.equal(accepted, 1, `${accepted} of ${answers.length} concurrent requests went through: ${JSON.stringify(answers)}`);
  for (const refused of answers.filter((a) => a.status !== 200)) assert.deepEqual(refused, refusal);
}

const BUDGET_REFUSAL = { status: 402, type: "policy_budget_exceeded" };
const TOKEN_REFUSAL = { status: 429, type: "policy_rate_limited" };
/**
 * Less than one request's worst case: without max_tokens a gpt-4o-mini request may write at least 4096
 * tokens, about $0.0025 at its price.
 */
const SMALL_BUDGET = { max_limit: 0.002, reset_duration: "1h" };
/** Fewer tokens than one request without max_tokens may use. */
const SMALL_TOKEN_LIMIT = { token_max_limit: 1000, token_reset_duration: "1h" };

describe("concurrent requests against a limit one request exhausts", () => {
  test("lets one of fifteen concurrent requests through a key budget one request exhausts", async () => {
    const app = await startWith({ budget: SMALL_BUDGET });
    try {
      assertOneThrough(await burst(app), BUDGET_REFUSAL);
    } finally {
      await app.stop();
    }
  });

  test("lets one of fifteen concurrent requests through a provider-config budget one request exhausts", async () => {
    const app = await startWith({ provider_configs: [{ ...CONFIG, budgets: [SMALL_BUDGET] }] });
    try {
      assertOneThrough(await burst(app), BUDGET_REFUSAL);
    } finally {
      await app.stop();
    }
  });

  test("lets one of fifteen concurrent requests through a key token limit one request exhausts", async () => {
    const app = await startWith({ rate_limit: SMALL_TOKEN_LIMIT });
    try {
      assertOneThrough(await burst(app), TOKEN_REFUSAL);
    } finally {
      await app.stop();
    }
  });

  test("lets one of fifteen concurrent requests through a key token limit their max_tokens exhausts", async () => {
    const app = await startWith({ rate_limit: SMALL_TOKEN_LIMIT });
    try {
      assertOneThrough(await burst(app, { max_tokens: SMALL_TOKEN_LIMIT.token_max_limit }), TOKEN_REFUSAL);
    } finally {
      await app.stop();
    }
  });

  test("lets one of fifteen concurrent requests through a provider-config token limit one request exhausts", async () => {
    const app = await startWith({ provider_configs: [{ ...CONFIG, rate_limit: SMALL_TOKEN_LIMIT }] });
    try {
      assertOneThrough(await burst(app), TOKEN_REFUSAL);
    } finally {
      await app.stop();
    }
  });

  test("lets one of fifteen concurrent requests through a team budget one request exhausts", async () => {
    const app = await startWith({ team_id: "team-burst" }, { team: [{ id: "team-burst", name: "burst team", budget: SMALL_BUDGET }] });
    try {
      assertOneThrough(await burst(app), BUDGET_REFUSAL);
    } finally {
      await app.stop();
    }
  });

  test("lets one of fifteen concurrent requests through a customer budget one request exhausts", async () => {
    const app = await startWith({ customer_id: "cu-burst" }, { customer: [{ id: "cu-burst", name: "burst customer", budget: SMALL_BUDGET }] });
    try {
      assertOneThrough(await burst(app), BUDGET_REFUSAL);
    } finally {
      await app.stop();
    }
  });

  test("lets one of fifteen concurrent requests through a business unit token limit one request exhausts", async () => {
    const app = await startWith(
      { customer_id: "cu-unit" },
      { business_unit: [{ id: "bu-burst", name: "burst unit", rate_limit: SMALL_TOKEN_LIMIT }], customer: [{ id: "cu-unit", name: "unit customer", business_unit_id: "bu-burst" }] },
    );
    try {
      assertOneThrough(await burst(app), TOKEN_REFUSAL);
    } finally {
      await app.stop();
    }
  });
});
