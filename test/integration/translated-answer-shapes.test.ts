/**
 * A 2xx answer the gateway translates (Anthropic's Messages to chat completions and the Responses API, chat
 * completions to Anthropic's Messages) but that lacks what every answer of its API has fails the attempt as
 * provider_unavailable, naming what is missing, instead of becoming an empty or made-up success; a fallback
 * then answers. The upstream is a scripted server speaking both APIs, picking its answer by model name.
 */
import assert from "node:assert/strict";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import Anthropic from "@anthropic-ai/sdk";
import type OpenAI from "openai";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { startApp, type TestApp } from "../helpers/app.js";
import { errorType, fileKey, refusal, sdk } from "../helpers/inference.js";

const VK = "sk-gw-shapes";
const USAGE_MESSAGES = { input_tokens: 3, output_tokens: 1 };
const USAGE_CHAT = { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 };

/** Anthropic message answers, by model. */
const MESSAGES: Record<string, unknown> = {
  "no-content": { id: "msg_1", type: "message", role: "assistant", model: "no-content", stop_reason: "end_turn", usage: USAGE_MESSAGES },
  "nameless-tool": { id: "msg_2", type: "message", role: "assistant", model: "nameless-tool", content: [{ type: "tool_use", id: "toolu_1", input: {} }], stop_reason: "tool_use", usage: USAGE_MESSAGES },
  fine: { id: "msg_3", type: "message", role: "assistant", model: "fine", content: [{ type: "text", text: "fine" }], stop_reason: "end_turn", usage: USAGE_MESSAGES },
};

/** Chat completion answers, by model. */
const COMPLETIONS: Record<string, unknown> = {
  "no-choices": { id: "chatcmpl-1", object: "chat.completion", created: 1_700_000_000, model: "no-choices", usage: USAGE_CHAT },
  "nameless-tool-call": {
    id: "chatcmpl-2",
    object: "chat.completion",
    created: 1_700_000_000,
    model: "nameless-tool-call",
    choices: [{ index: 0, message: { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { arguments: "{}" } }] }, finish_reason: "tool_calls" }],
    usage: USAGE_CHAT,
  },
  fine: { id: "chatcmpl-3", object: "chat.completion", created: 1_700_000_000, model: "fine", choices: [{ index: 0, message: { role: "assistant", content: "fine" }, finish_reason: "stop" }], usage: USAGE_CHAT },
};

let upstream: http.Server;
let app: TestApp;
let client: OpenAI;
let anthropic: Anthropic;

before(async () => {
  upstream = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/json" });
      // The model lists the gateway asks for at start: none.
      if (req.method === "GET") {
        res.end(JSON.stringify({ object: "list", data: [] }));
        return;
      }
      const { model } = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { model: string };
      const answers = req.url?.endsWith("/messages") ? MESSAGES : COMPLETIONS;
      res.end(JSON.stringify(answers[model] ?? answers["fine"]));
    });
  });
  await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  const inference = inferenceOptionsFromFile(
    {
      anthropic: { keys: [fileKey("a-1")], network_config: { base_url: url } },
      openai: { keys: [fileKey("o-1")], network_config: { base_url: url } },
    },
    [{ id: "vk-shapes", name: "shapes", value: VK, provider_configs: [
        { provider: "anthropic", allowed_models: Object.keys(MESSAGES), key_ids: ["*"], weight: 1 },
        { provider: "openai", allowed_models: Object.keys(COMPLETIONS), key_ids: ["*"], weight: 1 },
      ] }],
  );
  app = await startApp({ inference });
  client = sdk(app, VK);
  anthropic = new Anthropic({ apiKey: VK, baseURL: `${app.url}/anthropic`, maxRetries: 0 });
});

after(async () => {
  await app?.stop();
  await new Promise<void>((resolve) => upstream?.close(() => resolve()));
});

function chat(model: string, extra: Record<string, unknown> = {}) {
  return client.chat.completions.create({ model, messages: [{ role: "user", content: "hi" }], ...extra });
}

async function assertMalformed(promise: Promise<unknown>, missing: RegExp): Promise<void> {
  const err = await refusal(promise);
  assert.equal(err.status, 502);
  assert.equal(errorType(err), "provider_unavailable");
  assert.match(err.message, missing);
}

describe("an Anthropic message the gateway translates", () => {
  test("without a content array is a provider_unavailable naming it, on chat completions", async () => {
    await assertMalformed(chat("anthropic/no-content"), /answered HTTP 200 with a message without a content array/);
  });

  test("with a tool_use block without a name is a provider_unavailable naming it", async () => {
    await assertMalformed(chat("anthropic/nameless-tool"), /a tool_use block without an id or a name/);
  });

  test("without a content array is a provider_unavailable on the Responses API too", async () => {
    await assertMalformed(client.responses.create({ model: "anthropic/no-content", input: "hi" }), /a message without a content array/);
  });

  test("without a content array moves on to a fallback, which answers", async () => {
    const completion = await chat("anthropic/no-content", { fallbacks: ["openai/fine"] });
    assert.equal(completion.choices[0]?.message.content, "fine");
  });
});

describe("a chat completion the gateway translates to an Anthropic message", () => {
  /** Asks /anthropic/v1/messages for `model` and checks it fails as a 502 whose message matches `missing`. */
  async function assertMessagesMalformed(model: string, missing: RegExp): Promise<void> {
    const err = await anthropic.messages.create({ model, max_tokens: 16, messages: [{ role: "user", content: "hi" }] }).then(
      () => assert.fail("the request succeeded but should have been refused"),
      (e: unknown) => e,
    );
    assert.ok(err instanceof Anthropic.APIError);
    assert.equal(err.status, 502);
    assert.match(err.message, missing);
  }

  test("without choices is a provider_unavailable naming it", async () => {
    await assertMessagesMalformed("openai/no-choices", /answered HTTP 200 with a chat.completion without choices\[0\]\.message/);
  });

  test("with a tool call without a function name is a provider_unavailable naming it", async () => {
    await assertMessagesMalformed("openai/nameless-tool-call", /a tool call without a function name/);
  });

  test("that is well formed still answers", async () => {
    const message = await anthropic.messages.create({ model: "openai/fine", max_tokens: 16, messages: [{ role: "user", content: "hi" }] });
    assert.deepEqual(message.content, [{ type: "text", text: "fine" }]);
  });
});
