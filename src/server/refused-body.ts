/**
 * What becomes of the unread rest of a request body after the gateway answered without it (a 413).
 *
 * HTTP/1.1: a server that closes the connection while the client is still sending makes the client's
 * kernel see a reset, and a reset can discard the answer before the client reads it. So the rest is
 * read and dropped, up to REFUSED_BODY_MAX_BYTES and for at most REFUSED_BODY_MAX_MS, and the
 * connection stays usable; past either bound it is closed. A body whose declared length is already past
 * the bound is not read at all: its connection ends once the answer is out.
 * HTTP/2: the stream is closed with NO_ERROR once the answer is out (RFC 9113 section 8.1), and what
 * still arrives is dropped.
 */
import * as http2 from "node:http2";
import type { Req, Res } from "./node-http.js";

/** Bytes of a refused body read and dropped after the answer before the connection is closed instead. */
export const REFUSED_BODY_MAX_BYTES = 64 * 1024 * 1024;
/** How long a refused body is read and dropped before the connection is closed instead. */
export const REFUSED_BODY_MAX_MS = 10_000;

function isHttp2(req: Req): req is http2.Http2ServerRequest {
  return req.httpVersionMajor >= 2;
}

function ignore(): void {}

/** Call right after answering a request without reading its whole body; drops the rest as described above. */
export function dropRefusedBody(req: Req, res: Res): void {
  req.on("error", ignore);
  if (isHttp2(req)) {
    if (!req.stream.destroyed) req.stream.close(http2.constants.NGHTTP2_NO_ERROR);
    req.resume();
    return;
  }
  if (req.readableEnded) return;
  const socket = req.socket;
  const declared = Number(req.headers["content-length"] ?? "");
  if (Number.isFinite(declared) && declared > REFUSED_BODY_MAX_BYTES) {
    // Not worth reading: the connection ends once the answer is out.
    res.once("finish", () => socket.destroy());
    return;
  }
  let dropped = 0;
  const stop = (): void => {
    clearTimeout(timer);
    req.off("data", count);
    req.off("end", stop);
    req.off("close", stop);
  };
  const giveUp = (): void => {
    stop();
    socket.destroy();
  };
  const count = (chunk: Buffer): void => {
    dropped += chunk.length;
    if (dropped > REFUSED_BODY_MAX_BYTES) giveUp();
  };
  const timer = setTimeout(giveUp, REFUSED_BODY_MAX_MS);
  timer.unref();
  req.on("data", count);
  req.on("end", stop);
  req.on("close", stop);
  req.resume();
}
