/**
 * Guardrails on /v1 and /anthropic through the real app and the official `openai` SDK: input blocked before
 * any upstream call (446 with the guardrail named), input redacted before it goes upstream, answers
 * redacted whole and across stream chunks, and the x-gw-guardrails header on every answer a guardrail
 * looked at. The mock upstream echoes the last user text and streams it word by word.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import OpenAI from "openai";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { startMockOpenAi, type MockUpstream } from "../fixtures/mock-openai.js";
import { startApp, type TestApp } from "../helpers/app.js";
import { fileKey, refusal, sdk } from "../helpers/inference.js";
import { parseExposition, total } from "../helpers/exposition.js";

const ALL_OPENAI = [{ provider: "openai", allowed_models: ["*"], key_ids: ["*"], weight: 1 }];
/** A Luhn-valid test card number. */
const CARD = "4111 1111 1111 1111";

let openai: MockUpstream;
let app: TestApp;

before(async () => {
  openai = await startMockOpenAi();
  app = await startApp({
    inference: inferenceOptionsFromFile({ openai: { keys: [fileKey("oa", { models: ["gpt-4o-mini"] })], network_config: { base_url: openai.url } } }, [
      { id: "vk-block", name: "block", value: "sk-gw-block", provider_configs: ALL_OPENAI },
      { id: "vk-redact", name: "redact", value: "sk-gw-redact", provider_configs: ALL_OPENAI },
      { id: "vk-out", name: "out", value: "sk-gw-out", provider_configs: ALL_OPENAI },
      { id: "vk-plain", name: "plain", value: "sk-gw-plain", provider_configs: ALL_OPENAI },
    ]),
    guardrails: [
      { id: "gr-block", name: "no-cards", stages: ["input"], scope: "virtual_key", scope_id: "vk-block", check: { type: "pii", pii: { entities: ["credit_card"] } }, action: "block" },
      { id: "gr-redact", name: "mask-email", stages: ["input"], scope: "virtual_key", scope_id: "vk-redact", check: { type: "pii", pii: { entities: ["email"] } }, action: "redact" },
      { id: "gr-out", name: "hide-cards", stages: ["output"], scope: "virtual_key", scope_id: "vk-out", check: { type: "pii", pii: { entities: ["credit_card"] } }, action: "redact" },
    ],
  });
});

after(async () => {
  await app?.stop();
  await openai?.close();
});

function ask(key: string, content: string): Promise<{ data: OpenAI.ChatCompletion; response: Response }> {
  return sdk(app, key).chat.completions.create({ model: "openai/gpt-4o-mini", messages: [{ role: "user", content }] }).withResponse();
}

describe("input guardrails", () => {
  test("blocks a request holding a card number with 446 before any upstream call", async () => {
    const calls = openai.requests.length;
    const err = await refusal(ask("sk-gw-block", `charge ${CARD} please`));
    assert.equal(err.status, 446);
    const body = err.error as Record<string, unknown>;
    assert.equal(body["type"], "guardrail_blocked");
    assert.equal(body["guardrail_id"], "gr-block");
    assert.equal(body["guardrail_name"], "no-cards");
    assert.equal(body["stage"], "input");
    assert.doesNotMatch(String(body["message"]), /4111/);
    assert.equal(err.headers?.get("x-gw-guardrails"), "no-cards=block");
    assert.equal(openai.requests.length, calls);
  });

  test("lets a request without a card through and names the guardrail as passed", async () => {
    const { data, response } = await ask("sk-gw-block", "no numbers here");
    assert.equal(data.choices[0]?.message.content, "echo: no numbers here");
    assert.equal(response.headers.get("x-gw-guardrails"), "no-cards=pass");
  });

  test("sends the upstream the request with the e-mail address redacted", async () => {
    const { data, response } = await ask("sk-gw-redact", "write to ana@example.com today");
    const sent = openai.requests[openai.requests.length - 1]?.body as { messages: { content: string }[] };
    assert.equal(sent.messages[0]?.content, "write to [REDACTED:email] today");
    assert.equal(data.choices[0]?.message.content, "echo: write to [REDACTED:email] today");
    assert.equal(response.headers.get("x-gw-guardrails"), "mask-email=redact");
  });

  test("adds no header where no guardrail applies", async () => {
    const { response } = await ask("sk-gw-plain", `charge ${CARD}`);
    assert.equal(response.headers.get("x-gw-guardrails"), null);
  });

  test("blocks through Anthropic's error envelope on /anthropic", async () => {
    const res = await fetch(`${app.url}/anthropic/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": "sk-gw-block" },
      body: JSON.stringify({ model: "openai/gpt-4o-mini", max_tokens: 16, messages: [{ role: "user", content: `card ${CARD}` }] }),
    });
    assert.equal(res.status, 446);
    const body = (await res.json()) as { type: string; error: Record<string, unknown> };
    assert.equal(body.type, "error");
    assert.equal(body.error["type"], "guardrail_blocked");
    assert.equal(body.error["guardrail_name"], "no-cards");
  });
});

describe("output guardrails", () => {
  test("redacts a card number in a JSON answer", async () => {
    const { data, response } = await ask("sk-gw-out", `repeat ${CARD}`);
    assert.equal(data.choices[0]?.message.content, "echo: repeat [REDACTED:credit_card]");
    assert.equal(response.headers.get("x-gw-guardrails"), "hide-cards=redact");
  });

  test("redacts a card number in a streamed Responses answer, its final events included", async () => {
    const stream = await sdk(app, "sk-gw-out").responses.create({ model: "openai/gpt-4o-mini", input: `repeat ${CARD} now`, stream: true });
    const events: unknown[] = [];
    let text = "";
    let final = "";
    for await (const event of stream) {
      events.push(event);
      if (event.type === "response.output_text.delta") text += event.delta;
      if (event.type === "response.completed") final = event.response.output_text ?? JSON.stringify(event.response.output);
    }
    assert.equal(text, "echo: repeat [REDACTED:credit_card] now");
    assert.match(final, /\[REDACTED:credit_card\]/);
    assert.doesNotMatch(JSON.stringify(events), /4111/);
  });

  test("redacts a card number that arrives split over stream chunks", async () => {
    const stream = await sdk(app, "sk-gw-out").chat.completions.create({ model: "openai/gpt-4o-mini", messages: [{ role: "user", content: `repeat ${CARD} now` }], stream: true });
    let text = "";
    let finished = false;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? "";
      if (chunk.choices[0]?.finish_reason) finished = true;
    }
    assert.equal(text, "echo: repeat [REDACTED:credit_card] now");
    assert.ok(finished);
  });

  test("counts a streamed answer's check in gw_guardrail_checks_total once the stream ends", async () => {
    const redactions = async () => total(parseExposition(await (await fetch(`${app.url}/metrics`)).text()), "gw_guardrail_checks_total", { guardrail: "hide-cards", stage: "output", result: "redact" });
    const before = await redactions();
    const stream = await sdk(app, "sk-gw-out").chat.completions.create({ model: "openai/gpt-4o-mini", messages: [{ role: "user", content: `repeat ${CARD}` }], stream: true });
    for await (const _chunk of stream) {
      // Read to the end: the check is counted when the stream is over.
    }
    assert.equal(await redactions(), before + 1);
  });
});
