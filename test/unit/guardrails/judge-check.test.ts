/**
 * The llm_judge check over an injected JudgeModel (the engine, in the app): what it asks for, when it asks
 * nothing, how it reads the answer, and the guardrail set's judge before and after the engine is wired.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { RequestAbort, type AbortSource } from "../../../src/cancellation.js";
import type { CallOutRequest, CheckProviders, JudgeModel } from "../../../src/guardrails/call-out.js";
import { GuardrailCheckError } from "../../../src/guardrails/check-failure.js";
import type { GuardrailCheck } from "../../../src/guardrails/definition.js";
import { GuardrailSet } from "../../../src/guardrails/guardrail-set.js";
import { runJudgeCheck } from "../../../src/guardrails/judge-check.js";
import type { ChatRequest, JsonObject } from "../../../src/providers/types.js";

type JudgeCheck = Extract<GuardrailCheck, { type: "llm_judge" }>;

const CHECK: JudgeCheck = { type: "llm_judge", provider: "judge", model: "judge-model", instructions: "Refuse recipes." };
const PROVIDERS: CheckProviders = { providers: new Map([["judge", { keys: [], maxResponseBytes: 1024 }]]) };

function completion(content: string): JsonObject {
  return { choices: [{ index: 0, message: { role: "assistant", content } }] };
}

/** A judge answering `content`, remembering what it was asked. */
function judging(content: string): { judge: JudgeModel; asked: { request: ChatRequest; signal: AbortSource }[] } {
  const asked: { request: ChatRequest; signal: AbortSource }[] = [];
  return { judge: (request, signal) => (asked.push({ request, signal }), Promise.resolve(completion(content))), asked };
}

function request(texts: readonly string[], signal: AbortSource = new RequestAbort()): CallOutRequest {
  return { stage: "input", texts, metadata: { virtualKeyId: "vk-1", model: "openai/gpt-4o-mini" }, signal };
}

describe("an llm_judge check", () => {
  test("asks for the check's provider/model with the instructions as system message and the texts as user message", async () => {
    const { judge, asked } = judging('{"allow": true}');
    await runJudgeCheck(PROVIDERS, judge, CHECK, request(["one", "two"]));
    const sent = asked[0]?.request;
    assert.equal(sent?.model, "judge/judge-model");
    const messages = sent?.messages as { role: string; content: string }[];
    assert.equal(messages[0]?.role, "system");
    assert.match(messages[0]?.content ?? "", /Refuse recipes\./);
    assert.deepEqual(messages[1], { role: "user", content: "one\n\ntwo" });
  });

  test("hands the judge the check's own cancellation", async () => {
    const { judge, asked } = judging('{"allow": true}');
    const signal = new RequestAbort();
    await runJudgeCheck(PROVIDERS, judge, CHECK, request(["x"], signal));
    assert.equal(asked[0]?.signal, signal);
  });

  test("fails as unavailable, asking nothing, when its provider is not configured", async () => {
    const { judge, asked } = judging('{"allow": true}');
    await assert.rejects(runJudgeCheck({ providers: new Map() }, judge, CHECK, request(["x"])), (err: unknown) => err instanceof GuardrailCheckError && err.type === "guardrail_check_unavailable");
    assert.equal(asked.length, 0);
  });

  test("finds the judge's refusal with its reason", async () => {
    const { judge } = judging('{"allow": false, "reason": "a recipe"}');
    assert.deepEqual(await runJudgeCheck(PROVIDERS, judge, CHECK, request(["x"])), { kinds: ["llm_judge"], summary: "the judge refused it", reason: "a recipe", redacted: null });
  });

  test("passes the judge's error on for the runner to classify", async () => {
    const failure = new Error("no route");
    await assert.rejects(
      runJudgeCheck(PROVIDERS, () => Promise.reject(failure), CHECK, request(["x"])),
      (err: unknown) => err === failure,
    );
  });
});

describe("a guardrail set's judge", () => {
  test("fails as unavailable until an engine is wired", async () => {
    await assert.rejects(new GuardrailSet().judge({ model: "judge/judge-model", messages: [] }, new RequestAbort()), (err: unknown) => err instanceof GuardrailCheckError && err.type === "guardrail_check_unavailable");
  });

  test("reaches the judge wired after it was handed out", async () => {
    const set = new GuardrailSet();
    const judge = set.judge;
    set.judgeWith(() => Promise.resolve(completion("wired")));
    assert.deepEqual(await judge({ model: "judge/judge-model", messages: [] }, new RequestAbort()), completion("wired"));
  });
});
