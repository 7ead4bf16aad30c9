/**
 * A streamed answer held whole for an output guardrail that calls out, bounded by the answering provider's
 * max_response_bytes, through the real app. The held events are counted as they would go out: an Anthropic
 * upstream's text deltas become OpenAI chat chunks larger than the events they came as, so its answer can
 * stay under the provider's bound on the wire while what the gateway would hold passes it; that is the
 * answer the hold's own bound has to stop. An OpenAI upstream's chunks are held as they came, so its own
 * bound on the upstream's bytes ends such an answer first.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { startMockAnthropic } from "../fixtures/mock-anthropic.js";
import { startMockOpenAi, type MockUpstream } from "../fixtures/mock-openai.js";
import { startGuardrailServices, type GuardrailServices } from "../fixtures/guardrail-services.js";
import { startApp, type TestApp } from "../helpers/app.js";
import { parseExposition, total } from "../helpers/exposition.js";
import { fileKey } from "../helpers/inference.js";

const TEST_TIMEOUT_MS = 30_000;
/** Each provider's max_response_bytes: the bound on one answer, and on what a held stream keeps. */
const MAX_RESPONSE_BYTES = 16_384;
/**
 * Words of the Anthropic answer that passes the bound only once held: its events take about 15 KB on the
 * wire, under the bound, and the chat chunks they become about 23 KB.
 */
const HELD_PAST_BOUND_WORDS = 120;

let openai: MockUpstream;
let anthropic: MockUpstream;
let services: GuardrailServices;
let app: TestApp;

before(async () => {
  openai = await startMockOpenAi();
  anthropic = await startMockAnthropic();
  services = await startGuardrailServices();
  const network = (url: string) => ({ base_url: url, max_response_bytes: MAX_RESPONSE_BYTES });
  const configs = [
    { provider: "openai", allowed_models: ["*"], key_ids: ["*"], weight: 1 },
    { provider: "anthropic", allowed_models: ["*"], key_ids: ["*"], weight: 1 },
  ];
  const audit = (name: string, onError: string): Record<string, unknown> => ({
    id: `gr-${name}`,
    name,
    stages: ["output"],
    scope: "virtual_key",
    scope_id: `vk-${name}`,
    check: { type: "webhook", webhook: { url: `${services.url}/webhook/allow` } },
    action: "block",
    on_error: onError,
  });
  app = await startApp({
    inference: inferenceOptionsFromFile(
      {
        openai: { keys: [fileKey("oa")], network_config: network(openai.url) },
        anthropic: { keys: [fileKey("an")], network_config: network(anthropic.url) },
      },
      ["audit", "audit-lenient"].map((name) => ({ id: `vk-${name}`, name, value: `sk-gw-${name}`, provider_configs: configs })),
    ),
    guardrails: [audit("audit", "block"), audit("audit-lenient", "allow")],
  });
});

after(async () => {
  await app?.stop();
  await services?.close();
  await anthropic?.close();
  await openai?.close();
});

/** What a streamed chat completion sent: the text of its chunks and the error of its error event, if any. */
interface StreamRead {
  status: number;
  text: string;
  error: Record<string, unknown> | null;
}

async function stream(key: string, model: string, content: string): Promise<StreamRead> {
  const res = await fetch(`${app.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer sk-gw-${key}` },
    body: JSON.stringify({ model, messages: [{ role: "user", content }], stream: true }),
  });
  const read: StreamRead = { status: res.status, text: "", error: null };
  // A stream that failed before its first event is answered as an HTTP error instead.
  if (res.status !== 200) {
    read.error = ((await res.json()) as { error: Record<string, unknown> }).error;
    return read;
  }
  for (const line of (await res.text()).split("\n")) {
    if (!line.startsWith("data: ") || line === "data: [DONE]") continue;
    const event = JSON.parse(line.slice("data: ".length)) as { error?: Record<string, unknown>; choices?: { delta?: { content?: string } }[] };
    if (event.error !== undefined) read.error = event.error;
    read.text += event.choices?.[0]?.delta?.content ?? "";
  }
  return read;
}

const words = (count: number): string => Array.from({ length: count }, () => "ab").join(" ");

function webhookCalls(): number {
  return services.received("/webhook/allow").length;
}

describe("a stream held whole for a check that calls out", { timeout: TEST_TIMEOUT_MS }, () => {
  test("is sent whole once judged when it stays within the provider's max_response_bytes", async () => {
    const read = await stream("audit", "anthropic/claude-sonnet-4-5", words(10));
    assert.equal(read.error, null);
    assert.equal(read.text, `echo: ${words(10)}`);
  });

  test("ends with the block's error event naming the limit, none of its text sent, once what it holds passes max_response_bytes", async () => {
    const calls = webhookCalls();
    const read = await stream("audit", "anthropic/claude-sonnet-4-5", words(HELD_PAST_BOUND_WORDS));
    assert.equal(read.status, 200);
    assert.equal(read.text, "");
    assert.equal(read.error?.["type"], "guardrail_blocked");
    assert.equal(read.error?.["code"], "guardrail_output_too_large");
    assert.equal(read.error?.["guardrail_name"], "audit");
    assert.equal(read.error?.["stage"], "output");
    assert.match(String(read.error?.["message"]), new RegExp(`passed ${MAX_RESPONSE_BYTES} bytes, the provider's max_response_bytes`));
    assert.equal(webhookCalls(), calls, "the webhook was asked about an answer it could not have whole");
  });

  test("ends with the same error event when the guardrail's on_error is allow", async () => {
    const read = await stream("audit-lenient", "anthropic/claude-sonnet-4-5", words(HELD_PAST_BOUND_WORDS));
    assert.equal(read.text, "");
    assert.equal(read.error?.["code"], "guardrail_output_too_large");
  });

  test("counts the guardrail's check as an error when what it holds passes the bound", async () => {
    const match = { guardrail: "audit", stage: "output", result: "error" };
    const scrape = async (): Promise<number> => total(parseExposition(await (await fetch(`${app.url}/metrics`)).text()), "gw_guardrail_checks_total", match);
    const before = await scrape();
    await stream("audit", "anthropic/claude-sonnet-4-5", words(HELD_PAST_BOUND_WORDS));
    assert.equal(await scrape(), before + 1);
  });

  test("ends with the upstream's error, none of its text sent, when the upstream itself sends more than max_response_bytes", async () => {
    const read = await stream("audit", "openai/gpt-4o-mini", words(HELD_PAST_BOUND_WORDS));
    assert.equal(read.text, "");
    assert.equal(read.error?.["type"], "provider_unavailable");
  });
});
