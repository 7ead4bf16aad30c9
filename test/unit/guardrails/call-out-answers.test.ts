/**
 * Reading what the services a guardrail calls answer (a webhook's action, a moderation's flagged
 * categories, a judge's JSON verdict), and turning the ways a call fails into one error type whose
 * messages never quote the answer.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { egressError } from "../../../src/config/egress-policy.js";
import { checkFailure, GuardrailCheckError } from "../../../src/guardrails/check-failure.js";
import { judgePrompt, readJudgement } from "../../../src/guardrails/judge-check.js";
import { readModeration } from "../../../src/guardrails/moderation-check.js";
import { readWebhookAnswer } from "../../../src/guardrails/webhook-check.js";
import { ProviderError } from "../../../src/providers/provider-error.js";

const SERVICE = "the service";

function failureType(run: () => unknown): string {
  try {
    run();
  } catch (err) {
    assert.ok(err instanceof GuardrailCheckError);
    return err.type;
  }
  return assert.fail("it was read without an error");
}

describe("a webhook's answer", () => {
  test("finds nothing when it allows", () => {
    assert.equal(readWebhookAnswer({ action: "allow" }, 1, false, SERVICE), null);
  });

  test("is a finding with its reason when it blocks", () => {
    assert.deepEqual(readWebhookAnswer({ action: "block", reason: "no" }, 1, true, SERVICE), { kinds: ["webhook"], summary: "the webhook refused it", reason: "no", redacted: null });
  });

  test("carries the redacted texts when it redacts for a redact guardrail", () => {
    assert.deepEqual(readWebhookAnswer({ action: "redact", redacted: ["a", "b"] }, 2, true, SERVICE)?.redacted, ["a", "b"]);
  });

  test("ignores the redacted texts for a guardrail that does not redact", () => {
    assert.equal(readWebhookAnswer({ action: "redact" }, 2, false, SERVICE)?.redacted, null);
  });

  test("is malformed when a redaction has another number of texts than were sent", () => {
    assert.equal(failureType(() => readWebhookAnswer({ action: "redact", redacted: ["a"] }, 2, true, SERVICE)), "guardrail_check_malformed");
  });

  test("is malformed when its action is unknown", () => {
    assert.equal(failureType(() => readWebhookAnswer({ action: "maybe" }, 1, false, SERVICE)), "guardrail_check_malformed");
  });

  test("is malformed when its reason is not a string", () => {
    assert.equal(failureType(() => readWebhookAnswer({ action: "block", reason: 42 }, 1, false, SERVICE)), "guardrail_check_malformed");
  });
});

describe("a moderation answer", () => {
  test("finds the categories of every flagged result", () => {
    const answer = { results: [{ flagged: true, categories: { violence: true, hate: false } }, { flagged: false, categories: { sexual: true } }, { flagged: true, categories: { harassment: true } }] };
    assert.deepEqual(readModeration(answer, SERVICE)?.kinds, ["violence", "harassment"]);
  });

  test("finds nothing when no result is flagged", () => {
    assert.equal(readModeration({ results: [{ flagged: false, categories: { violence: false } }] }, SERVICE), null);
  });

  test("names a flagged result without categories as moderation", () => {
    assert.deepEqual(readModeration({ results: [{ flagged: true }] }, SERVICE)?.kinds, ["moderation"]);
  });

  test("is malformed without a results list", () => {
    assert.equal(failureType(() => readModeration({ id: "x" }, SERVICE)), "guardrail_check_malformed");
  });
});

describe("a judge's answer", () => {
  test("finds nothing when it allows", () => {
    assert.equal(readJudgement('{"allow": true, "reason": "fine"}', SERVICE), null);
  });

  test("is a finding with its reason when it refuses, inside a code fence too", () => {
    assert.deepEqual(readJudgement('```json\n{"allow": false, "reason": "off topic"}\n```', SERVICE), { kinds: ["llm_judge"], summary: "the judge refused it", reason: "off topic", redacted: null });
  });

  test("is malformed when it holds no JSON object", () => {
    assert.equal(failureType(() => readJudgement("I think it is fine", SERVICE)), "guardrail_check_malformed");
  });

  test("is malformed when allow is not a boolean", () => {
    assert.equal(failureType(() => readJudgement('{"allow": "yes"}', SERVICE)), "guardrail_check_malformed");
  });

  test("asks in its prompt for the JSON verdict, with the operator's instructions", () => {
    const prompt = judgePrompt("No insults.", "output");
    assert.match(prompt, /No insults\./);
    assert.match(prompt, /"allow": true or false/);
  });
});

describe("checkFailure", () => {
  test("maps an upstream status to guardrail_check_status without its body", () => {
    const error = checkFailure(new ProviderError("hook", 500, "provider_unavailable", "hook answered HTTP 500: the content was: private words"), SERVICE);
    assert.equal(error.type, "guardrail_check_status");
    assert.doesNotMatch(error.message, /private words/);
  });

  test("maps a 2xx body that is not JSON to guardrail_check_malformed", () => {
    assert.equal(checkFailure(new ProviderError("hook", 200, "provider_unavailable", "not JSON"), SERVICE).type, "guardrail_check_malformed");
  });

  test("maps a provider timeout to guardrail_check_timeout", () => {
    assert.equal(checkFailure(new ProviderError("hook", null, "provider_timeout", "slow"), SERVICE).type, "guardrail_check_timeout");
  });

  test("maps a refused connection to guardrail_check_unreachable with its code", () => {
    const cause = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:9"), { code: "ECONNREFUSED" });
    const error = checkFailure(new ProviderError("hook", null, "provider_unavailable", "unreachable", cause), SERVICE);
    assert.equal(error.type, "guardrail_check_unreachable");
    assert.match(error.message, /ECONNREFUSED/);
  });

  test("maps an egress refusal to guardrail_check_egress_denied", () => {
    const error = checkFailure(new ProviderError("hook", null, "provider_unavailable", "refused", egressError("10.0.0.1 is refused by network.egress.deny")), SERVICE);
    assert.equal(error.type, "guardrail_check_egress_denied");
  });
});
