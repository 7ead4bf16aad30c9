/**
 * Bench child: the floor, the least a proxy can do. A node:http server on 127.0.0.1 (port 0) that
 * sends each request's body to the upstream (env BENCH_UPSTREAM_URL) over an undici keep-alive Pool and
 * pipes the status, content-type and body back. With BENCH_FLOOR_PARSE=1 it first parses the request
 * body as JSON and reads its `model` (a 400 when that fails), as any gateway must before it can route; it
 * still sends the original bytes. Its first stdout line is `{"port": <n>}`; it exits when its stdin closes.
 */
import * as http from "node:http";
import { answerAllocationRequests } from "./allocation-meter.js";
import { pipeUpstream, readBody, upstreamPool } from "./upstream-pipe.js";

const upstream = process.env["BENCH_UPSTREAM_URL"];
if (!upstream) throw new Error("BENCH_UPSTREAM_URL is required");
const parse = process.env["BENCH_FLOOR_PARSE"] === "1";
const pool = upstreamPool(upstream);

function hasModel(body: Buffer): boolean {
  try {
    const parsed = JSON.parse(body.toString("utf8")) as { model?: unknown } | null;
    return typeof parsed?.model === "string";
  } catch {
    return false;
  }
}

const server = http.createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
  readBody(req, (body) => {
    if (parse && !hasModel(body)) {
      res.writeHead(400, { "content-type": "text/plain" });
      res.end("floor: the body is not JSON with a string model");
      return;
    }
    pipeUpstream(pool, req, res, body).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(502, { "content-type": "text/plain" });
      res.end(`floor: ${err instanceof Error ? err.message : String(err)}`);
    });
  });
});
server.headersTimeout = 0;
server.requestTimeout = 0;

server.listen(0, "127.0.0.1", () => {
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("floor has no TCP address");
  process.stdout.write(`${JSON.stringify({ port: address.port })}\n`);
});

answerAllocationRequests();
process.stdin.on("end", () => process.exit(0));
process.stdin.resume();
