import assert from "node:assert/strict";
import { once } from "node:events";
import http from "node:http";
import net from "node:net";
import { test } from "node:test";
import { setImmediate as nextTurn } from "node:timers/promises";
import { SseWriter } from "../../src/server/v1/sse-writer.js";

/** A server whose one response is written by `write`; its port. */
async function serve(write: (res: http.ServerResponse) => Promise<void>): Promise<{ server: http.Server; port: number }> {
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    void write(res);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const address = server.address();
  assert.ok(address !== null && typeof address === "object");
  return { server, port: address.port };
}

/** The raw bytes of one GET's response, read to the end over a plain socket. */
async function rawResponse(port: number): Promise<string> {
  const socket = net.connect(port, "127.0.0.1");
  socket.write("GET / HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n");
  let text = "";
  socket.setEncoding("utf8");
  for await (const part of socket) text += part as string;
  return text;
}

/** The data of each HTTP/1.1 chunk of a chunked response, the terminating empty chunk left out. */
function chunksOf(response: string): string[] {
  let rest = response.slice(response.indexOf("\r\n\r\n") + 4);
  const chunks: string[] = [];
  for (;;) {
    const eol = rest.indexOf("\r\n");
    const size = Number.parseInt(rest.slice(0, eol), 16);
    if (size === 0) return chunks;
    chunks.push(rest.slice(eol + 2, eol + 2 + size));
    rest = rest.slice(eol + 2 + size + 2);
  }
}

test("sends a stream's end with the events held when it ends before the loop's reads are handled", async () => {
  const { server, port } = await serve(async (res) => {
    const writer = new SseWriter(res);
    writer.write("data: 1\n\n");
    // The upstream body's end arrives in ticks and microtasks of the same network read.
    await new Promise((resolve) => process.nextTick(resolve));
    writer.end("data: [DONE]\n\n");
  });
  try {
    assert.deepEqual(chunksOf(await rawResponse(port)), ["data: 1\n\ndata: [DONE]\n\n"]);
  } finally {
    server.close();
  }
});

test("joins the events written in one turn into one chunk of the response", async () => {
  const { server, port } = await serve(async (res) => {
    const writer = new SseWriter(res);
    writer.write("data: 1\n\n");
    writer.write("data: 2\n\n");
    await nextTurn();
    writer.write("data: 3\n\n");
    await nextTurn();
    writer.end("data: [DONE]\n\n");
  });
  try {
    const chunks = chunksOf(await rawResponse(port));
    assert.deepEqual(chunks, ["data: 1\n\ndata: 2\n\n", "data: 3\n\n", "data: [DONE]\n\n"]);
  } finally {
    server.close();
  }
});

test("joins bytes and text written in one turn into one chunk, in the order written", async () => {
  const { server, port } = await serve(async (res) => {
    const writer = new SseWriter(res);
    writer.write(Buffer.from("data: 1\n\n"));
    writer.write("data: 2\n\n");
    writer.write(Buffer.from("data: 3\n\n"));
    await nextTurn();
    writer.write(Buffer.from("data: 4\n\n"));
    writer.end("data: [DONE]\n\n");
  });
  try {
    assert.deepEqual(chunksOf(await rawResponse(port)), ["data: 1\n\ndata: 2\n\ndata: 3\n\n", "data: 4\n\ndata: [DONE]\n\n"]);
  } finally {
    server.close();
  }
});

test("ends the response with the events still held", async () => {
  const { server, port } = await serve(async (res) => {
    const writer = new SseWriter(res);
    writer.write("data: 1\n\n");
    writer.end("data: [DONE]\n\n");
  });
  try {
    assert.deepEqual(chunksOf(await rawResponse(port)), ["data: 1\n\ndata: [DONE]\n\n"]);
  } finally {
    server.close();
  }
});

test("makes the caller wait for drain when a write finds the response buffer full, then delivers everything", async () => {
  let waited = false;
  let written = 0;
  const block = `data: ${"x".repeat(64 * 1024)}\n\n`;
  const { server, port } = await serve(async (res) => {
    const writer = new SseWriter(res);
    // Bounded: a loopback socket's buffers hold a few megabytes at most.
    while (written < 2000) {
      writer.write(block);
      written++;
      const room = writer.room();
      if (room !== null) {
        await room;
        waited = true;
        break;
      }
    }
    writer.end("data: [DONE]\n\n");
  });
  try {
    const socket = net.connect(port, "127.0.0.1");
    socket.write("GET / HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n");
    socket.pause();
    // The server fills the socket's buffers while this client reads nothing.
    await new Promise((resolve) => setTimeout(resolve, 200));
    let length = 0;
    socket.on("data", (part: Buffer) => (length += part.length));
    socket.resume();
    await once(socket, "end");
    assert.equal(waited, true);
    assert.ok(written < 2000, "the writer never reported a full buffer");
    assert.ok(length > written * block.length, "the client did not get every event");
  } finally {
    server.close();
  }
});
