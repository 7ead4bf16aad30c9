/**
 * The guardrail runner with checks that call out: synchronous while none does, concurrent call-outs,
 * any block winning, a webhook's redaction composed with the in-process ones, the timeout and the
 * caller's abort, and what the observer hears. The call-outs are fakes that answer as a test tells them.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { AbortSource } from "../../../src/cancellation.js";
import { RequestAbort } from "../../../src/cancellation.js";
import type { CallOut, CallOutFinding } from "../../../src/guardrails/call-out.js";
import { GuardrailCheckError } from "../../../src/guardrails/check-failure.js";
import { compileContentCheck } from "../../../src/guardrails/compile-check.js";
import { EMPTY_GUARDRAIL_VARIABLES, type GuardrailCheck, type GuardrailDefinition } from "../../../src/guardrails/definition.js";
import type { CheckResult, GuardrailObserver } from "../../../src/guardrails/guardrail-observer.js";
import { runGuardrails, type GuardrailPass, type RunContext } from "../../../src/guardrails/guardrail-run.js";

function definition(name: string, check: GuardrailCheck, extra: Partial<GuardrailDefinition> = {}): GuardrailDefinition {
  const content = check.type === "pii" ? compileContentCheck({ type: "pii", entities: check.entities }) : check.type === "keywords" ? compileContentCheck({ type: "keywords", words: check.words }) : null;
  return {
    id: `gr-${name}`,
    name,
    enabled: true,
    stages: new Set(["input"]),
    scope: "global",
    scopeId: "",
    condition: null,
    check,
    content,
    action: "block",
    redaction: null,
    onError: "block",
    timeoutMs: 2000,
    samplingRate: 1,
    ...extra,
  };
}

const emails = (name: string, extra: Partial<GuardrailDefinition> = {}) => definition(name, { type: "pii", entities: ["email"] }, extra);
const hook = (name: string, extra: Partial<GuardrailDefinition> = {}) => definition(name, { type: "webhook", url: `http://127.0.0.1:9/${name}`, headers: {}, timeoutMs: 2000 }, extra);
const redacting: Partial<GuardrailDefinition> = { action: "redact", redaction: { strategy: "replace", replacement: "[REDACTED:<kind>]" } };

function context(callOut?: CallOut, extra: Partial<RunContext> = {}): RunContext {
  return { stage: "input", variables: () => ({ ...EMPTY_GUARDRAIL_VARIABLES, stage: "input" }), random: () => 0, ...(callOut ? { callOut } : {}), ...extra };
}

/** A call-out answering each guardrail by name; a missing name never answers. */
function answering(answers: Record<string, (texts: readonly string[], signal: AbortSource) => Promise<CallOutFinding | null>>): { callOut: CallOut; calls: { name: string; texts: readonly string[]; signal: AbortSource }[] } {
  const calls: { name: string; texts: readonly string[]; signal: AbortSource }[] = [];
  const callOut: CallOut = (guardrail, request) => {
    calls.push({ name: guardrail.name, texts: request.texts, signal: request.signal });
    const answer = answers[guardrail.name];
    return answer === undefined ? new Promise(() => undefined) : answer(request.texts, request.signal);
  };
  return { callOut, calls };
}

const webhookFinding = (redacted: readonly string[] | null, reason = ""): CallOutFinding => ({ kinds: ["webhook"], summary: "the webhook refused it", reason, redacted });

async function settled(result: GuardrailPass | Promise<GuardrailPass>): Promise<GuardrailPass> {
  assert.ok(result instanceof Promise, "a run with a call-out answers a promise");
  return result;
}

describe("runGuardrails with checks that call out", () => {
  test("stays synchronous when no guardrail calls out", () => {
    const pass = runGuardrails([emails("pii")], ["write to ana@example.com"], context(answering({}).callOut));
    assert.ok(!(pass instanceof Promise));
    assert.equal(pass.blocked?.guardrail.name, "pii");
  });

  test("answers a promise when a guardrail calls out", async () => {
    const { callOut } = answering({ hook: async () => null });
    const pass = await settled(runGuardrails([hook("hook")], ["hello"], context(callOut)));
    assert.deepEqual(pass.verdicts.map((v) => v.verdict), ["pass"]);
  });

  test("starts every call-out before any of them answers", async () => {
    let release = (): void => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const { callOut, calls } = answering({ a: async () => (await gate, null), b: async () => (await gate, null) });
    const running = runGuardrails([hook("a"), hook("b")], ["hello"], context(callOut));
    assert.deepEqual(calls.map((call) => call.name), ["a", "b"]);
    release();
    await settled(running);
  });

  test("lets a block win over a redaction listed before it", async () => {
    const { callOut } = answering({ blocker: async () => webhookFinding(null, "no") });
    const pass = await settled(runGuardrails([emails("pii", redacting), hook("blocker")], ["write to ana@example.com"], context(callOut)));
    assert.equal(pass.blocked?.guardrail.name, "blocker");
    assert.equal(pass.changed, false);
    assert.deepEqual(pass.verdicts.map((v) => `${v.guardrail.name}=${v.verdict}`), ["pii=redact", "blocker=block"]);
  });

  test("blocks when a redact guardrail's service flags the content without redacted texts", async () => {
    const { callOut } = answering({ hook: async () => webhookFinding(null) });
    const pass = await settled(runGuardrails([hook("hook", redacting)], ["text"], context(callOut)));
    assert.equal(pass.blocked?.guardrail.name, "hook");
  });

  test("takes a webhook's redacted texts, then finds the in-process redactions again in them", async () => {
    const { callOut } = answering({ hook: async (texts) => webhookFinding(texts.map((text) => text.replace("Ana", "[name]"))) });
    const pass = await settled(runGuardrails([emails("pii", redacting), hook("hook", redacting)], ["Ana at ana@example.com"], context(callOut)));
    assert.deepEqual(pass.texts, ["[name] at [REDACTED:email]"]);
    assert.equal(pass.changed, true);
  });

  test("asks a later redacting webhook again with the texts an earlier one redacted", async () => {
    const { callOut, calls } = answering({
      first: async (texts) => webhookFinding(texts.map((text) => text.replace("alpha", "[a]"))),
      second: async (texts) => webhookFinding(texts.map((text) => text.replace("beta", "[b]"))),
    });
    const pass = await settled(runGuardrails([hook("first", redacting), hook("second", redacting)], ["alpha beta"], context(callOut)));
    assert.deepEqual(pass.texts, ["[a] [b]"]);
    assert.deepEqual(calls.at(-1)?.texts, ["[a] beta"]);
  });

  test("counts a call-out that outlives the guardrail's timeout as failed, and on_error decides", async () => {
    const { callOut, calls } = answering({});
    const pass = await settled(runGuardrails([hook("slow", { timeoutMs: 20, onError: "allow" })], ["hello"], context(callOut)));
    assert.deepEqual(pass.verdicts.map((v) => v.verdict), ["error"]);
    assert.equal(pass.blocked, null);
    assert.equal(calls[0]?.signal.aborted, true);
  });

  test("blocks on a failed call-out when on_error is block, saying why without the content", async () => {
    const { callOut } = answering({ hook: () => Promise.reject(new GuardrailCheckError("guardrail_check_status", "the webhook answered HTTP 500")) });
    const pass = await settled(runGuardrails([hook("hook")], ["private words"], context(callOut)));
    assert.equal(pass.blocked?.detail, "its webhook check failed (guardrail_check_status)");
  });

  test("rejects with the caller's reason when the caller goes away, and aborts the call-out", async () => {
    const { callOut, calls } = answering({});
    const caller = new RequestAbort();
    const running = runGuardrails([hook("hook", { timeoutMs: 60_000 })], ["hello"], context(callOut, { signal: caller }));
    const reason = new Error("the client closed the request");
    caller.abort(reason);
    await assert.rejects(settled(running), (err) => err === reason);
    assert.equal(calls[0]?.signal.aborted, true);
  });

  test("passes a call-out without asking when there is no text to send", async () => {
    const { callOut, calls } = answering({});
    const pass = runGuardrails([hook("hook")], ["", ""], context(callOut));
    assert.ok(!(pass instanceof Promise));
    assert.deepEqual(pass.verdicts.map((v) => v.verdict), ["pass"]);
    assert.equal(calls.length, 0);
  });

  test("fails a call-out check when the stage has no way to call out", () => {
    const pass = runGuardrails([hook("hook", { onError: "allow" })], ["hello"], context());
    return settled(pass).then((done) => assert.deepEqual(done.verdicts.map((v) => v.verdict), ["error"]));
  });

  test("tells the observer each check's result, and each failure", async () => {
    const checked: string[] = [];
    const failed: string[] = [];
    const observer: GuardrailObserver = {
      checked: (guardrail, stage, result: CheckResult, seconds) => void checked.push(`${guardrail.name}:${stage}:${result}:${seconds === null ? "none" : "timed"}`),
      failed: (guardrail, _stage, error) => void failed.push(`${guardrail.name}:${(error as GuardrailCheckError).type}`),
    };
    const { callOut } = answering({ ok: async () => null, broken: () => Promise.reject(new Error("socket hang up")) });
    await settled(runGuardrails([emails("pii"), hook("ok"), hook("broken", { onError: "allow" })], ["clean"], context(callOut, { observer })));
    assert.deepEqual(checked.sort(), ["broken:input:error:timed", "ok:input:pass:timed", "pii:input:pass:timed"]);
    assert.deepEqual(failed, ["broken:guardrail_check_unreachable"]);
  });
});
