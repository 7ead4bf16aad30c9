/** sendJson and send, the upstream calls read whole and streamed, against a real HTTP server. */
import assert from "node:assert/strict";
import { getEventListeners } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, beforeEach, test } from "node:test";
import { Agent } from "undici";
import { ProviderError } from "../../src/providers/provider-error.js";
import { send, sendJson, transportError, type UpstreamCall } from "../../src/providers/http/upstream-http.js";

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

let server: Server;
let url: string;
let handle: Handler;
const agent = new Agent();

before(async () => {
  server = createServer((req, res) => handle(req, res));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/chat/completions`;
});
beforeEach(() => {
  handle = (_req, res) => res.writeHead(500).end();
});
after(async () => {
  await agent.close();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

function call(fields: Partial<UpstreamCall> = {}): UpstreamCall {
  return { method: "POST", url, headers: { authorization: "Bearer sk-test" }, body: { model: "m", messages: [] }, ...fields };
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  assert.fail("expected a rejection");
}

test("returns the parsed body and the text exactly as the upstream sent it", async () => {
  const sent = '{ "id": "chatcmpl-1",\n  "choices": [ { "message": { "content": "héllo" } } ], "n": 1.50 }\n';
  handle = (_req, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    // Two writes, split inside a multi-byte character, so the body arrives in more than one chunk.
    const bytes = Buffer.from(sent);
    const split = bytes.indexOf(Buffer.from("é")) + 1;
    res.write(bytes.subarray(0, split));
    setTimeout(() => res.end(bytes.subarray(split)), 10);
  };
  const answer = await sendJson(agent, "openai", call());
  assert.equal(answer.status, 200);
  assert.equal(answer.text, sent);
  assert.deepEqual(answer.body, { id: "chatcmpl-1", choices: [{ message: { content: "héllo" } }], n: 1.5 });
});

test("sends the JSON body with its content type and the call's headers to the URL's path and query", async () => {
  const seen = new Promise<{ req: IncomingMessage; body: string }>((resolve) => {
    handle = (req, res) => {
      let body = "";
      req.setEncoding("utf8");
      req.on("data", (piece: string) => (body += piece));
      req.on("end", () => {
        resolve({ req, body });
        res.writeHead(200, { "content-type": "application/json" }).end("{}");
      });
    };
  });
  await sendJson(agent, "openai", call({ url: `${url}?api-version=1` }));
  const { req, body } = await seen;
  assert.equal(req.method, "POST");
  assert.equal(req.url, "/v1/chat/completions?api-version=1");
  assert.equal(req.headers["content-type"], "application/json");
  assert.equal(req.headers["authorization"], "Bearer sk-test");
  assert.deepEqual(JSON.parse(body), { model: "m", messages: [] });
});

test("turns a non-2xx answer into a ProviderError with the upstream status and message", async () => {
  handle = (_req, res) => res.writeHead(429, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: "Rate limit reached" } }));
  const err = await rejection(sendJson(agent, "openai", call()));
  assert.ok(err instanceof ProviderError, `expected a ProviderError, got ${String(err)}`);
  assert.equal(err.upstreamStatus, 429);
  assert.equal(err.errorType, "provider_rate_limited");
  assert.match(err.message, /Rate limit reached/);
});

test("gives provider_timeout when the upstream sends no headers within timeoutMs", async () => {
  handle = () => {};
  const started = performance.now();
  const err = await rejection(sendJson(agent, "openai", call({ timeoutMs: 100 })));
  assert.ok(err instanceof ProviderError, `expected a ProviderError, got ${String(err)}`);
  assert.equal(err.errorType, "provider_timeout");
  assert.equal(err.upstreamStatus, null);
  assert.equal(err.message, "openai sent no response headers within 100 ms");
  assert.ok(performance.now() - started < 2_000, "the timeout fired on time");
});

test("the caller's abort rejects with the caller's reason and closes the upstream request", async () => {
  let arrived!: () => void;
  const requestArrived = new Promise<void>((resolve) => (arrived = resolve));
  let closed!: () => void;
  const requestClosed = new Promise<void>((resolve) => (closed = resolve));
  handle = (_req, res) => {
    res.on("close", closed);
    arrived();
  };
  const controller = new AbortController();
  const pending = sendJson(agent, "openai", call({ signal: controller.signal }));
  await requestArrived;
  const reason = new Error("the caller went away");
  controller.abort(reason);
  assert.equal(await rejection(pending), reason);
  await requestClosed;
});

test("a body that is not JSON gives provider_unavailable with the upstream status", async () => {
  handle = (_req, res) => res.writeHead(200, { "content-type": "application/json" }).end("<html>oops</html>");
  const err = await rejection(sendJson(agent, "openai", call()));
  assert.ok(err instanceof ProviderError, `expected a ProviderError, got ${String(err)}`);
  assert.equal(err.errorType, "provider_unavailable");
  assert.equal(err.upstreamStatus, 200);
  assert.match(err.message, /not a JSON object: <html>oops<\/html>/);
});

test("leaves no abort listener on a caller signal shared by many calls", async () => {
  handle = (_req, res) => res.writeHead(200, { "content-type": "application/json" }).end('{"ok":true}');
  const controller = new AbortController();
  for (let i = 0; i < 20; i++) await sendJson(agent, "openai", call({ signal: controller.signal }));
  assert.equal(getEventListeners(controller.signal, "abort").length, 0);
});

test("send hands over the body's chunks in order and ends", async () => {
  handle = (_req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.write("data: a\n\n");
    setTimeout(() => res.end("data: b\n\n"), 10);
  };
  const res = await send(agent, "openai", call());
  assert.equal(res.status, 200);
  assert.equal(res.contentType, "text/event-stream");
  let text = "";
  for await (const chunk of res.body) text += chunk.toString("utf8");
  assert.equal(text, "data: a\n\ndata: b\n\n");
});

test("send joins the HTTP chunks that arrived in one network read into one buffer", async () => {
  handle = (_req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    // Three chunks of the chunked encoding, written in one tick: one write to the socket.
    res.write("data: a\n\n");
    res.write("data: b\n\n");
    res.end("data: c\n\n");
  };
  const res = await send(agent, "openai", call());
  const parts: string[] = [];
  for await (const chunk of res.body) parts.push(chunk.toString("utf8"));
  assert.deepEqual(parts, ["data: a\n\ndata: b\n\ndata: c\n\n"]);
});

test("send throws an error status as a ProviderError after reading its body", async () => {
  handle = (_req, res) => res.writeHead(429, { "content-type": "application/json" }).end('{"error":{"message":"slow down"}}');
  const err = await rejection(send(agent, "openai", call()));
  assert.ok(err instanceof ProviderError, `expected a ProviderError, got ${String(err)}`);
  assert.equal(err.upstreamStatus, 429);
  assert.match(err.message, /slow down/);
});

const CHUNK = Buffer.alloc(64 * 1024, 97);

/** Answers with `total` chunks of 64 KiB as fast as the reader takes them; the chunks written so far. */
function chunkedAnswer(total: number): { written: () => number } {
  let written = 0;
  handle = (_req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    const more = (): void => {
      while (written < total) {
        written++;
        if (!res.write(CHUNK)) {
          res.once("drain", more);
          return;
        }
      }
      res.end();
    };
    more();
  };
  return { written: () => written };
}

test("send stops reading the upstream while the reader is behind", async () => {
  const TOTAL = 1024; // 64 MiB, far more than the reader's queue and the sockets' buffers together
  const upstream = chunkedAnswer(TOTAL);
  const res = await send(agent, "openai", call());
  const reader = res.body[Symbol.asyncIterator]();
  await reader.next();
  // Wait until the upstream's writes stop moving: they stall once the gateway stops reading.
  let last = -1;
  while (upstream.written() !== last) {
    last = upstream.written();
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  assert.ok(last < TOTAL / 2, `the upstream wrote ${last} of ${TOTAL} chunks to a reader that read one`);
  res.body.destroy();
});

/** Answers with the start of a stream that never ends; resolves once the request is closed. */
function unfinishedStream(): Promise<void> {
  return new Promise<void>((resolve) => {
    handle = (_req, res) => {
      res.on("close", resolve);
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write("data: a\n\n");
    };
  });
}

test("send's body, destroyed before its end, closes the upstream request", async () => {
  const requestClosed = unfinishedStream();
  const res = await send(agent, "openai", call());
  for await (const _chunk of res.body) break;
  assert.equal(res.body.destroyed, true);
  await requestClosed;
});

test("the caller's abort mid-body fails the reader with the caller's reason and closes the upstream request", async () => {
  const requestClosed = unfinishedStream();
  const controller = new AbortController();
  const res = await send(agent, "openai", call({ signal: controller.signal }));
  const reason = new Error("the caller went away");
  const read = (async () => {
    for await (const _chunk of res.body) controller.abort(reason);
  })();
  assert.equal(await rejection(read), reason);
  await requestClosed;
  assert.equal(getEventListeners(controller.signal, "abort").length, 0);
});

test("send leaves no abort listener on the caller's signal once a body is read", async () => {
  handle = (_req, res) => res.writeHead(200, { "content-type": "text/event-stream" }).end("data: a\n\n");
  const controller = new AbortController();
  for (let i = 0; i < 20; i++) {
    const res = await send(agent, "openai", call({ signal: controller.signal }));
    for await (const _chunk of res.body);
  }
  assert.equal(getEventListeners(controller.signal, "abort").length, 0);
});

test("gives provider_timeout when a JSON answer's body sends nothing for idleTimeoutMs, and closes the request", async () => {
  let closed: () => void = () => {};
  const requestClosed = new Promise<void>((resolve) => (closed = resolve));
  handle = (_req, res) => {
    res.on("close", closed);
    res.writeHead(200, { "content-type": "application/json" });
    res.write('{"id": "chatcmpl-1",');
  };
  const err = await rejection(sendJson(agent, "openai", call({ idleTimeoutMs: 100 })));
  assert.ok(err instanceof ProviderError, `expected a ProviderError, got ${String(err)}`);
  assert.equal(err.errorType, "provider_timeout");
  assert.match(err.message, /^openai did not answer in time/);
  await requestClosed;
});

test("send's reader fails with a timeout once the body sends nothing for idleTimeoutMs", async () => {
  const requestClosed = unfinishedStream();
  const res = await send(agent, "openai", call({ idleTimeoutMs: 100 }));
  const chunks: string[] = [];
  const err = await rejection(
    (async () => {
      for await (const chunk of res.body) chunks.push(Buffer.from(chunk).toString());
    })(),
  );
  assert.deepEqual(chunks, ["data: a\n\n"]);
  // The provider stream reading it maps the failure as transportError does.
  const mapped = transportError("openai", err);
  assert.ok(mapped instanceof ProviderError, `expected a ProviderError, got ${String(mapped)}`);
  assert.equal(mapped.errorType, "provider_timeout");
  await requestClosed;
});

test("keeps a body's chunks that keep coming within idleTimeoutMs, however long the whole answer takes", async () => {
  handle = (_req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    let sent = 0;
    const timer = setInterval(() => {
      res.write(`data: ${sent}\n\n`);
      if (++sent === 8) {
        clearInterval(timer);
        res.end();
      }
    }, 50);
  };
  // Eight gaps of 50 ms: 400 ms in all, each gap under the 150 ms bound.
  const res = await send(agent, "openai", call({ idleTimeoutMs: 150 }));
  let text = "";
  for await (const chunk of res.body) text += Buffer.from(chunk).toString();
  assert.equal(text, [0, 1, 2, 3, 4, 5, 6, 7].map((n) => `data: ${n}\n\n`).join(""));
});

test("does not time out a body paused for a reader that is behind", async () => {
  const TOTAL = 64; // 4 MiB: more than the reader's queue, so the socket is paused
  chunkedAnswer(TOTAL);
  const res = await send(agent, "openai", call({ idleTimeoutMs: 100 }));
  const reader = res.body[Symbol.asyncIterator]();
  let length = (await reader.next()).value?.length ?? 0;
  // The reader waits three idle timeouts while the upstream has more to send.
  await new Promise((resolve) => setTimeout(resolve, 300));
  for (let next = await reader.next(); next.done !== true; next = await reader.next()) length += next.value.length;
  assert.equal(length, TOTAL * CHUNK.length);
});
