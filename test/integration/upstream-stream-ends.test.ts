/**
 * Streams an upstream ends badly, through the real app: a body cut off before the event that ends an
 * answer, a broken event among good ones, and line endings of a lone carriage return, on chat completions,
 * the Responses API and Anthropic's Messages API (passed through and translated). A stream that did not
 * end an answer fails as provider_unavailable; none is passed on as complete.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import OpenAI from "openai";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { startScriptedSseUpstream, type ScriptedSseUpstream } from "../fixtures/scripted-sse-upstream.js";
import { startApp, type TestApp } from "../helpers/app.js";
import { fileKey, readChatStream, refusal, sdk } from "../helpers/inference.js";

const sse = (data: unknown, event?: string): string => `${event === undefined ? "" : `event: ${event}\n`}data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`;

const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
  sse({ id: "c1", object: "chat.completion.chunk", created: 1_700_000_000, model: "m", choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] });

const response = (status: string) => ({ id: "resp_1", object: "response", status, model: "m", output: [], usage: { input_tokens: 3, output_tokens: 2, total_tokens: 5 } });

const anthropicStart = sse({ type: "message_start", message: { id: "msg_1", type: "message", role: "assistant", model: "m", content: [], stop_reason: null, usage: { input_tokens: 3, output_tokens: 1 } } }, "message_start");
const anthropicText = sse({ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }, "content_block_start") + sse({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "half" } }, "content_block_delta");
const anthropicStop = sse({ type: "content_block_stop", index: 0 }, "content_block_stop") + sse({ type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: 2 } }, "message_delta") + sse({ type: "message_stop" }, "message_stop");

const SCRIPTS: Record<string, string> = {
  "chat-cut-short": chunk({ role: "assistant", content: "" }) + chunk({ content: "half" }),
  "chat-empty": "",
  "chat-finished-without-done": chunk({ role: "assistant", content: "" }) + chunk({ content: "fine" }, "stop"),
  "responses-cut-short": sse({ type: "response.created", response: response("in_progress") }) + sse({ type: "response.output_text.delta", delta: "half" }),
  "responses-broken-event": sse({ type: "response.created", response: response("in_progress") }) + sse("{not json") + sse({ type: "response.completed", response: response("completed") }),
  "responses-cr-line-ends": (sse({ type: "response.created", response: response("in_progress") }) + sse({ type: "response.completed", response: response("completed") })).replaceAll("\n", "\r"),
  "anthropic-cut-short": anthropicStart + anthropicText,
  "anthropic-broken-event": anthropicStart + anthropicText + sse("{oops", "content_block_delta") + anthropicStop,
  "anthropic-complete": anthropicStart + anthropicText + anthropicStop,
};

let upstream: ScriptedSseUpstream;
let app: TestApp;
let client: OpenAI;

before(async () => {
  upstream = await startScriptedSseUpstream(SCRIPTS);
  const network = { network_config: { base_url: upstream.url } };
  const inference = inferenceOptionsFromFile({ openai: { keys: [fileKey("o-1")], ...network }, anthropic: { keys: [fileKey("a-1")], ...network } }, []);
  app = await startApp({ inference });
  client = sdk(app, null);
});

after(async () => {
  await app?.stop();
  await upstream?.close();
});

/** The error of a chat stream that must fail, before its first chunk or as its last event. */
async function chatStreamRefusal(model: string): Promise<InstanceType<typeof OpenAI.APIError>> {
  return refusal((async () => readChatStream(await client.chat.completions.create({ model, messages: [{ role: "user", content: "hi" }], stream: true })))());
}

/** The types of the events of a Responses stream, read to its end. */
async function responsesEventTypes(model: string): Promise<string[]> {
  const types: string[] = [];
  for await (const event of await client.responses.create({ model, input: "hi", stream: true })) types.push(event.type);
  return types;
}

/** The text of an /anthropic/v1/messages stream, read to its end. */
async function anthropicStreamText(model: string): Promise<string> {
  const res = await fetch(`${app.url}/anthropic/v1/messages`, {
    method: "POST",
    headers: { "content-type": "application/json", "anthropic-version": "2023-06-01" },
    body: JSON.stringify({ model, max_tokens: 16, stream: true, messages: [{ role: "user", content: "hi" }] }),
  });
  assert.equal(res.status, 200);
  return res.text();
}

describe("a chat stream", () => {
  test("cut off before [DONE], a finish reason or usage fails as provider_unavailable", async () => {
    const err = await chatStreamRefusal("openai/chat-cut-short");
    assert.match(err.message, /ended its stream before the answer was complete \(no \[DONE\]\)/);
  });

  test("with no event at all fails rather than ending as an empty answer", async () => {
    const err = await chatStreamRefusal("openai/chat-empty");
    assert.match(err.message, /ended its stream before the answer was complete/);
  });

  test("that names a finish reason but leaves out [DONE] completes", async () => {
    const summary = await readChatStream(await client.chat.completions.create({ model: "openai/chat-finished-without-done", messages: [{ role: "user", content: "hi" }], stream: true }));
    assert.equal(summary.text, "fine");
    assert.equal(summary.finish, "stop");
  });

  test("translated from Anthropic fails when message_stop never comes", async () => {
    const err = await chatStreamRefusal("anthropic/anthropic-cut-short");
    assert.match(err.message, /ended its stream before the answer was complete \(no message_stop\)/);
  });

  test("translated from Anthropic fails on an event that is not JSON", async () => {
    const err = await chatStreamRefusal("anthropic/anthropic-broken-event");
    assert.match(err.message, /stream event that is not a JSON object/);
  });
});

describe("a Responses stream", () => {
  test("cut off before response.completed fails", async () => {
    const err = await refusal(responsesEventTypes("openai/responses-cut-short"));
    assert.match(err.message, /no response\.completed/);
  });

  test("with an event that is not JSON fails instead of skipping it", async () => {
    const err = await refusal(responsesEventTypes("openai/responses-broken-event"));
    assert.match(err.message, /stream event that is not a JSON object/);
  });

  test("with lone carriage returns for line ends keeps its last event", async () => {
    assert.deepEqual(await responsesEventTypes("openai/responses-cr-line-ends"), ["response.created", "response.completed"]);
  });
});

describe("an Anthropic messages stream passed through", () => {
  test("ends with message_stop when the upstream sent it", async () => {
    const text = await anthropicStreamText("anthropic/anthropic-complete");
    assert.match(text, /event: message_stop/);
    assert.doesNotMatch(text, /event: error/);
  });

  test("cut off before message_stop ends with an error event, not a stop", async () => {
    const text = await anthropicStreamText("anthropic/anthropic-cut-short");
    assert.match(text, /event: error/);
    assert.match(text, /no message_stop/);
    assert.doesNotMatch(text, /message_stop"/);
  });

  test("with an event that is not JSON ends with an error event", async () => {
    const text = await anthropicStreamText("anthropic/anthropic-broken-event");
    assert.match(text, /event: error/);
    assert.match(text, /not a JSON object/);
    assert.doesNotMatch(text, /"type":"message_stop"/);
  });
});
