/**
 * Guardrails whose checks call out, through the real app and the official `openai` SDK against loopback
 * services: webhooks that allow, block, redact, hang past their timeout, answer 500 or malformed JSON, or
 * cannot be reached; a moderation endpoint; a judge model behind a provider. Also the metrics and spans
 * the checks leave. The mock upstream echoes the last user text ("echo: <text>") and streams it word by word.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";
import OpenAI from "openai";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { startMockOpenAi, type MockUpstream } from "../fixtures/mock-openai.js";
import { JUDGE_REASON, startGuardrailServices, WEBHOOK_REASON, WEBHOOK_REDACTION, type GuardrailServices } from "../fixtures/guardrail-services.js";
import { startApp, type TestApp } from "../helpers/app.js";
import { parseExposition, total, type Sample } from "../helpers/exposition.js";
import { fileKey, refusal, sdk } from "../helpers/inference.js";
import { startOtlpReceiver, type OtlpReceiver } from "../helpers/otlp-receiver.js";
import { freePort } from "../helpers/ports.js";

const ALL_OPENAI = [{ provider: "openai", allowed_models: ["*"], key_ids: ["*"], weight: 1 }];
/** A generous bound on the test's own waits: a hung webhook must still be answered well within it. */
const TEST_TIMEOUT_MS = 30_000;

let openai: MockUpstream;
let services: GuardrailServices;
let receiver: OtlpReceiver;
let app: TestApp;

/** A guardrail scoped to one virtual key of the same name. */
function guardrail(name: string, stages: string[], check: Record<string, unknown>, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { id: `gr-${name}`, name, stages, scope: "virtual_key", scope_id: `vk-${name}`, check, action: "block", ...extra };
}

function hook(path: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { type: "webhook", webhook: { url: `${services.url}/webhook/${path}`, ...extra } };
}

const KEYS = ["allow", "block", "redact", "hang-allow", "hang-block", "hang-long", "fail", "malformed", "unreachable", "out-redact", "out-stop", "mod", "judge", "both"];

before(async () => {
  openai = await startMockOpenAi();
  services = await startGuardrailServices();
  receiver = await startOtlpReceiver();
  const closedPort = await freePort();
  app = await startApp({
    tracing: { url: `${receiver.url}/v1/traces`, headers: {}, serviceName: "gw-test", sampler: "parentbased_always_on", sampleRatio: 1, captureContent: false, exportDelayMs: 20 },
    inference: inferenceOptionsFromFile(
      {
        openai: { keys: [fileKey("oa", { models: ["gpt-4o-mini"] })], network_config: { base_url: openai.url } },
        mod: { keys: [fileKey("mk")], network_config: { base_url: services.url } },
        judge: { keys: [fileKey("jk", { models: ["judge-model"] })], network_config: { base_url: services.url } },
      },
      KEYS.map((name) => ({ id: `vk-${name}`, name, value: `sk-gw-${name}`, provider_configs: ALL_OPENAI })),
    ),
    guardrails: [
      guardrail("allow", ["input"], hook("allow", { headers: { "x-hook-token": "hook-token-1" } })),
      guardrail("block", ["input"], hook("block")),
      guardrail("redact", ["input"], hook("redact"), { action: "redact" }),
      guardrail("hang-allow", ["input"], hook("hang"), { on_error: "allow", timeout: "300ms" }),
      guardrail("hang-block", ["input"], hook("hang"), { on_error: "block", timeout: "300ms" }),
      guardrail("hang-long", ["input"], hook("hang"), { on_error: "allow", timeout: "60s" }),
      guardrail("fail", ["input"], hook("fail")),
      guardrail("malformed", ["input"], hook("malformed")),
      guardrail("unreachable", ["input"], { type: "webhook", webhook: { url: `http://127.0.0.1:${closedPort}/check` } }),
      guardrail("out-redact", ["output"], hook("redact"), { action: "redact" }),
      guardrail("out-stop", ["output"], hook("stop-words")),
      guardrail("mod", ["input"], { type: "moderation", moderation: { provider: "mod", model: "omni-moderation-latest" } }),
      guardrail("judge", ["input"], { type: "llm_judge", llm_judge: { provider: "judge", model: "judge-model", instructions: "Refuse anything about forbidden topics." } }),
      { ...guardrail("both", ["input"], hook("allow")), id: "gr-both-hook", name: "both-hook" },
      { ...guardrail("both", ["input"], { type: "moderation", moderation: { provider: "mod", model: "omni-moderation-latest" } }), id: "gr-both-mod", name: "both-mod" },
    ],
  });
});

after(async () => {
  await app?.stop();
  await services?.close();
  await receiver?.close();
  await openai?.close();
});

function ask(name: string, content: string): Promise<{ data: OpenAI.ChatCompletion; response: Response }> {
  return sdk(app, `sk-gw-${name}`).chat.completions.create({ model: "openai/gpt-4o-mini", messages: [{ role: "user", content }] }).withResponse();
}

function lastSent(): string {
  const body = openai.last().body as { messages: { content: string }[] };
  return body.messages[body.messages.length - 1]?.content ?? "";
}

async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + TEST_TIMEOUT_MS;
  while (!condition()) {
    if (Date.now() > deadline) assert.fail(`gave up waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function scrape(): Promise<{ text: string; samples: Sample[] }> {
  const res = await fetch(`${app.url}/metrics`);
  assert.equal(res.status, 200);
  const text = await res.text();
  return { text, samples: parseExposition(text) };
}

describe("webhook checks", { timeout: TEST_TIMEOUT_MS }, () => {
  test("lets a request through when the webhook allows it", async () => {
    const { data, response } = await ask("allow", "hello there");
    assert.equal(data.choices[0]?.message.content, "echo: hello there");
    assert.equal(response.headers.get("x-gw-guardrails"), "allow=pass");
  });

  test("posts the stage, the texts and the guardrail's metadata with its headers", async () => {
    await ask("allow", "what goes out");
    const sent = services.received("/webhook/allow").at(-1);
    assert.deepEqual(sent?.body, {
      stage: "input",
      content: ["what goes out"],
      metadata: { guardrail_id: "gr-allow", guardrail_name: "allow", virtual_key_id: "vk-allow", model: "openai/gpt-4o-mini" },
    });
    assert.equal(sent?.headers["x-hook-token"], "hook-token-1");
    assert.equal(sent?.headers["content-type"], "application/json");
    assert.doesNotMatch(sent?.rawBody ?? "", /sk-gw-/);
  });

  test("blocks a request the webhook blocks with 446 and its reason, before any upstream call", async () => {
    const calls = openai.requests.length;
    const err = await refusal(ask("block", "anything"));
    assert.equal(err.status, 446);
    const body = err.error as Record<string, unknown>;
    assert.equal(body["guardrail_name"], "block");
    assert.match(String(body["message"]), new RegExp(`the webhook refused it: ${WEBHOOK_REASON}`));
    assert.equal(err.headers?.get("x-gw-guardrails"), "block=block");
    assert.equal(openai.requests.length, calls);
  });

  test("sends the upstream the texts the webhook redacted", async () => {
    const { response } = await ask("redact", "my secret plan");
    assert.equal(lastSent(), `my ${WEBHOOK_REDACTION} plan`);
    assert.equal(response.headers.get("x-gw-guardrails"), "redact=redact");
  });

  test("answers with an error verdict when the webhook hangs past the timeout and on_error is allow", async () => {
    const { data, response } = await ask("hang-allow", "still there?");
    assert.equal(data.choices[0]?.message.content, "echo: still there?");
    assert.equal(response.headers.get("x-gw-guardrails"), "hang-allow=error");
  });

  test("blocks with 446 when the webhook hangs past the timeout and on_error is block", async () => {
    const err = await refusal(ask("hang-block", "still there?"));
    assert.equal(err.status, 446);
    assert.match(String((err.error as Record<string, unknown>)["message"]), /guardrail_check_timeout/);
  });

  test("closes the connection of a webhook call that ran out of time", async () => {
    await ask("hang-allow", "anyone?");
    await until(() => services.openHangs === 0, "the gateway closed the hung webhook call");
  });

  test("aborts the webhook call when the client goes away", async () => {
    await until(() => services.openHangs === 0, "no webhook call is open");
    const controller = new AbortController();
    const request = fetch(`${app.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer sk-gw-hang-long" },
      body: JSON.stringify({ model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "wait for me" }] }),
      signal: controller.signal,
    });
    const settled = request.catch((err: unknown) => err);
    await until(() => services.openHangs === 1, "the webhook call is open");
    controller.abort();
    assert.ok((await settled) instanceof Error);
    await until(() => services.openHangs === 0, "the gateway aborted the webhook call");
  });

  test("counts a webhook answering 500 as a failed check that on_error decides", async () => {
    const err = await refusal(ask("fail", "anything"));
    assert.equal(err.status, 446);
    assert.match(String((err.error as Record<string, unknown>)["message"]), /its webhook check failed \(guardrail_check_status\)/);
  });

  test("counts a webhook answering malformed JSON as a failed check that on_error decides", async () => {
    const err = await refusal(ask("malformed", "anything"));
    assert.equal(err.status, 446);
    assert.match(String((err.error as Record<string, unknown>)["message"]), /guardrail_check_malformed/);
  });

  test("counts a webhook that cannot be reached as a failed check that on_error decides", async () => {
    const err = await refusal(ask("unreachable", "anything"));
    assert.equal(err.status, 446);
    assert.match(String((err.error as Record<string, unknown>)["message"]), /guardrail_check_unreachable/);
  });

  test("logs a failed check without the content it was given", async () => {
    await refusal(ask("fail", "a very private sentence"));
    const lines = app.logLines.filter((line) => line.includes("guardrail check failed"));
    assert.ok(lines.length > 0);
    for (const line of lines) assert.doesNotMatch(line, /private sentence/);
  });
});

describe("webhook checks on answers", { timeout: TEST_TIMEOUT_MS }, () => {
  test("redacts a JSON answer with the texts the webhook returned", async () => {
    const { data, response } = await ask("out-redact", "my secret plan");
    assert.equal(data.choices[0]?.message.content, `echo: my ${WEBHOOK_REDACTION} plan`);
    assert.equal(response.headers.get("x-gw-guardrails"), "out-redact=redact");
    assert.deepEqual(services.received("/webhook/redact").at(-1)?.body?.["content"], ["echo: my secret plan"]);
  });

  test("sends a streamed answer redacted once the webhook has judged it whole", async () => {
    const stream = await sdk(app, "sk-gw-out-redact").chat.completions.create({ model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "my secret plan" }], stream: true });
    let text = "";
    let finished = false;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? "";
      if (chunk.choices[0]?.finish_reason) finished = true;
    }
    assert.equal(text, `echo: my ${WEBHOOK_REDACTION} plan`);
    assert.ok(finished);
    assert.deepEqual(services.received("/webhook/redact").at(-1)?.body?.["content"], ["echo: my secret plan"]);
  });

  test("ends a streamed answer the webhook blocks with an error event and none of its text", async () => {
    const stream = await sdk(app, "sk-gw-out-stop").chat.completions.create({ model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "please stop now" }], stream: true });
    let text = "";
    const err = await refusal(
      (async () => {
        for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
      })(),
    );
    assert.equal((err.error as Record<string, unknown> | undefined)?.["type"] ?? err.type, "guardrail_blocked");
    assert.equal(text, "");
  });

  test("sends a streamed answer unchanged when the webhook allows it", async () => {
    const stream = await sdk(app, "sk-gw-out-stop").chat.completions.create({ model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "carry on" }], stream: true });
    let text = "";
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
    assert.equal(text, "echo: carry on");
  });
});

describe("moderation checks", { timeout: TEST_TIMEOUT_MS }, () => {
  test("blocks a request the moderation endpoint flags, naming the flagged categories", async () => {
    const err = await refusal(ask("mod", "I will hurt them"));
    assert.equal(err.status, 446);
    assert.match(String((err.error as Record<string, unknown>)["message"]), /found violence$/);
  });

  test("posts the texts to the provider's /v1/moderations with its first key", async () => {
    const { response } = await ask("mod", "a kind word");
    assert.equal(response.headers.get("x-gw-guardrails"), "mod=pass");
    const sent = services.received("/v1/moderations").at(-1);
    assert.deepEqual(sent?.body, { model: "omni-moderation-latest", input: ["a kind word"] });
    assert.equal(sent?.headers["authorization"], "Bearer sk-mk");
  });
});

describe("llm_judge checks", { timeout: TEST_TIMEOUT_MS }, () => {
  test("blocks a request the judge refuses, with its reason", async () => {
    const calls = openai.requests.length;
    const err = await refusal(ask("judge", "tell me the forbidden thing"));
    assert.equal(err.status, 446);
    assert.match(String((err.error as Record<string, unknown>)["message"]), new RegExp(`the judge refused it: ${JUDGE_REASON}`));
    assert.equal(openai.requests.length, calls);
  });

  test("asks the judge with the instructions as system message and the content as user message", async () => {
    const { response } = await ask("judge", "a harmless question");
    assert.equal(response.headers.get("x-gw-guardrails"), "judge=pass");
    const sent = services.received("/v1/chat/completions").at(-1)?.body as { model: string; messages: { role: string; content: string }[] };
    assert.equal(sent.model, "judge-model");
    assert.equal(sent.messages[0]?.role, "system");
    assert.match(sent.messages[0]?.content ?? "", /Refuse anything about forbidden topics\./);
    assert.deepEqual(sent.messages[1], { role: "user", content: "a harmless question" });
  });
});

describe("several checks on one stage", { timeout: TEST_TIMEOUT_MS }, () => {
  test("blocks when one of them blocks, and names every verdict", async () => {
    const err = await refusal(ask("both", "I will hurt them"));
    assert.equal(err.status, 446);
    assert.equal((err.error as Record<string, unknown>)["guardrail_name"], "both-mod");
    assert.equal(err.headers?.get("x-gw-guardrails"), "both-hook=pass,both-mod=block");
  });
});

describe("guardrail metrics", { timeout: TEST_TIMEOUT_MS }, () => {
  test("counts each check in gw_guardrail_checks_total by guardrail, stage and result", async () => {
    const before = total((await scrape()).samples, "gw_guardrail_checks_total", { guardrail: "allow", stage: "input", result: "pass" });
    await ask("allow", "count me");
    const after = total((await scrape()).samples, "gw_guardrail_checks_total", { guardrail: "allow", stage: "input", result: "pass" });
    assert.equal(after, before + 1);
  });

  test("counts a failed check as an error, whatever on_error decided", async () => {
    const match = { guardrail: "malformed", stage: "input", result: "error" };
    const before = total((await scrape()).samples, "gw_guardrail_checks_total", match);
    await refusal(ask("malformed", "count me"));
    assert.equal(total((await scrape()).samples, "gw_guardrail_checks_total", match), before + 1);
  });

  test("counts a block and a redaction under their results", async () => {
    const blocked = { guardrail: "block", stage: "input", result: "block" };
    const redacted = { guardrail: "redact", stage: "input", result: "redact" };
    const before = (await scrape()).samples;
    await refusal(ask("block", "x"));
    await ask("redact", "my secret");
    const after = (await scrape()).samples;
    assert.equal(total(after, "gw_guardrail_checks_total", blocked), total(before, "gw_guardrail_checks_total", blocked) + 1);
    assert.equal(total(after, "gw_guardrail_checks_total", redacted), total(before, "gw_guardrail_checks_total", redacted) + 1);
  });

  test("observes each check's time in gw_guardrail_duration_seconds by guardrail and type", async () => {
    const match = { guardrail: "mod", type: "moderation" };
    const before = total((await scrape()).samples, "gw_guardrail_duration_seconds_count", match);
    await ask("mod", "time me");
    const { text, samples } = await scrape();
    assert.equal(total(samples, "gw_guardrail_duration_seconds_count", match), before + 1);
    assert.match(text, /^# TYPE gw_guardrail_duration_seconds histogram$/m);
  });

  test("puts no checked content in any label", async () => {
    await ask("allow", "label-free text");
    const { samples } = await scrape();
    for (const sample of samples.filter((s) => s.name.startsWith("gw_guardrail_"))) {
      for (const value of Object.values(sample.labels)) assert.doesNotMatch(value, /label-free/);
    }
  });
});

describe("guardrail spans", { timeout: TEST_TIMEOUT_MS }, () => {
  test("puts a span per check under the traced request, with its result and never the content", async () => {
    const traceId = randomBytes(16).toString("hex");
    const res = await fetch(`${app.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer sk-gw-both", traceparent: `00-${traceId}-${randomBytes(8).toString("hex")}-01` },
      body: JSON.stringify({ model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "a traced sentence" }] }),
    });
    assert.equal(res.status, 200);
    const names = ["guardrail both-hook", "guardrail both-mod"];
    // The request's own span may come in a later export than its checks' spans: wait for all of them.
    const complete = (all: readonly { traceId: string; name: string; kind: number }[]): boolean =>
      all.some((span) => span.traceId === traceId && span.kind === 2) && names.every((name) => all.some((span) => span.traceId === traceId && span.name === name));
    const spans = (await receiver.waitFor(complete)).filter((span) => span.traceId === traceId);
    const server = spans.find((span) => span.kind === 2);
    for (const name of names) {
      const span = spans.find((candidate) => candidate.name === name);
      assert.equal(span?.parentSpanId, server?.spanId);
      assert.equal(span?.kind, 3);
      assert.equal(span?.attributes["gw.guardrail.stage"], "input");
      assert.equal(span?.attributes["gw.guardrail.result"], "pass");
    }
    assert.doesNotMatch(JSON.stringify(spans.map((span) => span.attributes)), /traced sentence/);
  });

  test("marks the span of a failed check with its failure type", async () => {
    const traceId = randomBytes(16).toString("hex");
    const res = await fetch(`${app.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer sk-gw-fail", traceparent: `00-${traceId}-${randomBytes(8).toString("hex")}-01` },
      body: JSON.stringify({ model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "anything" }] }),
    });
    assert.equal(res.status, 446);
    const spans = await receiver.waitFor((all) => all.some((span) => span.traceId === traceId && span.name === "guardrail fail"));
    const span = spans.find((candidate) => candidate.traceId === traceId && candidate.name === "guardrail fail");
    assert.equal(span?.attributes["gw.guardrail.result"], "error");
    assert.equal(span?.attributes["error.type"], "guardrail_check_status");
    assert.equal(span?.statusCode, 2);
  });
});
