/**
 * A provider's concurrency_and_buffer_size through /v1 with a slow mock upstream: calls beyond the limit
 * wait for a slot, a stream holds its slot until its client leaves, and with client.drop_excess_requests a
 * request beyond the buffer is refused with 429 gateway_queue_full before any upstream call.
 */
import assert from "node:assert/strict";
import { after, afterEach, before, test } from "node:test";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { startMockOpenAi, type MockUpstream } from "../fixtures/mock-openai.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { fileKey } from "../helpers/inference.js";

let mock: MockUpstream;
let app: TestApp;

const CHAT = { model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "hi" }] };

/** A chat completion; resolves with its status and error type (if any) once the answer is read. */
async function chat(body: Record<string, unknown> = CHAT, signal?: AbortSignal): Promise<{ status: number; type: unknown }> {
  const res = await fetch(`${app.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    ...(signal ? { signal } : {}),
  });
  const text = await res.text();
  const type: unknown = res.status === 200 ? undefined : (JSON.parse(text) as { error?: { type?: unknown } }).error?.type;
  return { status: res.status, type };
}

/** Starts a stream and resolves once its first chunk has arrived: from then on it holds a slot until aborted. */
async function openStream(abort: AbortController): Promise<void> {
  const res = await fetch(`${app.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ ...CHAT, stream: true }),
    signal: abort.signal,
  });
  assert.equal(res.status, 200);
  const reader = res.body?.getReader();
  assert.ok(reader);
  await reader.read();
  // The rest is left unread; aborting the fetch closes the connection.
  reader.read().catch(() => undefined);
}

async function setDropExcess(drop: boolean): Promise<void> {
  const res = await api(app, "PATCH", "/config", { client: { drop_excess_requests: drop } });
  assert.equal(res.status, 200, JSON.stringify(res.body));
}

before(async () => {
  mock = await startMockOpenAi();
  const inference = inferenceOptionsFromFile(
    { openai: { keys: [fileKey("oa-1")], network_config: { base_url: mock.url }, concurrency_and_buffer_size: { concurrency: 1, buffer_size: 1 } } },
    [],
  );
  app = await startApp({ inference });
});

afterEach(async () => {
  mock.latencyMs = 0;
  mock.hangStreams = false;
  mock.peakInFlight = 0;
  await setDropExcess(false);
});

after(async () => {
  await app?.stop();
  await mock?.close();
});

test("runs calls beyond the concurrency one at a time, and all of them answer", async () => {
  mock.latencyMs = 100;
  const results = await Promise.all([chat(), chat(), chat(), chat()]);
  assert.deepEqual(
    results.map((r) => r.status),
    [200, 200, 200, 200],
  );
  assert.equal(mock.peakInFlight, 1);
});

test("with drop_excess_requests, refuses a request beyond the buffer with 429 gateway_queue_full before any upstream call", async () => {
  await setDropExcess(true);
  mock.hangStreams = true;
  const stream = new AbortController();
  await openStream(stream);
  const before = mock.requests.length;
  const second = chat();
  const third = chat();
  // One of the two waits in the buffer; the other is refused at once, while the stream still holds the slot.
  const refused = await Promise.race([second, third]);
  assert.deepEqual(refused, { status: 429, type: "gateway_queue_full" });
  assert.equal(mock.requests.length, before, "neither request reached the upstream while the stream held the slot");
  stream.abort();
  const [a, b] = await Promise.all([second, third]);
  assert.deepEqual([a.status, b.status].sort(), [200, 429]);
  assert.equal(mock.requests.length, before + 1, "the buffered request ran once the stream's client left");
});

test("without drop_excess_requests, a request beyond the buffer waits instead of being refused", async () => {
  mock.hangStreams = true;
  const stream = new AbortController();
  await openStream(stream);
  const waiting = [chat(), chat()];
  stream.abort();
  const results = await Promise.all(waiting);
  assert.deepEqual(
    results.map((r) => r.status),
    [200, 200],
  );
});

test("a provider updated without concurrency_and_buffer_size has no limit", async () => {
  const res = await api(app, "PUT", "/api/v1/providers/openai", { concurrency_and_buffer_size: null });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.provider.concurrency_and_buffer_size, undefined);
  mock.hangStreams = true;
  const streams = [new AbortController(), new AbortController()];
  // Under the old limit the second stream would wait for the first one's slot.
  for (const stream of streams) await openStream(stream);
  assert.equal(mock.openStreams, 2);
  for (const stream of streams) stream.abort();
});
