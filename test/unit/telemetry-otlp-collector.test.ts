/**
 * The OTLP/HTTP export to a collector on port 0: credentials in the collector URL become Basic
 * authorization (and never reach the log), and a collector that refuses a batch costs its spans,
 * counted and logged, not a request.
 */
import assert from "node:assert/strict";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Writable } from "node:stream";
import { after, describe, test } from "node:test";
import { ROOT_CONTEXT } from "@opentelemetry/api";
import { createLogger } from "../../src/telemetry/logger.js";
import { startOtlpTracing, type OtlpTracingOptions } from "../../src/telemetry/otlp-tracing.js";
import { decodeExport } from "../helpers/otlp-receiver.js";

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** A collector that records every export and answers each with `status`. */
async function collector(status: number): Promise<{ server: Server; url: string; received: Received[] }> {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      received.push({ path: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks) });
      res.writeHead(status, { "content-type": "application/x-protobuf" }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, url: `127.0.0.1:${(server.address() as AddressInfo).port}`, received };
}

/** A logger whose JSON lines are kept. */
function capturedLogger(): { logger: ReturnType<typeof createLogger>; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString("utf8").split("\n")) if (line !== "") lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { logger: createLogger({ level: "info", destination }), lines };
}

function options(url: string): OtlpTracingOptions {
  return { url, headers: {}, serviceName: "gw-test", sampler: "always_on", sampleRatio: 1, captureContent: false, dropReportIntervalMs: 60_000 };
}

describe("the OTLP collector client", () => {
  const servers: Server[] = [];
  after(() => {
    for (const server of servers) server.close();
  });

  test("sends the collector URL's user info as Basic authorization and keeps it out of the log", async () => {
    const { server, url, received } = await collector(200);
    servers.push(server);
    const { logger, lines } = capturedLogger();
    const tracing = await startOtlpTracing(options(`http://otel-user:s%40cret@${url}/v1/traces?tenant=a`), logger, "1.0.0");
    tracing.tracer.startSpan("one", {}, ROOT_CONTEXT).end();
    await tracing.shutdown();
    assert.equal(received.length, 1);
    assert.equal(received[0]?.path, "/v1/traces?tenant=a");
    assert.equal(received[0]?.headers.authorization, `Basic ${Buffer.from("otel-user:s@cret").toString("base64")}`);
    assert.equal(received[0]?.headers["content-type"], "application/x-protobuf");
    assert.deepEqual(decodeExport(received[0]?.body ?? Buffer.alloc(0)).map((span) => span.name), ["one"]);
    const text = JSON.stringify(lines);
    assert.ok(!text.includes("cret") && !text.includes("otel-user"), `the log shows the collector's credentials: ${text}`);
  });

  test("keeps an authorization header given in the headers over the URL's user info", async () => {
    const { server, url, received } = await collector(200);
    servers.push(server);
    const tracing = await startOtlpTracing({ ...options(`http://otel-user:secret@${url}/v1/traces`), headers: { authorization: "Bearer given" } }, capturedLogger().logger, "1.0.0");
    tracing.tracer.startSpan("one", {}, ROOT_CONTEXT).end();
    await tracing.shutdown();
    assert.equal(received[0]?.headers.authorization, "Bearer given");
  });

  test("counts the spans of a batch the collector answers with an error status as dropped, and logs them", async () => {
    const { server, url, received } = await collector(503);
    servers.push(server);
    const { logger, lines } = capturedLogger();
    const tracing = await startOtlpTracing(options(`http://${url}/v1/traces`), logger, "1.0.0");
    for (let i = 0; i < 3; i++) tracing.tracer.startSpan(`span ${i}`, {}, ROOT_CONTEXT).end();
    await tracing.shutdown();
    assert.equal(received.length, 1, "the batch was not sent");
    const dropped = lines.find((line) => line["msg"] === "tracing: spans were dropped");
    assert.ok(dropped, `no line reports the lost spans: ${JSON.stringify(lines)}`);
    assert.equal(dropped["dropped_spans"], 3);
    assert.match(String(dropped["reason"]), /503/);
  });

  // The timeout keeps a stop from waiting on a collector that never answers; the guard fails a hang.
  test("counts a batch the collector never answers as dropped once the export times out", { timeout: 8_000 }, async () => {
    const sockets = new Set<import("node:net").Socket>();
    const server = createServer(() => undefined);
    server.on("connection", (socket) => sockets.add(socket));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    servers.push(server);
    const { logger, lines } = capturedLogger();
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`;
    const tracing = await startOtlpTracing({ ...options(url), exportTimeoutMs: 200 }, logger, "1.0.0");
    for (let i = 0; i < 2; i++) tracing.tracer.startSpan(`span ${i}`, {}, ROOT_CONTEXT).end();
    await tracing.shutdown();
    for (const socket of sockets) socket.destroy();
    const dropped = lines.find((line) => line["msg"] === "tracing: spans were dropped");
    assert.ok(dropped, `no line reports the lost spans: ${JSON.stringify(lines)}`);
    assert.equal(dropped["dropped_spans"], 2);
    assert.match(String(dropped["reason"]), /timeout/i);
  });
});
