/**
 * Bench child: the floor, the least a proxy can do. A node:http server on 127.0.0.1 (port 0) that
 * sends each request's body to the upstream (env BENCH_UPSTREAM_URL) over an undici keep-alive Pool and
 * pipes the status, content-type and body back. With BENCH_FLOOR_PARSE=1 it first parses the request
 * body as JSON and reads its `model` (a 400 when that fails), as any gateway must before it can route; it
 * still sends the original bytes. Its first stdout line is `{"port": <n>}`; it exits when its stdin closes.
 */
import * as http from "node:http";
import { Pool } from "undici";
import { answerAllocationRequests } from "./allocation-meter.js";

const upstream = process.env["BENCH_UPSTREAM_URL"];
if (!upstream) throw new Error("BENCH_UPSTREAM_URL is required");
const parse = process.env["BENCH_FLOOR_PARSE"] === "1";
const pool = new Pool(upstream, { connections: 64, pipelining: 1, keepAliveTimeout: 60_000 });

function forward(req: http.IncomingMessage, res: http.ServerResponse, body: Buffer): Promise<unknown> {
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

function hasModel(body: Buffer): boolean {
  try {
    const parsed = JSON.parse(body.toString("utf8")) as { model?: unknown } | null;
    return typeof parsed?.model === "string";
  } catch {
    return false;
  }
}

const server = http.createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
  const parts: Buffer[] = [];
  req.on("data", (part: Buffer) => parts.push(part));
  req.on("end", () => {
    const body = Buffer.concat(parts);
    if (parse && !hasModel(body)) {
      res.writeHead(400, { "content-type": "text/plain" });
      res.end("floor: the body is not JSON with a string model");
      return;
    }
    forward(req, res, body).catch((err: unknown) => {
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
