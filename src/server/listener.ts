/**
 * One TCP port for every protocol: the first bytes of each connection decide
 * whether it goes to the HTTP/2 (h2c, prior knowledge) server or to the HTTP/1.1 server. Both share
 * one request handler.
 */
import * as http from "node:http";
import * as http2 from "node:http2";
import * as net from "node:net";
import { CountingHttp2ServerResponse, CountingServerResponse } from "./counting-response.js";

/** The handler both protocol servers call. */
export type RequestHandler = (
  req: http.IncomingMessage | http2.Http2ServerRequest,
  res: http.ServerResponse | http2.Http2ServerResponse,
) => void;

const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");

/** A listening one-port server. */
export interface OnePortServer {
  readonly server: net.Server;
  /** Resolves with the bound address once listening. */
  listen(port: number, host: string): Promise<{ port: number; host: string }>;
  /** Stops accepting, lets in-flight requests finish for up to graceMs, then destroys what is left. */
  close(graceMs?: number): Promise<void>;
}

/** Creates the server; nothing listens until listen(). */
export function createOnePortServer(handler: RequestHandler): OnePortServer {
  let closing = false;
  // HTTP/1.1 sockets and their in-flight request counts. The h1 server never listens itself, so it
  // does not track connections; this map lets close() end idle keep-alive sockets at once.
  const h1Sockets = new Map<net.Socket, number>();
  const sessions = new Set<http2.Http2Session>();
  const sockets = new Set<net.Socket>();
  /** Sockets that have not sent enough bytes to pick a protocol yet. */
  const undecided = new Set<net.Socket>();

  const h1Handler: RequestHandler = (req, res) => {
    const socket = (req as http.IncomingMessage).socket;
    h1Sockets.set(socket, (h1Sockets.get(socket) ?? 0) + 1);
    if (closing) res.setHeader("connection", "close");
    res.once("close", () => {
      const left = (h1Sockets.get(socket) ?? 1) - 1;
      h1Sockets.set(socket, left);
      if (closing && left === 0) socket.destroy();
    });
    handler(req, res);
  };
  const h1 = http.createServer(
    { keepAliveTimeout: 65_000, headersTimeout: 30_000, requestTimeout: 0, ServerResponse: CountingServerResponse },
    h1Handler,
  );
  const h2 = http2.createServer({ Http2ServerResponse: CountingHttp2ServerResponse }, handler);
  h2.on("session", (session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
    if (closing) session.close();
  });
  // A client that talks garbage gets its socket closed, never an uncaught error.
  h1.on("clientError", (_err, socket) => {
    if (socket.writable) socket.end("HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n");
    else socket.destroy();
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
      h1Sockets.delete(socket);
    });
    socket.on("error", () => socket.destroy());
    let head: Buffer = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      head = head.length === 0 ? chunk : Buffer.concat([head, chunk]);
      const n = Math.min(head.length, PREFACE.length);
      const isH2Prefix = head.subarray(0, n).equals(PREFACE.subarray(0, n));
      if (isH2Prefix && head.length < PREFACE.length) return; // wait for the rest of the preface
      socket.off("data", onData);
      undecided.delete(socket);
      socket.pause();
      socket.unshift(head);
      if (isH2Prefix) {
        // The HTTP/2 session drains the buffered bytes itself, then reads the handle natively;
        // resuming the JS stream here would steal its data.
        h2.emit("connection", socket);
      } else {
        h1Sockets.set(socket, 0);
        h1.emit("connection", socket);
        socket.resume();
      }
    };
    socket.on("data", onData);
  });

  return {
    server,
    listen(port, host) {
      return new Promise((resolve, reject) => {
        server.once("error", reject);
        server.listen(port, host, () => {
          server.off("error", reject);
          const addr = server.address() as net.AddressInfo;
          resolve({ port: addr.port, host: addr.address });
        });
      });
    },
    async close(graceMs = 5_000) {
      if (!server.listening) return;
      closing = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const [socket, active] of h1Sockets) if (active === 0) socket.destroy();
      for (const session of sessions) session.close();
      for (const socket of undecided) socket.destroy();
      const timer = setTimeout(() => {
        for (const session of sessions) session.destroy();
        for (const socket of sockets) socket.destroy();
      }, graceMs);
      timer.unref();
      await closed;
      clearTimeout(timer);
    },
  };
}
