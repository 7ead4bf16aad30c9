/**
 * HTTP/1.1 over a raw socket: sends exactly the bytes given (paths with dot segments, repeated headers,
 * Content-Length with Transfer-Encoding, invalid UTF-8) and reads the answer until the server closes, so a
 * test sees resets and malformed answers that a real client would hide or refuse to send.
 */
import * as net from "node:net";

/** What came back on a raw connection. */
export interface RawAnswer {
  /** 0 when no status line arrived. */
  status: number;
  /** Lower-cased header names; the last value of a repeated header. */
  headers: Record<string, string>;
  /** The body, de-chunked. */
  body: Buffer;
  /** The error the socket ended with (ECONNRESET, say), if any. */
  socketError?: string;
}

/** One request on a fresh connection (`connection: close` is added); resolves when the server closes it. */
export function rawRequest(port: number, head: string, body: Buffer = Buffer.alloc(0), limitMs = 120_000): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let socketError: string | undefined;
    const socket = net.connect(port, "127.0.0.1", () => {
      socket.write(head, "latin1");
      if (body.length > 0) socket.write(body);
    });
    const timer = setTimeout(() => {
      socketError = "timeout: no answer";
      socket.destroy();
    }, limitMs);
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", (err: NodeJS.ErrnoException) => (socketError = err.code ?? err.message));
    socket.on("close", () => {
      clearTimeout(timer);
      resolve({ ...parseAnswer(Buffer.concat(chunks)), ...(socketError !== undefined ? { socketError } : {}) });
    });
  });
}

/** A request head: request line, the headers as given (pairs, so names may repeat), `connection: close`. */
export function requestHead(method: string, path: string, headers: ReadonlyArray<readonly [string, string]>): string {
  const lines = [`${method} ${path} HTTP/1.1`, ...headers.map(([name, value]) => `${name}: ${value}`), "connection: close"];
  return `${lines.join("\r\n")}\r\n\r\n`;
}

function parseAnswer(raw: Buffer): Omit<RawAnswer, "socketError"> {
  const end = raw.indexOf("\r\n\r\n");
  if (end < 0) return { status: 0, headers: {}, body: Buffer.alloc(0) };
  const lines = raw.subarray(0, end).toString("latin1").split("\r\n");
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? "")?.[1] ?? 0);
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(":");
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  let body = raw.subarray(end + 4);
  if (headers["transfer-encoding"]?.toLowerCase() === "chunked") body = dechunk(body);
  return { status, headers, body };
}

function dechunk(data: Buffer): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  while (at < data.length) {
    const lineEnd = data.indexOf("\r\n", at);
    if (lineEnd < 0) break;
    const size = parseInt(data.subarray(at, lineEnd).toString("latin1"), 16);
    if (!Number.isFinite(size) || size === 0) break;
    parts.push(data.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
  return Buffer.concat(parts);
}
