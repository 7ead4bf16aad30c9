/**
 * One non-streaming call as the client and the upstream see it: the client's body reaches the upstream
 * byte for byte when the gateway has nothing to change in it, the upstream's answer reaches the client byte
 * for byte (the gateway reads its usage but forwards the upstream's own text), and a client that leaves
 * before the answer frees the upstream request. A stream's body likewise goes out as the client's bytes, with
 * the usage option the gateway needs added to them rather than the body re-encoded.
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

/** A two-chunk stream with the usage chunk OpenAI sends when it is asked for. */
const STREAM_EVENTS = [
  JSON.stringify({ id: "c", object: "chat.completion.chunk", model: "gpt-4o-mini", choices: [{ index: 0, delta: { content: "ok" } }] }),
  JSON.stringify({ id: "c", object: "chat.completion.chunk", model: "gpt-4o-mini", choices: [], usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 } }),
  "[DONE]",
];

/** Stream answers sent as these bytes when a request's message is `ask`. */
const RAW_STREAMS = [
  // Spacing JSON.stringify would not keep, and text outside ASCII.
  { ask: "spaced", bytes: Buffer.from('data: {"id": "c",  "object": "chat.completion.chunk", "choices": [ {"index": 0, "delta": {"content": "caf\u00e9 \ud83d\ude00"}} ]}\n\ndata: [DONE]\n\n') },
  // A byte that is not UTF-8 inside the content.
  { ask: "invalid", bytes: Buffer.concat([Buffer.from('data: {"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "a'), Buffer.from([0x80]), Buffer.from('b"}}]}\n\ndata: [DONE]\n\n')]) },
];

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
      const raw = RAW_STREAMS.find((stream) => body.includes(`"content":"${stream.ask}"`));
      if (raw !== undefined) {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.end(raw.bytes);
        return;
      }
      // The gateway's model-list fetch at start is a GET with no body.
      if (body !== "" && (JSON.parse(body) as { stream?: unknown }).stream === true) {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.end(STREAM_EVENTS.map((data) => `data: ${data}\n\n`).join(""));
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

/** Posts `text` as a chat completion request and returns what the client read (a 200 is required). */
async function post(text: string): Promise<string> {
  const res = await fetch(`${app.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer sk-gw-raw" },
    body: text,
  });
  assert.equal(res.status, 200);
  return res.text();
}

test("sends the client's own bytes upstream when the model needs no rewrite", async () => {
  // A number past double precision and unusual spacing survive only if the bytes are not re-encoded.
  const text = '{"model": "gpt-4o-mini",  "seed": 12345678901234567890, "messages": [{"role": "user", "content": "hi"}]}';
  await post(text);
  assert.equal(lastUpstreamBody, text);
});

test("sends the client's own bytes without the byte-order mark they began with", async () => {
  const text = '{"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "caf\u00e9 \ud83d\ude00"}]}';
  await post(`\ufeff${text}`);
  assert.equal(lastUpstreamBody, text);
});

test("re-encodes the body when the gateway rewrites the model", async () => {
  await post('{"model": "openai/gpt-4o-mini", "fallbacks": [], "messages": [{"role": "user", "content": "hi"}]}');
  assert.deepEqual(JSON.parse(lastUpstreamBody), { model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] });
});

test("adds the usage option to the client's own bytes for a stream", async () => {
  const text = '{"model": "gpt-4o-mini",  "seed": 12345678901234567890, "stream": true, "messages": [{"role": "user", "content": "hi"}]}\n';
  const read = await post(text);
  assert.equal(lastUpstreamBody, '{"model": "gpt-4o-mini",  "seed": 12345678901234567890, "stream": true, "messages": [{"role": "user", "content": "hi"}],"stream_options":{"include_usage":true}}\n');
  // The usage chunk was the gateway's to read, not the caller's.
  assert.ok(read.includes('"content":"ok"') && !read.includes('"usage"'));
});

test("sends a stream's bytes unchanged when the client asked for usage itself", async () => {
  const text = '{"model": "gpt-4o-mini", "stream": true, "stream_options": {"include_usage": true}, "messages": [{"role": "user", "content": "hi"}]}';
  const read = await post(text);
  assert.equal(lastUpstreamBody, text);
  assert.ok(read.includes('"usage"'));
});

test("re-encodes a stream whose options leave usage out", async () => {
  await post('{"model": "gpt-4o-mini", "stream": true, "stream_options": {"include_usage": false}, "messages": [{"role": "user", "content": "hi"}]}');
  assert.deepEqual(JSON.parse(lastUpstreamBody), {
    model: "gpt-4o-mini",
    stream: true,
    stream_options: { include_usage: true },
    messages: [{ role: "user", content: "hi" }],
  });
});

test("re-encodes a stream when the gateway rewrites the model", async () => {
  await post('{"model": "openai/gpt-4o-mini", "stream": true, "messages": [{"role": "user", "content": "hi"}]}');
  assert.deepEqual(JSON.parse(lastUpstreamBody), {
    model: "gpt-4o-mini",
    stream: true,
    messages: [{ role: "user", content: "hi" }],
    stream_options: { include_usage: true },
  });
});

/** Streams a chat completion asking `content` and returns the bytes the client read (a 200 is required). */
async function streamBytes(content: string): Promise<Buffer> {
  const res = await fetch(`${app.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer sk-gw-raw" },
    body: JSON.stringify({ model: "gpt-4o-mini", stream: true, messages: [{ role: "user", content }] }),
  });
  assert.equal(res.status, 200);
  return Buffer.from(await res.arrayBuffer());
}

test("forwards a stream's events exactly as the upstream encoded them", async () => {
  assert.equal((await streamBytes("spaced")).toString("hex"), (RAW_STREAMS[0]?.bytes as Buffer).toString("hex"));
});

test("sends a byte of a stream that is not UTF-8 as the replacement character", async () => {
  const read = (await streamBytes("invalid")).toString("utf8");
  assert.equal(read, 'data: {"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "a\ufffdb"}}]}\n\ndata: [DONE]\n\n');
  assert.ok((await streamBytes("invalid")).includes(Buffer.from("a\ufffdb")), "the replacement character's own bytes reach the client");
});
