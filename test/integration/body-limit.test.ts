/**
 * A body over client.max_request_body_bytes on every kind of path (REST, Connect, /v1), sent with a
 * Content-Length or chunked, over HTTP/1.1: the client reads the 413 JSON answer instead of a reset,
 * and may send the whole body first, since the gateway reads and drops the rest.
 */
import assert from "node:assert/strict";
import { connect, type Socket } from "node:net";
import { Readable } from "node:stream";
import { after, before, describe, test } from "node:test";
import { request } from "undici";
import { startApp, type TestApp } from "../helpers/app.js";

/** 20 MB: over the default limit of 16 MiB. */
const BIG = Buffer.alloc(20 * 1024 * 1024, 0x61);
const PIECE = 256 * 1024;

/** The big body in pieces, without a length: undici sends it chunked. */
async function* chunked(): AsyncGenerator<Buffer> {
  for (let at = 0; at < BIG.length; at += PIECE) yield BIG.subarray(at, at + PIECE);
}

/** The big body as a web stream, without a length: fetch sends it chunked. */
function webStream(): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= BIG.length) {
        controller.close();
        return;
      }
      controller.enqueue(BIG.subarray(at, at + PIECE));
      at += PIECE;
    },
  });
}

type Framing = "content-length" | "chunked";

const PATHS = [
  { kind: "REST", path: "/api/mcp/client" },
  { kind: "Connect", path: "/gw.admin.v1.McpClientService/ListMcpClients" },
  { kind: "/v1", path: "/v1/chat/completions" },
  { kind: "/v1", path: "/v1/responses" },
] as const;

let app: TestApp;

before(async () => {
  app = await startApp();
});

after(async () => {
  await app.stop();
});

async function viaRequest(path: string, framing: Framing): Promise<{ status: number; json: unknown }> {
  const res = await request(`${app.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: framing === "content-length" ? BIG : Readable.from(chunked()),
  });
  return { status: res.statusCode, json: await res.body.json() };
}

async function viaFetch(path: string, framing: Framing): Promise<{ status: number; json: unknown }> {
  const res = await fetch(`${app.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    ...(framing === "content-length" ? { body: BIG } : { body: webStream(), duplex: "half" }),
  } as RequestInit);
  return { status: res.status, json: await res.json() };
}

function write(socket: Socket, data: string | Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    socket.write(data, (err) => (err ? reject(err) : resolve()));
  });
}

/**
 * Sends the request and its whole body over a plain socket, then half-closes it; resolves with what the
 * gateway answered and the error, if any, that stopped the client from sending every byte.
 */
async function sendWhole(path: string, framing: Framing): Promise<{ sendError: unknown; answer: string }> {
  const { hostname, port } = new URL(app.url);
  const socket = connect(Number(port), hostname);
  const received: Buffer[] = [];
  socket.on("data", (chunk: Buffer) => received.push(chunk));
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  socket.on("error", () => {
    // Reported through the failed write or the close.
  });
  const length = framing === "content-length" ? `content-length: ${BIG.length}` : "transfer-encoding: chunked";
  let sendError: unknown = null;
  try {
    await write(socket, `POST ${path} HTTP/1.1\r\nhost: ${hostname}:${port}\r\ncontent-type: application/json\r\n${length}\r\n\r\n`);
    for (let at = 0; at < BIG.length; at += PIECE) {
      const piece = BIG.subarray(at, at + PIECE);
      if (framing === "content-length") await write(socket, piece);
      else await write(socket, Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from("\r\n")]));
    }
    if (framing === "chunked") await write(socket, "0\r\n\r\n");
    socket.end();
  } catch (err) {
    sendError = err;
    socket.destroy();
  }
  await closed;
  return { sendError, answer: Buffer.concat(received).toString("latin1") };
}

/** The error message of any of the three envelopes (/api, OpenAI, Connect). */
function errorMessage(json: unknown): string {
  const body = json as { error?: { message?: unknown }; message?: unknown };
  return String(body.error?.message ?? body.message ?? "");
}

for (const { kind, path } of PATHS) {
  describe(`a 20 MB body on ${kind} ${path}`, () => {
    for (const framing of ["content-length", "chunked"] as const) {
      test(`undici request reads the 413 JSON answer (${framing})`, async () => {
        const res = await viaRequest(path, framing);
        assert.equal(res.status, 413);
        assert.match(errorMessage(res.json), /larger than the limit of 16777216 bytes/);
      });

      test(`fetch reads the 413 JSON answer (${framing})`, async () => {
        const res = await viaFetch(path, framing);
        assert.equal(res.status, 413);
        assert.match(errorMessage(res.json), /larger than the limit of 16777216 bytes/);
      });

      test(`a client may send the whole body and then read the 413 (${framing})`, async () => {
        const { sendError, answer } = await sendWhole(path, framing);
        assert.equal(sendError, null);
        assert.match(answer, /^HTTP\/1\.1 413 /);
        assert.match(answer, /larger than the limit of 16777216 bytes/);
      });
    }
  });
}
