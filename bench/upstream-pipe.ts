/**
 * What the bench's floors share: the keep-alive pool to the mock upstream and the pass-through of one
 * request over it, the least any proxy does.
 */
import type * as http from "node:http";
import { Pool } from "undici";

/** A keep-alive pool to `upstream`, sized so 32 client connections never wait for a socket. */
export function upstreamPool(upstream: string): Pool {
  return new Pool(upstream, { connections: 64, pipelining: 1, keepAliveTimeout: 60_000 });
}

/** Sends `body` to the upstream and pipes its status, content-type and body into `res`. */
export function pipeUpstream(pool: Pool, req: http.IncomingMessage, res: http.ServerResponse, body: Buffer | string): Promise<unknown> {
  // pool.stream writes the upstream body straight into the response: undici's own proxying path.
  return pool.stream(
    { method: "POST", path: req.url ?? "/", headers: { "content-type": req.headers["content-type"] ?? "application/json" }, body },
    ({ statusCode, headers }) => {
      const contentType = headers["content-type"];
      res.writeHead(statusCode, contentType === undefined ? {} : { "content-type": contentType });
      return res;
    },
  );
}

/** Reads a request's whole body, then calls `done` with it. */
export function readBody(req: http.IncomingMessage, done: (body: Buffer) => void): void {
  const parts: Buffer[] = [];
  req.on("data", (part: Buffer) => parts.push(part));
  req.on("end", () => done(Buffer.concat(parts)));
}
