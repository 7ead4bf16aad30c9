/**
 * The bound on a streamed answer held whole for a check that calls out: what each held event counts for,
 * where the bound is passed, and the block that ends such an answer.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { EMPTY_GUARDRAIL_VARIABLES, type GuardrailCheck, type GuardrailDefinition } from "../../../src/guardrails/definition.js";
import type { CheckResult, GuardrailObserver } from "../../../src/guardrails/guardrail-observer.js";
import { HELD_TOO_LARGE, HeldBytes, heldEventBytes, heldTooLarge } from "../../../src/guardrails/held-answer.js";
import type { RunContext } from "../../../src/guardrails/guardrail-run.js";
import { compileContentCheck } from "../../../src/guardrails/compile-check.js";
import { withRawText } from "../../../src/providers/raw-event.js";

function definition(name: string, check: GuardrailCheck): GuardrailDefinition {
  return {
    id: `gr-${name}`,
    name,
    enabled: true,
    stages: new Set(["output"]),
    scope: "global",
    scopeId: "",
    condition: null,
    check,
    content: check.type === "keywords" ? compileContentCheck({ type: "keywords", words: check.words }) : null,
    action: "block",
    redaction: null,
    onError: "allow",
    timeoutMs: 2000,
    samplingRate: 1,
  };
}

const keywords = definition("keywords", { type: "keywords", words: ["x"] });
const hook = definition("hook", { type: "webhook", url: "http://127.0.0.1:9/hook", headers: {}, timeoutMs: 2000 });

function context(observer?: GuardrailObserver): RunContext {
  return { stage: "output", variables: () => ({ ...EMPTY_GUARDRAIL_VARIABLES, stage: "output" }), random: () => 0, ...(observer ? { observer } : {}) };
}

describe("a held event's bytes", () => {
  test("are those of the text it arrived as while it is unchanged", () => {
    const text = '{ "choices" : [] }';
    assert.equal(heldEventBytes(withRawText({ choices: [] }, text)), text.length);
  });

  test("are those of its JSON when it has no text of its own", () => {
    const event = { choices: [{ delta: { content: "hi" } }] };
    assert.equal(heldEventBytes(event), JSON.stringify(event).length);
  });

  test("count each character by its UTF-8 bytes", () => {
    assert.equal(heldEventBytes({ t: "é" }), Buffer.byteLength('{"t":"é"}'));
  });
});

describe("what a held stream keeps", () => {
  const event = { t: "abcd" }; // 12 bytes of JSON

  test("stays within a bound it reaches exactly", () => {
    const held = new HeldBytes(24);
    assert.equal(held.add(event), true);
    assert.equal(held.add(event), true);
    assert.equal(held.held, 24);
  });

  test("passes the bound with the event that takes it over", () => {
    const held = new HeldBytes(23);
    assert.equal(held.add(event), true);
    assert.equal(held.add(event), false);
  });
});

describe("the block of a held answer past its bound", () => {
  test("names the guardrail that calls out, the limit and its own code", () => {
    const error = heldTooLarge([keywords, hook], 4096, context());
    assert.equal(error.guardrailName, "hook");
    assert.equal(error.stage, "output");
    assert.equal(error.blockCode, HELD_TOO_LARGE);
    assert.match(error.message, /passed 4096 bytes, the provider's max_response_bytes/);
    assert.deepEqual(error.toJson(), { type: "guardrail_blocked", code: HELD_TOO_LARGE, message: error.message, guardrail_id: "gr-hook", guardrail_name: "hook", stage: "output" });
  });

  test("counts every guardrail that was to judge the answer as an error", () => {
    const heard: [string, CheckResult][] = [];
    const observer: GuardrailObserver = { checked: (guardrail, _stage, result) => heard.push([guardrail.name, result]), failed: () => undefined };
    heldTooLarge([keywords, hook], 4096, context(observer));
    assert.deepEqual(heard, [
      ["keywords", "error"],
      ["hook", "error"],
    ]);
  });
});
