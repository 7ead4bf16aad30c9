import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, trace, type HrTime, type Span } from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { encodeExportRequest, SpanBatch, type ExportIdentity } from "../../src/telemetry/otlp-protobuf.js";
import { MAX_ATTRIBUTES, RecordingTracer, type RecordingSpan } from "../../src/telemetry/recording-tracer.js";
import { decodeExport } from "../helpers/otlp-receiver.js";

const IDENTITY: ExportIdentity = { resource: { "service.name": "gw-test", "service.version": "1.2.3" }, scopeName: "gw", scopeVersion: "1.2.3" };

/** A tracer that samples everything and keeps what ends. */
function recorder(): { tracer: RecordingTracer; ended: RecordingSpan[] } {
  const ended: RecordingSpan[] = [];
  return { tracer: new RecordingTracer((span) => ended.push(span), () => true), ended };
}

describe("OTLP protobuf encoding", () => {
  test("round-trips ids, parent, kind, times, status and the resource's service name", () => {
    const { tracer, ended } = recorder();
    const server = tracer.startSpan("POST /v1/chat/completions", { kind: SpanKind.SERVER, startTime: 1_700_000_000_123.5 }, ROOT_CONTEXT);
    const client = tracer.startSpan("chat gpt-4o-mini", { kind: SpanKind.CLIENT }, trace.setSpan(ROOT_CONTEXT, server));
    client.setStatus({ code: SpanStatusCode.ERROR, message: "provider_rate_limited" });
    client.end();
    server.end(1_700_000_000_200);
    const [decodedClient, decodedServer] = decodeExport(encodeExportRequest(IDENTITY, ended));
    assert.ok(decodedClient && decodedServer);
    assert.equal(decodedServer.serviceName, "gw-test");
    assert.equal(decodedServer.traceId, server.spanContext().traceId);
    assert.equal(decodedServer.spanId, server.spanContext().spanId);
    assert.equal(decodedServer.parentSpanId, "");
    assert.equal(decodedServer.kind, 2);
    assert.equal(decodedServer.startNs, 1_700_000_000_123_500_000n);
    assert.equal(decodedServer.endNs, 1_700_000_000_200_000_000n);
    assert.equal(decodedServer.flags, 1);
    assert.equal(decodedClient.traceId, decodedServer.traceId);
    assert.equal(decodedClient.parentSpanId, decodedServer.spanId);
    assert.equal(decodedClient.kind, 3);
    assert.equal(decodedClient.statusCode, 2);
    assert.equal(decodedClient.statusMessage, "provider_rate_limited");
    assert.ok(decodedClient.endNs >= decodedClient.startNs);
  });

  test("encodes start and end times to the exact nanosecond, whole and fractional milliseconds alike", () => {
    // The epoch and the edge of the low 32-bit word (as [seconds, nanoseconds], since a small number of
    // milliseconds means "since the process started"), then today and far in the future.
    const times: [HrTime | number, bigint][] = [
      [[0, 0], 0n],
      [[4, 294_967_295], 4_294_967_295n],
      [[4, 294_967_296], 4_294_967_296n],
      [1_700_000_000_123.5, 1_700_000_000_123_500_000n],
      [1_764_633_600_000.25, 1_764_633_600_000_250_000n],
      [4_102_444_800_999.75, 4_102_444_800_999_750_000n],
    ];
    for (const [time, ns] of times) {
      const { tracer, ended } = recorder();
      tracer.startSpan("s", { startTime: time }, ROOT_CONTEXT).end(time);
      const [span] = decodeExport(encodeExportRequest(IDENTITY, ended));
      assert.equal(span?.startNs, ns, `start of ${String(time)}`);
      assert.equal(span?.endNs, ns, `end of ${String(time)}`);
    }
  });

  test("encodes every attribute type: strings, booleans, integers (negative too), doubles and lists", () => {
    const { tracer, ended } = recorder();
    const attributes = { text: "héllo ✓", yes: true, no: false, count: 42, big: 2 ** 40, negative: -7, ratio: 0.25, list: ["a", "b"], numbers: [1, 2.5] };
    tracer.startSpan("s", { attributes }, ROOT_CONTEXT).end();
    const [span] = decodeExport(encodeExportRequest(IDENTITY, ended));
    assert.deepEqual(span?.attributes, attributes);
  });

  test("encodes text at and past the one-byte length limit, and non-ASCII text at any position, the same as short ASCII", () => {
    const { tracer, ended } = recorder();
    const attributes = {
      ["k".repeat(50)]: "v".repeat(71),
      ["l".repeat(50)]: "w".repeat(72),
      "modèle": "gpt",
      model: "gpt-é",
      é: 1,
      zero: 0,
      max: Number.MAX_SAFE_INTEGER,
    };
    tracer.startSpan("s", { attributes }, ROOT_CONTEXT).end();
    const [span] = decodeExport(encodeExportRequest(IDENTITY, ended));
    assert.deepEqual(span?.attributes, attributes);
  });

  test("encodes a recurring attribute pair the same each time, beside other values of its key", () => {
    const { tracer, ended } = recorder();
    const sets = [
      { "gen_ai.provider.name": "openai", "gw.stream": false, "http.response.status_code": 200 },
      { "gen_ai.provider.name": "anthropic", "gw.stream": true, "http.response.status_code": 429 },
      // Equal text built anew: the pair is found by its value, not by the string object.
      { "gen_ai.provider.name": ["open", "ai"].join(""), "gw.stream": false, "http.response.status_code": 200 },
    ];
    for (const attributes of [...sets, ...sets]) tracer.startSpan("s", { attributes: { ...attributes } }, ROOT_CONTEXT).end();
    const decoded = decodeExport(encodeExportRequest(IDENTITY, ended));
    assert.deepEqual(decoded.map((span) => span.attributes), [...sets, ...sets]);
  });

  test("encodes a list of one text the same each time, apart from that text as a plain value", () => {
    const { tracer, ended } = recorder();
    const sets = [
      { "gen_ai.response.finish_reasons": ["stop"], "gw.route.engines": "stop" },
      { "gen_ai.response.finish_reasons": "stop", "gw.route.engines": ["stop"] },
      { "gen_ai.response.finish_reasons": ["arrêt"], "gw.route.engines": ["x".repeat(120)] },
      { "gen_ai.response.finish_reasons": [["st", "op"].join("")], "gw.route.engines": [] },
    ];
    for (const attributes of [...sets, ...sets]) tracer.startSpan("s", { attributes: { ...attributes } }, ROOT_CONTEXT).end();
    const decoded = decodeExport(encodeExportRequest(IDENTITY, ended));
    assert.deepEqual(decoded.map((span) => span.attributes), [...sets, ...sets]);
  });

  test("encodes events with their attributes and a multi-byte length", () => {
    const { tracer, ended } = recorder();
    const span = tracer.startSpan("s", {}, ROOT_CONTEXT);
    const long = "x".repeat(70_000);
    span.addEvent("gen_ai.first_token");
    span.addEvent("exception", { "exception.message": long });
    span.end();
    const [decoded] = decodeExport(encodeExportRequest(IDENTITY, ended));
    assert.deepEqual(decoded?.events.map((e) => e.name), ["gen_ai.first_token", "exception"]);
    assert.equal(decoded?.events[1]?.attributes["exception.message"], long);
  });

  test("keeps the caller's tracestate and continues its trace under its span", () => {
    const { tracer, ended } = recorder();
    const parent = new W3CTraceContextPropagator().extract(
      ROOT_CONTEXT,
      { traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", tracestate: "vendor=opaque" },
      { get: (carrier, key) => carrier[key], keys: (carrier) => Object.keys(carrier) },
    );
    tracer.startSpan("s", {}, parent).end();
    const [decoded] = decodeExport(encodeExportRequest(IDENTITY, ended));
    assert.equal(decoded?.traceId, "0af7651916cd43dd8448eb211c80319c");
    assert.equal(decoded?.parentSpanId, "b7ad6b7169203331");
    assert.equal(decoded?.traceState, "vendor=opaque");
  });

  test("encodes a batch of many spans, each intact", () => {
    const { tracer, ended } = recorder();
    for (let i = 0; i < 600; i++) tracer.startSpan(`span ${i}`, { attributes: { index: i } }, ROOT_CONTEXT).end();
    const decoded = decodeExport(encodeExportRequest(IDENTITY, ended));
    assert.equal(decoded.length, 600);
    assert.deepEqual(decoded.map((s) => s.attributes["index"]), ended.map((_, i) => i));
  });
});

describe("span batches", () => {
  test("a batch encoding into a buffer another batch was sent from exports only its own spans", () => {
    const { tracer, ended } = recorder();
    for (let i = 0; i < 40; i++) tracer.startSpan(`first ${i}`, { attributes: { index: i } }, ROOT_CONTEXT).end();
    const first = new SpanBatch();
    for (const span of ended.splice(0)) first.add(span);
    assert.equal(decodeExport(first.request(IDENTITY)).length, 40);
    tracer.startSpan("second", { attributes: { index: 0 } }, ROOT_CONTEXT).end();
    const second = new SpanBatch(first.buffer);
    for (const span of ended) second.add(span);
    assert.equal(second.buffer, first.buffer, "the buffer is reused, not replaced");
    assert.deepEqual(decodeExport(second.request(IDENTITY)).map((s) => s.name), ["second"]);
  });

  test("a pair first written into a batch's buffer is encoded the same after that buffer was written over", () => {
    const { tracer, ended } = recorder();
    tracer.startSpan("first", { attributes: { "gw.reused.pair": "kept-value" } }, ROOT_CONTEXT).end();
    const first = new SpanBatch();
    for (const span of ended.splice(0)) first.add(span);
    first.request(IDENTITY);
    tracer.startSpan("over", { attributes: { "gw.other": "x".repeat(60) } }, ROOT_CONTEXT).end();
    tracer.startSpan("again", { attributes: { "gw.reused.pair": "kept-value" } }, ROOT_CONTEXT).end();
    const second = new SpanBatch(first.buffer);
    for (const span of ended) second.add(span);
    assert.equal(second.buffer, first.buffer, "the buffer is reused, not replaced");
    assert.deepEqual(decodeExport(second.request(IDENTITY)).map((s) => s.attributes), [{ "gw.other": "x".repeat(60) }, { "gw.reused.pair": "kept-value" }]);
  });

  test("exports whole when the resource's attributes outgrow the room kept for the envelope", () => {
    const { tracer, ended } = recorder();
    tracer.startSpan("s", {}, ROOT_CONTEXT).end();
    const identity: ExportIdentity = { ...IDENTITY, resource: { ...IDENTITY.resource, "deployment.notes": "n".repeat(2000) } };
    const [span] = decodeExport(encodeExportRequest(identity, ended));
    assert.equal(span?.name, "s");
    assert.equal(span?.serviceName, "gw-test");
  });
});

describe("recorded spans", () => {
  test("keep at most the attribute limit and count the rest as dropped", () => {
    const { tracer, ended } = recorder();
    const span = tracer.startSpan("s", {}, ROOT_CONTEXT);
    for (let i = 0; i < MAX_ATTRIBUTES + 5; i++) span.setAttribute(`a${i}`, i);
    span.setAttribute("a0", "replaced");
    span.end();
    const [decoded] = decodeExport(encodeExportRequest(IDENTITY, ended));
    assert.equal(Object.keys(decoded?.attributes ?? {}).length, MAX_ATTRIBUTES);
    assert.equal(decoded?.attributes["a0"], "replaced");
    assert.equal(decoded?.droppedAttributes, 5);
  });

  test("change nothing and are not exported again once ended", () => {
    const { tracer, ended } = recorder();
    const span: Span = tracer.startSpan("s", {}, ROOT_CONTEXT);
    span.end();
    span.setAttribute("late", true);
    span.end();
    assert.equal(ended.length, 1);
    assert.equal(span.isRecording(), false);
    assert.equal(ended[0]?.attributeKeys.length, 0);
  });

  test("write their ids as the hex the encoder sends, zero bytes included", () => {
    const { tracer, ended } = recorder();
    const parent = trace.setSpanContext(ROOT_CONTEXT, { traceId: "000102030a0b0c0d00f0ff0000000001", spanId: "00000000000000ff", traceFlags: TraceFlags.SAMPLED, isRemote: true });
    const spans = [tracer.startSpan("continued", {}, parent), ...Array.from({ length: 50 }, () => tracer.startSpan("fresh", {}, ROOT_CONTEXT))];
    const contexts = spans.map((span) => span.spanContext());
    for (const span of spans) span.end();
    assert.equal(contexts[0]?.traceId, "000102030a0b0c0d00f0ff0000000001");
    const decoded = decodeExport(encodeExportRequest(IDENTITY, ended));
    assert.deepEqual(
      decoded.map((span) => [span.traceId, span.spanId]),
      contexts.map((context) => [context.traceId, context.spanId]),
    );
    for (const context of contexts) assert.match(`${context.traceId}${context.spanId}`, /^[0-9a-f]{48}$/);
  });

  test("name themselves in a traceparent that carries the ids the encoder sends, the sampled flag set", () => {
    const { tracer, ended } = recorder();
    const parent = trace.setSpanContext(ROOT_CONTEXT, { traceId: "000102030a0b0c0d00f0ff0000000001", spanId: "00000000000000ff", traceFlags: TraceFlags.SAMPLED, isRemote: true });
    const spans = [tracer.startSpan("continued", {}, parent), tracer.startSpan("fresh", {}, ROOT_CONTEXT)] as RecordingSpan[];
    const headers = spans.map((span) => span.traceparent());
    for (const span of spans) span.end();
    const decoded = decodeExport(encodeExportRequest(IDENTITY, ended));
    assert.deepEqual(headers, decoded.map((span) => `00-${span.traceId}-${span.spanId}-01`));
    assert.match(headers[0] ?? "", /^00-000102030a0b0c0d00f0ff0000000001-[0-9a-f]{16}-01$/);
  });

  test("write every hex digit of a continued trace id back as it came, in the ids and the traceparent", () => {
    const { tracer } = recorder();
    const traceId = "0123456789abcdeffedcba9876543210";
    const parent = trace.setSpanContext(ROOT_CONTEXT, { traceId, spanId: "fedcba9876543210", traceFlags: TraceFlags.SAMPLED, isRemote: true });
    const span = tracer.startSpan("continued", {}, parent) as RecordingSpan;
    const { spanId } = span.spanContext();
    assert.equal(span.spanContext().traceId, traceId);
    assert.match(spanId, /^[0-9a-f]{16}$/);
    assert.equal(span.traceparent(), `00-${traceId}-${spanId}-01`);
    span.end();
  });

  test("are not recorded when the sampler says no, and their children stay unsampled with the same trace id", () => {
    const ended: RecordingSpan[] = [];
    const tracer = new RecordingTracer((span) => ended.push(span), (_traceId, parent) => parent !== undefined && (parent.traceFlags & TraceFlags.SAMPLED) === 1);
    const root = tracer.startSpan("root", {}, ROOT_CONTEXT);
    assert.equal(root.isRecording(), false);
    assert.equal(root.spanContext().traceFlags, TraceFlags.NONE);
    const child = tracer.startSpan("child", {}, trace.setSpan(ROOT_CONTEXT, root));
    assert.equal(child.spanContext().traceId, root.spanContext().traceId);
    root.end();
    child.end();
    assert.equal(ended.length, 0);
  });

  test("build no name or attributes for a request span the sampler drops", () => {
    const tracer = new RecordingTracer(() => undefined, () => false);
    let described = 0;
    const span = tracer.startSampled(ROOT_CONTEXT, () => {
      described++;
      return { name: "dropped", options: {} };
    });
    assert.equal(span, undefined);
    assert.equal(described, 0);
  });

  test("continue a caller's sampled trace in a kept request span, named as described", () => {
    const { tracer, ended } = recorder();
    const parent = trace.setSpanContext(ROOT_CONTEXT, { traceId: "000102030a0b0c0d00f0ff0000000001", spanId: "00000000000000ff", traceFlags: TraceFlags.SAMPLED, isRemote: true });
    const span = tracer.startSampled(parent, () => ({ name: "POST /v1/chat/completions", options: { attributes: { "http.route": "/v1/chat/completions" } } }));
    assert.ok(span !== undefined);
    span.end();
    const [decoded] = decodeExport(encodeExportRequest(IDENTITY, ended));
    assert.equal(decoded?.traceId, "000102030a0b0c0d00f0ff0000000001");
    assert.equal(decoded?.parentSpanId, "00000000000000ff");
    assert.equal(decoded?.name, "POST /v1/chat/completions");
  });
});

describe("attribute keys past the interning bound", () => {
  // Last in this file: it fills the module's table of interned keys for every test after it.
  test("still replace an earlier value of the same name, and encode like interned ones", () => {
    const { tracer, ended } = recorder();
    for (let i = 0; i < 300; i++) tracer.startSpan("filler", { attributes: { [`filler.${i}`]: i } }, ROOT_CONTEXT).end();
    const late = ["late", "key"].join(".");
    const span = tracer.startSpan("s", {}, ROOT_CONTEXT);
    span.setAttribute(late, "first");
    span.setAttribute("late.key", "second");
    span.setAttribute("late.other", ["stop"]);
    span.end();
    const request = encodeExportRequest(IDENTITY, ended);
    assert.equal(request.toString("latin1").split("late.key").length - 1, 1, "the key is sent once");
    assert.deepEqual(decodeExport(request).at(-1)?.attributes, { "late.key": "second", "late.other": ["stop"] });
  });
});
