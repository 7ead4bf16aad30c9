import assert from "node:assert/strict";
import { once } from "node:events";
import http from "node:http";
import net from "node:net";
import { after, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { GatewayError } from "../../src/errors.js";
import { ClientClosedError, readJsonBodyWithText } from "../../src/server/rest/request-body.js";

const MAX_BYTES = 1000;

/** What the server's reads ended in, in order. */
const outcomes: unknown[] = [];
/** Set by a test to have the handler wait before it reads. */
let readLater = false;

function answer(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), connection: "close" });
  res.end(text);
}

const server = http.createServer((req, res) => {
  const read = readLater ? sleep(50).then(() => readJsonBodyWithText(req, MAX_BYTES)) : readJsonBodyWithText(req, MAX_BYTES);
  read.then(
    (body) => {
      outcomes.push(body);
      answer(res, 200, { json: body.json, bytes: body.raw.bytes.length });
    },
    (err: unknown) => {
      outcomes.push(err);
      if (err instanceof ClientClosedError) return;
      const status = err instanceof GatewayError ? (err.httpStatus ?? 500) : 500;
      answer(res, status, { status, message: err instanceof Error ? err.message : String(err) });
    },
  );
});
server.listen(0, "127.0.0.1");
await once(server, "listening");
const { port } = server.address() as net.AddressInfo;
after(() => server.close());

/** Sends `parts` over a new connection, `gapMs` apart, and reads the response to its end. */
async function exchange(parts: readonly string[], gapMs = 0): Promise<{ status: number; body: Record<string, unknown> }> {
  const socket = net.connect(port, "127.0.0.1");
  await once(socket, "connect");
  socket.setNoDelay(true);
  let text = "";
  socket.setEncoding("utf8");
  socket.on("data", (part: string) => (text += part));
  const ended = once(socket, "end");
  for (const [index, part] of parts.entries()) {
    if (index > 0 && gapMs > 0) await sleep(gapMs);
    socket.write(part);
  }
  await ended;
  socket.destroy();
  const status = Number(text.slice(9, 12));
  return { status, body: JSON.parse(text.slice(text.indexOf("\r\n\r\n") + 4)) as Record<string, unknown> };
}

function post(body: string, headers = `content-length: ${Buffer.byteLength(body)}`): string {
  return `POST / HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\ncontent-type: application/json\r\n${headers}\r\n\r\n${body}`;
}

function chunked(body: string): string {
  return `${Buffer.byteLength(body).toString(16)}\r\n${body}\r\n0\r\n\r\n`;
}

test("reads a body that came in the same write as its headers", async () => {
  const answer = await exchange([post('{"model":"m","n":1}')]);
  assert.deepEqual(answer, { status: 200, body: { json: { model: "m", n: 1 }, bytes: 19 } });
});

test("reads a body that arrives in pieces after its headers", async () => {
  const whole = post('{"model":"m","text":"héllo"}');
  const headersEnd = whole.indexOf("\r\n\r\n") + 4;
  const answer = await exchange([whole.slice(0, headersEnd), whole.slice(headersEnd, headersEnd + 10), whole.slice(headersEnd + 10)], 30);
  assert.deepEqual(answer, { status: 200, body: { json: { model: "m", text: "héllo" }, bytes: 29 } });
});

test("reads a body the handler turns to only after it arrived whole", async () => {
  readLater = true;
  try {
    const answer = await exchange([post('{"later":true}')]);
    assert.deepEqual(answer, { status: 200, body: { json: { later: true }, bytes: 14 } });
  } finally {
    readLater = false;
  }
});

test("reads an empty body as an empty object", async () => {
  const answer = await exchange([post("")]);
  assert.deepEqual(answer, { status: 200, body: { json: {}, bytes: 0 } });
});

test("refuses a chunked body over the limit that waits whole when the handler reads it", async () => {
  readLater = true;
  try {
    const body = JSON.stringify({ text: "x".repeat(MAX_BYTES) });
    const answer = await exchange([post(chunked(body), "transfer-encoding: chunked")]);
    assert.equal(answer.status, 413);
  } finally {
    readLater = false;
  }
});

test("reads a chunked body that waits whole when the handler reads it", async () => {
  readLater = true;
  try {
    const answer = await exchange([post(chunked('{"chunked":true}'), "transfer-encoding: chunked")]);
    assert.deepEqual(answer, { status: 200, body: { json: { chunked: true }, bytes: 16 } });
  } finally {
    readLater = false;
  }
});

test("refuses a chunked body over the limit that arrives in pieces", async () => {
  const body = JSON.stringify({ text: "x".repeat(MAX_BYTES) });
  const whole = post(chunked(body), "transfer-encoding: chunked");
  const headersEnd = whole.indexOf("\r\n\r\n") + 4;
  const answer = await exchange([whole.slice(0, headersEnd), whole.slice(headersEnd, headersEnd + 600), whole.slice(headersEnd + 600)], 30);
  assert.equal(answer.status, 413);
});

test("reports a client that leaves mid-body as gone", async () => {
  const before = outcomes.length;
  const whole = post('{"model":"m","n":12345}');
  const socket = net.connect(port, "127.0.0.1");
  await once(socket, "connect");
  socket.write(whole.slice(0, whole.length - 5));
  await sleep(30);
  socket.destroy();
  for (let waited = 0; outcomes.length === before && waited < 2000; waited += 10) await sleep(10);
  assert.ok(outcomes[before] instanceof ClientClosedError, `the read ended in ${String(outcomes[before])}`);
});
