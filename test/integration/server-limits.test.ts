/**
 * The listener's limits (the config file's `server` section): request head size, headers timeout, idle
 * keep-alive timeout, the connection cap, and a bounded slowloris that must not break other clients.
 * Raw sockets, since a well-behaved client cannot send these shapes.
 */
import assert from "node:assert/strict";
import * as net from "node:net";
import { after, before, describe, test } from "node:test";
import { parseConfig } from "../../src/config/load-config.js";
import { startApp, type TestApp } from "../helpers/app.js";

/** The `server` limits of a config file with these settings. */
function limits(server: Record<string, unknown>) {
  return parseConfig({ server }, {}).server;
}

/** A raw connection to the app; resolves once connected. */
function connect(app: TestApp): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(app.port, "127.0.0.1", () => resolve(socket));
    socket.once("error", reject);
  });
}

/** Everything the server writes until it closes the connection (or `limitMs` passes: then what came so far). */
function readUntilClosed(socket: net.Socket, limitMs = 60_000): Promise<{ text: string; closed: boolean }> {
  return new Promise((resolve) => {
    let text = "";
    socket.on("data", (chunk: Buffer) => (text += chunk.toString("latin1")));
    socket.on("error", () => {});
    const timer = setTimeout(() => resolve({ text, closed: false }), limitMs);
    socket.once("close", () => {
      clearTimeout(timer);
      resolve({ text, closed: true });
    });
  });
}

/** The status and parsed JSON body of a raw HTTP/1.1 answer. */
function parseAnswer(text: string): { status: number; body: unknown } {
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
  const bodyText = text.slice(text.indexOf("\r\n\r\n") + 4);
  return { status, body: JSON.parse(bodyText) };
}

describe("server limits", () => {
  let app: TestApp;

  before(async () => {
    app = await startApp({
      server: limits({ max_header_bytes: 4096, headers_timeout: "1s", request_timeout: "2s", keep_alive_timeout: "1s", max_connections: 300 }),
    });
  });
  after(async () => app.stop());

  test("a request head over max_header_bytes is a 431 with a JSON error", async () => {
    const socket = await connect(app);
    const answer = readUntilClosed(socket);
    socket.write(`GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\nx-big: ${"a".repeat(8192)}\r\n\r\n`);
    const { text, closed } = await answer;
    assert.ok(closed, "the connection is closed after the refusal");
    const { status, body } = parseAnswer(text);
    assert.equal(status, 431);
    assert.deepEqual(Object.keys((body as { error: object }).error).sort(), ["message", "type"]);
    assert.match(JSON.stringify(body), /server\.max_header_bytes/);
  });

  test("a head still incomplete after headers_timeout is a 408 and the connection closes", async () => {
    const socket = await connect(app);
    const answer = readUntilClosed(socket);
    socket.write("GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\n");
    // Keeps dribbling header lines: a slowloris never finishes its head, so only the timeout ends it.
    const dribble = setInterval(() => {
      if (!socket.destroyed) socket.write("x-slow: 1\r\n");
    }, 200);
    const { text, closed } = await answer;
    clearInterval(dribble);
    assert.ok(closed);
    const { status, body } = parseAnswer(text);
    assert.equal(status, 408);
    assert.equal((body as { error: { type: string } }).error.type, "request_timeout");
  });

  test("a connection that never sends a byte is closed after headers_timeout", async () => {
    const socket = await connect(app);
    const { text, closed } = await readUntilClosed(socket);
    assert.ok(closed);
    assert.equal(text, "");
  });

  test("an idle keep-alive connection is closed after keep_alive_timeout", async () => {
    const socket = await connect(app);
    const answer = readUntilClosed(socket);
    socket.write("GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n");
    const { text, closed } = await answer;
    assert.ok(closed, "the server closes the idle connection itself");
    assert.match(text, /^HTTP\/1\.1 200 /);
    assert.match(text, /keep-alive: timeout=1/i);
  });

  test("a body still incomplete after request_timeout is a 408", async () => {
    const socket = await connect(app);
    const answer = readUntilClosed(socket);
    socket.write("POST /api/mcp/client HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{");
    const dribble = setInterval(() => {
      if (!socket.destroyed) socket.write(" ");
    }, 200);
    const { text, closed } = await answer;
    clearInterval(dribble);
    assert.ok(closed);
    assert.match(text, /^HTTP\/1\.1 408 /);
    const clients = await (await fetch(`${app.url}/api/mcp/clients`)).json();
    assert.equal((clients as { count: number }).count, 0, "nothing was created");
  });
});

describe("connection cap", () => {
  let app: TestApp;

  before(async () => {
    app = await startApp({ server: limits({ max_connections: 5 }) });
  });
  after(async () => app.stop());

  test("connections past max_connections are closed while the open ones are served", async () => {
    const held = await Promise.all(Array.from({ length: 5 }, () => connect(app)));
    // A request answered on each proves the server has accepted all five (keep-alive keeps them open).
    for (const socket of held) {
      const answered = new Promise<string>((resolve) => socket.once("data", (chunk: Buffer) => resolve(chunk.toString("latin1"))));
      socket.write("GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n");
      assert.match(await answered, /^HTTP\/1\.1 200 /);
    }
    const extra = await connect(app);
    const { closed, text } = await readUntilClosed(extra, 30_000);
    assert.ok(closed, "the sixth connection is closed");
    assert.equal(text, "");
    for (const socket of held) socket.destroy();
    // Once they are gone, new connections are served again.
    let status = 0;
    for (let i = 0; i < 100 && status !== 200; i++) {
      status = await fetch(`${app.url}/health`).then((r) => r.status, () => 0);
      if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.equal(status, 200);
  });
});

describe("slowloris", () => {
  let app: TestApp;

  before(async () => {
    // A long headers timeout keeps every slow socket open for the whole test, whatever the machine's speed.
    app = await startApp({ server: limits({ headers_timeout: "10m", request_timeout: "0" }) });
  });
  after(async () => app.stop());

  test("200 sockets dribbling headers do not make other clients' requests fail", async () => {
    const slow: net.Socket[] = [];
    for (let i = 0; i < 200; i++) {
      const socket = await connect(app);
      socket.on("error", () => {});
      socket.write(`GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\n`);
      slow.push(socket);
    }
    const dribble = setInterval(() => {
      for (const socket of slow) if (!socket.destroyed) socket.write("x-a: b\r\n");
    }, 500);
    let errors = 0;
    let ok = 0;
    try {
      // Sequential batches of normal requests, each on its own connection, while the slow sockets hang on.
      for (let batch = 0; batch < 10; batch++) {
        const results = await Promise.allSettled(
          Array.from({ length: 10 }, async () => {
            const res = await fetch(`${app.url}/api/mcp/clients`, { headers: { connection: "close" } });
            const body = (await res.json()) as { count?: number };
            if (res.status !== 200 || body.count !== 0) throw new Error(`status ${res.status}`);
          }),
        );
        for (const r of results) r.status === "fulfilled" ? ok++ : errors++;
      }
    } finally {
      clearInterval(dribble);
    }
    const stillOpen = slow.filter((s) => !s.destroyed).length;
    for (const socket of slow) socket.destroy();
    assert.equal(errors, 0, `${errors} of 100 normal requests failed`);
    assert.equal(ok, 100);
    assert.equal(stillOpen, 200, "the slow sockets were all still open while the normal requests ran");
  });
});
