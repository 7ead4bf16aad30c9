/**
 * What tracing's own code costs per request outside the gateway: the spans of one plain chat completion
 * (SERVER, `route`, one CLIENT attempt, with the attributes the gateway gives them) built through the
 * gateway's trace nodes, then encoded to OTLP protobuf in batches of 170 requests (about one full export
 * batch), each into the buffer of the one before, as the export queue does. Not a test: it prints µs per request for building and for encoding, five rounds of two seconds.
 * Inside the gateway under load the same work costs more (bench/RESULTS.md has the figures); this
 * measures the code itself, steadily enough to compare two versions of the encoder.
 *
 *   node --import tsx bench/span-encoding.ts
 */
import { ROOT_CONTEXT } from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { SpanBatch, type ExportIdentity } from "../src/telemetry/otlp-protobuf.js";
import { RecordingTracer, type RecordingSpan } from "../src/telemetry/recording-tracer.js";
import { startServerTrace, type Tracing } from "../src/telemetry/tracing.js";

const REQUESTS_PER_BATCH = 170;
const ROUNDS = 5;
const ROUND_MS = 2_000;

const ended: RecordingSpan[] = [];
const tracing: Tracing = {
  tracer: new RecordingTracer((span) => ended.push(span), () => true),
  propagator: new W3CTraceContextPropagator(),
  captureContent: false,
  extract: () => ROOT_CONTEXT,
  shutdown: async () => undefined,
};
const identity: ExportIdentity = {
  resource: { "service.name": "gw-bench", "service.version": "0.1.0", "telemetry.sdk.language": "nodejs", "process.pid": process.pid },
  scopeName: "gw",
  scopeVersion: "0.1.0",
};
const request = { method: "POST", headers: {} };
const NO_DIMS = (): Readonly<Record<string, string>> => ({});

/** The spans the gateway records for one plain, successful chat completion. */
function traceOneRequest(): void {
  const server = startServerTrace(tracing, request, "/v1/chat/completions", NO_DIMS);
  if (server === undefined) throw new Error("the always-on sampler dropped a request");
  server.node.virtualKey("vk-bench", "bench");
  server.node.route({ provider: "openai", model: "gpt-4o-mini", fallbacks: 0, engines: ["governance"] });
  const attempt = server.node.attempt({ operation: "chat", provider: "openai", requestModel: "gpt-4o-mini", keyId: "oa-1", fallbackIndex: 0, retryIndex: 0, stream: false });
  attempt.traceparent();
  attempt.end({ status: 200, responseModel: "gpt-4o-mini-2024-07-18", inputTokens: 12, outputTokens: 9, finishReasons: ["stop"] });
  server.end(200);
}

// As the export queue does, each batch encodes into the buffer of the one before (a new buffer per batch is
// external memory that sets off V8's full collections, which would be timed here instead of the encoding).
let spare: Buffer | undefined;
for (let round = 0; round < ROUNDS; round++) {
  let buildMs = 0;
  let encodeMs = 0;
  let bytes = 0;
  let requests = 0;
  const until = performance.now() + ROUND_MS;
  while (performance.now() < until) {
    const started = performance.now();
    for (let i = 0; i < REQUESTS_PER_BATCH; i++) traceOneRequest();
    const built = performance.now();
    const batch = new SpanBatch(spare);
    for (const span of ended) batch.add(span);
    bytes += batch.request(identity).length;
    spare = batch.buffer;
    encodeMs += performance.now() - built;
    buildMs += built - started;
    requests += REQUESTS_PER_BATCH;
    ended.length = 0;
  }
  const perRequest = (ms: number): string => ((ms * 1000) / requests).toFixed(2);
  console.log(`round ${round + 1}: building ${perRequest(buildMs)} µs, encoding ${perRequest(encodeMs)} µs per request (${Math.round(bytes / requests)} bytes)`);
}
