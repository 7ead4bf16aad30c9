/**
 * One non-streaming call as the client and the upstream see it: the client's body reaches the upstream
 * byte for byte when the gateway has nothing to change in it, the upstream's answer reaches the client byte
 * for byte (the gateway reads its usage but forwards the upstream's own text), and a client that leaves
 * before the answer frees the upstream request.
 */
import assert from "node:assert/strict";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { startApp, type TestApp } from "../helpers/app.js";
import { fileKey, sdk } from "../helpers/inference.js";

/** Spacing, key order and number forms that JSON.parse followed by JSON.stringify would not keep. */
const UPSTREAM_TEXT =
  '{ "object": "chat.completion",  "id": "chatcmpl-raw", "created": 1735689600, "model": "gpt-4o-mini",\n' +
  '  "choices": [ { "index": 0, "message": { "role": "assistant", "content": "caf\\u00e9 1.0" }, "finish_reason": "stop", "logprobs": null } ],\n' +
  '  "usage": { "prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5 }, "x_extra": 1.50 }';

let upstream: http.Server;
let app: TestApp;
/** The body text of the upstream's latest request. */
let lastUpstreamBody = "";
/** Requests asking the mock to hang (a message "hang"): resolved when the gateway closes one. */
let hungRequestClosed: Promise<void> = Promise.resolve();
let hungRequestArrived: Promise<void> = Promise.resolve();
let onHungClose = (): void => {};
let onHungArrive = (): void => {};

function expectHungRequest(): void {
  hungRequestArrived = new Promise((resolve) => (onHungArrive = resolve));
  hungRequestClosed = new Promise((resolve) => (onHungClose = resolve));
}

before(async () => {
  upstream = http.createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")));
    req.on("end", () => {
      lastUpstreamBody = body;
      if (body.includes('"content":"hang"')) {
        res.on("close", () => onHungClose());
        onHungArrive();
        return;
      }
      res.writeHead(200, { "content-type": "application/json" });
      res.end(UPSTREAM_TEXT);
    });
  });
  await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  const inference = inferenceOptionsFromFile({ openai: { keys: [fileKey("oa-1")], network_config: { base_url: url } } }, [
    { id: "vk-1", name: "one", value: "sk-gw-raw", provider_configs: [{ provider: "openai", allowed_models: ["*"], key_ids: ["*"], weight: 1 }] },
  ]);
  app = await startApp({ inference });
});

after(async () => {
  await app?.stop();
  await new Promise((resolve) => upstream?.close(resolve));
});

test("forwards a chat completion exactly as the upstream encoded it", async () => {
  const res = await fetch(`${app.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer sk-gw-raw" },
    body: JSON.stringify({ model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "hi" }] }),
  });
  assert.equal(res.status, 200);
  assert.equal(await res.text(), UPSTREAM_TEXT);
});

test("the forwarded answer parses in the openai SDK with its usage", async () => {
  const completion = await sdk(app, "sk-gw-raw").chat.completions.create({ model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "hi" }] });
  assert.equal(completion.choices[0]?.message.content, "café 1.0");
  assert.equal(completion.usage?.total_tokens, 5);
});

test("a client that leaves before the answer frees the upstream request", async () => {
  expectHungRequest();
  const client = new AbortController();
  const pending = fetch(`${app.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer sk-gw-raw" },
    body: JSON.stringify({ model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "hang" }] }),
    signal: client.signal,
  }).catch(() => undefined);
  await hungRequestArrived;
  client.abort();
  await pending;
  // Resolves only when the gateway closed its upstream request; the test runner's timeout bounds the wait.
  await hungRequestClosed;
});

test("sends the client's own bytes upstream when the model needs no rewrite", async () => {
  // A number past double precision and unusual spacing survive only if the bytes are not re-encoded.
  const text = '{"model": "gpt-4o-mini",  "seed": 12345678901234567890, "messages": [{"role": "user", "content": "hi"}]}';
  const res = await fetch(`${app.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer sk-gw-raw" },
    body: text,
  });
  assert.equal(res.status, 200);
  await res.text();
  assert.equal(lastUpstreamBody, text);
});

test("re-encodes the body when the gateway rewrites the model", async () => {
  const res = await fetch(`${app.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer sk-gw-raw" },
    body: '{"model": "openai/gpt-4o-mini", "fallbacks": [], "messages": [{"role": "user", "content": "hi"}]}',
  });
  assert.equal(res.status, 200);
  await res.text();
  assert.deepEqual(JSON.parse(lastUpstreamBody), { model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] });
});
