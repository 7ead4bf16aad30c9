/**
 * The llm_judge check's request to its model, through the real app: it goes through the gateway's own
 * routing (key rotation, failure types, the guardrail's timeout, the inference metrics), runs no guardrail
 * stage of its own, and is not refused by client.enforce_governance although it carries no virtual key.
 * The judge is a loopback chat endpoint (test/fixtures/guardrail-services.ts) behind a provider with two
 * keys; a global input guardrail blocks any text naming a "content guardrail", which the judge's own
 * system prompt does, so a judge request that met the input stage would fail its check.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import OpenAI from "openai";
import { DEFAULT_CLIENT } from "../../src/config/runtime-settings.js";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { startMockOpenAi, type MockUpstream } from "../fixtures/mock-openai.js";
import { startGuardrailServices, type GuardrailServices } from "../fixtures/guardrail-services.js";
import { startApp, type TestApp } from "../helpers/app.js";
import { parseExposition, total } from "../helpers/exposition.js";
import { fileKey, refusal, sdk } from "../helpers/inference.js";

const ALL_OPENAI = [{ provider: "openai", allowed_models: ["*"], key_ids: ["*"], weight: 1 }];
const TEST_TIMEOUT_MS = 30_000;
/** The phrase of the judge's system prompt that the global input guardrail blocks. */
const JUDGE_PROMPT_PHRASE = "content guardrail";

let openai: MockUpstream;
let services: GuardrailServices;
let app: TestApp;

function judgeGuardrail(name: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: `gr-${name}`,
    name,
    stages: ["input"],
    scope: "virtual_key",
    scope_id: `vk-${name}`,
    check: { type: "llm_judge", llm_judge: { provider: "judge", model: "judge-model", instructions: "Refuse anything about forbidden topics." } },
    action: "block",
    ...extra,
  };
}

before(async () => {
  openai = await startMockOpenAi();
  services = await startGuardrailServices();
  app = await startApp({
    client: { ...DEFAULT_CLIENT, enforceGovernance: true },
    inference: inferenceOptionsFromFile(
      {
        openai: { keys: [fileKey("oa", { models: ["gpt-4o-mini"] })], network_config: { base_url: openai.url } },
        judge: { keys: [fileKey("jk1", { models: ["judge-model"] }), fileKey("jk2", { models: ["judge-model"] })], network_config: { base_url: services.url } },
      },
      ["judge", "judge-slow"].map((name) => ({ id: `vk-${name}`, name, value: `sk-gw-${name}`, provider_configs: ALL_OPENAI })),
    ),
    guardrails: [
      { id: "gr-no-guardrail-talk", name: "no-guardrail-talk", stages: ["input"], check: { type: "keywords", keywords: { words: [JUDGE_PROMPT_PHRASE] } }, action: "block" },
      judgeGuardrail("judge"),
      judgeGuardrail("judge-slow", { timeout: "300ms" }),
    ],
  });
});

after(async () => {
  await app?.stop();
  await services?.close();
  await openai?.close();
});

function ask(name: string, content: string): Promise<{ data: OpenAI.ChatCompletion; response: Response }> {
  return sdk(app, `sk-gw-${name}`).chat.completions.create({ model: "openai/gpt-4o-mini", messages: [{ role: "user", content }] }).withResponse();
}

function judgeRequests(): number {
  return services.received("/v1/chat/completions").length;
}

async function successes(provider: string): Promise<number> {
  const res = await fetch(`${app.url}/metrics`);
  assert.equal(res.status, 200);
  return total(parseExposition(await res.text()), "gw_success_requests_total", { provider });
}

describe("the llm_judge check's request", { timeout: TEST_TIMEOUT_MS }, () => {
  test("reaches the judge model on the provider's other key when the first answers 429", async () => {
    const before = judgeRequests();
    services.failNext(429, "slow down", 1);
    const { response } = await ask("judge", "a harmless question");
    assert.equal(response.headers.get("x-gw-guardrails"), "no-guardrail-talk=pass,judge=pass");
    const sent = services.received("/v1/chat/completions").slice(before);
    assert.equal(sent.length, 2);
    assert.deepEqual(new Set(sent.map((req) => req.headers["authorization"])), new Set(["Bearer sk-jk1", "Bearer sk-jk2"]));
  });

  test("asks the check's provider for its model, named as the provider knows it", async () => {
    await ask("judge", "a harmless question");
    const sent = services.received("/v1/chat/completions").at(-1)?.body as { model: string; messages: { role: string; content: string }[] };
    assert.equal(sent.model, "judge-model");
    assert.deepEqual(sent.messages[1], { role: "user", content: "a harmless question" });
  });

  test("runs no input guardrail on the judge's own request, whose prompt a global one would block", async () => {
    const { response } = await ask("judge", "another harmless question");
    assert.equal(response.headers.get("x-gw-guardrails"), "no-guardrail-talk=pass,judge=pass");
    const sent = services.received("/v1/chat/completions").at(-1)?.body as { messages: { role: string; content: string }[] };
    assert.match(sent.messages[0]?.content ?? "", new RegExp(JUDGE_PROMPT_PHRASE));
  });

  test("is not refused by client.enforce_governance, which refuses a caller without a virtual key", async () => {
    const keyless = await refusal(sdk(app, null).chat.completions.create({ model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "hi" }] }));
    assert.equal(keyless.status, 401);
    const before = judgeRequests();
    const { response } = await ask("judge", "a harmless question");
    assert.equal(response.headers.get("x-gw-guardrails"), "no-guardrail-talk=pass,judge=pass");
    assert.equal(judgeRequests(), before + 1);
  });

  test("is counted in the inference metrics under the judge's provider", async () => {
    const before = await successes("judge");
    await ask("judge", "count the judge");
    assert.equal(await successes("judge"), before + 1);
  });

  test("still blocks what the judge refuses, with its reason", async () => {
    const err = await refusal(ask("judge", "tell me the forbidden thing"));
    assert.equal(err.status, 446);
    assert.match(String((err.error as Record<string, unknown>)["message"]), /the judge refused it: it asks about a forbidden topic/);
  });

  test("fails the check as guardrail_check_status when the judge's upstream answers 500", async () => {
    services.failNext(500, "the judge fell over", 1);
    const err = await refusal(ask("judge", "a harmless question"));
    assert.equal(err.status, 446);
    assert.match(String((err.error as Record<string, unknown>)["message"]), /its llm_judge check failed \(guardrail_check_status\)/);
  });

  test("fails the check as guardrail_check_timeout when the judge does not answer within the guardrail's timeout", async () => {
    services.latencyMs = 5_000;
    try {
      const started = Date.now();
      const err = await refusal(ask("judge-slow", "a harmless question"));
      assert.equal(err.status, 446);
      assert.match(String((err.error as Record<string, unknown>)["message"]), /its llm_judge check failed \(guardrail_check_timeout\)/);
      assert.ok(Date.now() - started < 4_000, "the request waited on the judge past the guardrail's timeout");
    } finally {
      services.latencyMs = 0;
    }
  });
});
