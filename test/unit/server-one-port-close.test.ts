import assert from "node:assert/strict";
import { once } from "node:events";
import net from "node:net";
import { test } from "node:test";
import { defaultServerLimits } from "../../src/config/file-config.js";
import { createOnePortServer } from "../../src/server/listener.js";

/** Longer than any of these tests may take: a connection still open when it ends was left to the grace period. */
const GRACE_MS = 120_000;
const TEST_TIMEOUT_MS = 30_000;

/** A one-port server whose /slow answers wait for `release()`, and whose other paths answer at once. */
async function serve(): Promise<{ port: number; close: () => Promise<void>; release: () => void; waiting: () => Promise<void> }> {
  let releases: (() => void)[] = [];
  let arrived: (() => void) | null = null;
  const server = createOnePortServer((req, res) => {
    const answer = () => {
      res.writeHead(200, { "content-type": "text/plain", "content-length": "2" });
      res.end("ok");
    };
    if (req.url !== "/slow") return answer();
    releases.push(answer);
    arrived?.();
  }, defaultServerLimits());
  const { port } = await server.listen(0, "127.0.0.1");
  return {
    port,
    close: () => server.close(GRACE_MS),
    release: () => {
      for (const answer of releases) answer();
      releases = [];
    },
    waiting: () => new Promise<void>((resolve) => (arrived = resolve)),
  };
}

/** A keep-alive connection that collects what it reads; `closed` resolves when the server ends it. */
async function connection(port: number): Promise<{ socket: net.Socket; text: () => string; closed: Promise<unknown> }> {
  const socket = net.connect(port, "127.0.0.1");
  await once(socket, "connect");
  let text = "";
  socket.setEncoding("utf8");
  socket.on("data", (part: string) => (text += part));
  return { socket, text: () => text, closed: once(socket, "close") };
}

/** Resolves once `read()` holds `count` responses. */
async function responses(read: () => string, count: number): Promise<void> {
  while (read().split("HTTP/1.1 200").length - 1 < count) await new Promise((resolve) => setTimeout(resolve, 5));
}

test("closing ends an idle keep-alive connection at once", { timeout: TEST_TIMEOUT_MS }, async () => {
  const server = await serve();
  const client = await connection(server.port);
  client.socket.write("GET /fast HTTP/1.1\r\nhost: localhost\r\n\r\n");
  await responses(client.text, 1);
  await Promise.all([server.close(), client.closed]);
});

/** A server closing while `requests` wait on one connection for their answers, none of them released yet. */
async function closingWith(requests: string): Promise<{ server: Awaited<ReturnType<typeof serve>>; client: Awaited<ReturnType<typeof connection>>; closing: Promise<void> }> {
  const server = await serve();
  const client = await connection(server.port);
  const waiting = server.waiting();
  client.socket.write(requests);
  await waiting;
  return { server, client, closing: server.close() };
}

const SLOW = "GET /slow HTTP/1.1\r\nhost: localhost\r\n\r\n";

test("closing lets a request in flight finish, then ends its keep-alive connection", { timeout: TEST_TIMEOUT_MS }, async () => {
  const { server, client, closing } = await closingWith(SLOW);
  server.release();
  await Promise.all([closing, client.closed]);
  assert.match(client.text(), /^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\nok$/);
});

test("closing answers every request pipelined on a connection, then ends it", { timeout: TEST_TIMEOUT_MS }, async () => {
  // The second is parsed while the first waits, and answered after it.
  const { server, client, closing } = await closingWith(`${SLOW}GET /fast HTTP/1.1\r\nhost: localhost\r\n\r\n`);
  server.release();
  await Promise.all([closing, client.closed]);
  assert.equal(client.text().split("HTTP/1.1 200").length - 1, 2, client.text());
});

test("a request that arrives once closing began is answered with connection: close", { timeout: TEST_TIMEOUT_MS }, async () => {
  const { server, client, closing } = await closingWith(SLOW);
  const second = server.waiting();
  client.socket.write(SLOW);
  await second;
  server.release();
  await Promise.all([closing, client.closed]);
  const answers = client.text().split("HTTP/1.1 200 OK\r\n").slice(1);
  assert.equal(answers.length, 2, client.text());
  assert.doesNotMatch(answers[0] ?? "", /^connection: close\r$/im);
  assert.match(answers[1] ?? "", /^connection: close\r$/im);
});
