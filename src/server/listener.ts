/**
 * One TCP port for every protocol: the first bytes of each connection decide
 * whether it goes to the HTTP/2 (h2c, prior knowledge) server or to the HTTP/1.1 server. Both share
 * one request handler.
 */
import * as http from "node:http";
import * as http2 from "node:http2";
import * as net from "node:net";
import type { ServerLimits } from "../config/file-config.js";
import { CountingHttp2ServerResponse, CountingServerResponse } from "./counting-response.js";

/** The handler both protocol servers call. */
export type RequestHandler = (
  req: http.IncomingMessage | http2.Http2ServerRequest,
  res: http.ServerResponse | http2.Http2ServerResponse,
) => void;

/** How often a closing server looks for HTTP/1.1 connections that finished their last answer. */
const IDLE_SWEEP_MS = 20;

const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");

/** The answer to a request the HTTP/1.1 parser refused, by Node's error code: status and reason. */
function clientErrorAnswer(code: string | undefined): { status: number; reason: string; type: string; message: string } {
  switch (code) {
    case "HPE_HEADER_OVERFLOW":
      return { status: 431, reason: "Request Header Fields Too Large", type: "header_too_large", message: "the request head is larger than server.max_header_bytes" };
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return { status: 408, reason: "Request Timeout", type: "request_timeout", message: "the request was not received within server.headers_timeout / server.request_timeout" };
    default:
      return { status: 400, reason: "Bad Request", type: "bad_request", message: `the request is not valid HTTP/1.1 (${code ?? "parse error"})` };
  }
}

/** A listening one-port server. */
export interface OnePortServer {
  readonly server: net.Server;
  /** Resolves with the bound address once listening. */
  listen(port: number, host: string): Promise<{ port: number; host: string }>;
  /** Stops accepting, lets in-flight requests finish for up to graceMs, then destroys what is left. */
  close(graceMs?: number): Promise<void>;
}

/** Creates the server; nothing listens until listen(). */
export function createOnePortServer(handler: RequestHandler, limits: ServerLimits): OnePortServer {
  let closing = false;
  const sessions = new Set<http2.Http2Session>();
  const sockets = new Set<net.Socket>();
  /** Sockets that have not sent enough bytes to pick a protocol yet. */
  const undecided = new Set<net.Socket>();

  // Nothing per request but this check: the HTTP/1.1 server itself knows which connections are idle (see close()).
  const h1Handler: RequestHandler = (req, res) => {
    if (closing) res.setHeader("connection", "close");
    handler(req, res);
  };
  const h1 = http.createServer(
    {
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      maxHeaderSize: limits.maxHeaderBytes,
      // How often the two timeouts above are checked: often enough that a short timeout is kept closely.
      connectionsCheckingInterval: Math.max(100, Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs || Infinity, 30_000) / 4),
      ServerResponse: CountingServerResponse,
    },
    h1Handler,
  );
  const h2 = http2.createServer(
    { Http2ServerResponse: CountingHttp2ServerResponse, maxSessionInvalidFrames: 100, settings: { maxHeaderListSize: limits.maxHeaderBytes } },
    handler,
  );
  h2.on("session", (session) => {
    // A session quiet for this long is closed as an idle keep-alive connection is; close() lets open streams finish.
    session.setTimeout(limits.keepAliveTimeoutMs, () => session.close());
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
    if (closing) session.close();
  });
  // A client that talks garbage gets a JSON error and its socket closed, never an uncaught error.
  h1.on("clientError", (err: NodeJS.ErrnoException, socket) => {
    // Node's own handler makes the same check: once a response has begun, a second status line would corrupt it.
    const current = (socket as net.Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (!socket.writable || current?.headersSent === true) {
      socket.destroy();
      return;
    }
    const answer = clientErrorAnswer(err.code);
    const body = JSON.stringify({ error: { type: answer.type, message: answer.message } });
    socket.end(
      `HTTP/1.1 ${answer.status} ${answer.reason}\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
  });

  const server = net.createServer((socket) => {
    // http.Server turns Nagle off only for sockets it accepts itself; ours are handed over, so do it here,
    // or small responses (an SSE event, a short JSON answer) wait for the peer's delayed ACK.
    socket.setNoDelay(true);
    sockets.add(socket);
    undecided.add(socket);
    socket.once("close", () => {
      sockets.delete(socket);
      undecided.delete(socket);
    });
    socket.on("error", () => socket.destroy());
    // A connection that never sends enough bytes to pick a protocol gets the headers timeout too.
    const undecidedTimer = setTimeout(() => socket.destroy(), limits.headersTimeoutMs);
    undecidedTimer.unref();
    socket.once("close", () => clearTimeout(undecidedTimer));
    let head: Buffer = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      head = head.length === 0 ? chunk : Buffer.concat([head, chunk]);
      const n = Math.min(head.length, PREFACE.length);
      const isH2Prefix = head.subarray(0, n).equals(PREFACE.subarray(0, n));
      if (isH2Prefix && head.length < PREFACE.length) return; // wait for the rest of the preface
      socket.off("data", onData);
      clearTimeout(undecidedTimer);
      undecided.delete(socket);
      socket.pause();
      socket.unshift(head);
      if (isH2Prefix) {
        // The HTTP/2 session drains the buffered bytes itself, then reads the handle natively;
        // resuming the JS stream here would steal its data.
        h2.emit("connection", socket);
      } else {
        h1.emit("connection", socket);
        socket.resume();
      }
    };
    socket.on("data", onData);
  });

  // Past the cap, Node closes each new connection as it is accepted.
  server.maxConnections = limits.maxConnections;

  return {
    server,
    listen(port, host) {
      return new Promise((resolve, reject) => {
        server.once("error", reject);
        server.listen(port, host, () => {
          server.off("error", reject);
          // The HTTP/1.1 server is handed its sockets and never listens itself, but Node starts the
          // timer that enforces headersTimeout and requestTimeout only on "listening".
          h1.emit("listening");
          const addr = server.address() as net.AddressInfo;
          resolve({ port: addr.port, host: addr.address });
        });
      });
    },
    async close(graceMs = 5_000) {
      if (!server.listening) return;
      closing = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Ends the idle HTTP/1.1 connections and stops the timeout-checking timer; the error says only that
      // h1 never listened.
      h1.close(() => {});
      // A connection busy with a request becomes idle once its answer is out (a request that comes after
      // this is answered with connection: close): such connections are ended as they become idle.
      const sweep = setInterval(() => h1.closeIdleConnections(), IDLE_SWEEP_MS);
      sweep.unref();
      for (const session of sessions) session.close();
      for (const socket of undecided) socket.destroy();
      const timer = setTimeout(() => {
        for (const session of sessions) session.destroy();
        for (const socket of sockets) socket.destroy();
      }, graceMs);
      timer.unref();
      await closed;
      clearTimeout(timer);
      clearInterval(sweep);
    },
  };
}
