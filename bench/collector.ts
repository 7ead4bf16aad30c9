/**
 * Bench child: a no-op OTLP/HTTP collector for the traced gateway variant. It reads each export to its
 * end and answers 200 with an empty ExportTraceServiceResponse (full success), so the gateway pays the
 * whole cost of building, batching, encoding and sending its spans. Its first stdout line is
 * `{"port": <n>}`; it exits when its stdin closes.
 */
import http from "node:http";

let exports = 0;
const server = http.createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
  req.on("data", () => undefined);
  req.on("end", () => {
    exports++;
    res.writeHead(200, { "content-type": "application/x-protobuf", "content-length": 0 });
    res.end();
  });
});

server.listen(0, "127.0.0.1", () => {
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("collector has no TCP address");
  process.stdout.write(`${JSON.stringify({ port: address.port })}\n`);
});

process.stdin.on("end", () => {
  process.stderr.write(`[collector] ${exports} exports received\n`);
  process.exit(0);
});
process.stdin.resume();
