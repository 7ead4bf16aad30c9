import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ROOT_CONTEXT, SpanStatusCode } from "@opentelemetry/api";
import { RecordingTracer, samplerFor } from "../../src/telemetry/recording-tracer.js";
import { SpanExportQueue, type BatchSender } from "../../src/telemetry/span-export-queue.js";
import { decodeExport } from "../helpers/otlp-receiver.js";


/** A sender whose exports finish when the test says so; `batches` holds each export's span count. */
function heldSender(): { send: BatchSender; batches: number[]; release: (err?: Error) => void } {
  const batches: number[] = [];
  const waiting: ((err?: Error) => void)[] = [];
  return {
    batches,
    send: (batch) =>
      new Promise<void>((resolve, reject) => {
        batches.push(batch.count);
        waiting.push((err) => (err ? reject(err) : resolve()));
      }),
    release: (err) => waiting.shift()?.(err),
  };
}

function spansOf(queue: SpanExportQueue, count: number): void {
  const tracer = new RecordingTracer(queue.add, () => true);
  for (let i = 0; i < count; i++) tracer.startSpan(`s${i}`, {}, ROOT_CONTEXT).end();
}

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Waits (a bounded number of turns) until the sender has been handed `count` batches. */
async function batchesReach(sender: { batches: unknown[] }, count: number): Promise<void> {
  for (let i = 0; i < 100 && sender.batches.length < count; i++) await turn();
  assert.equal(sender.batches.length, count);
}

describe("the span export queue", () => {
  test("sends a full batch on the next turn without waiting for the delay", async () => {
    const sender = heldSender();
    const queue = new SpanExportQueue(sender.send, () => undefined, { maxQueueSize: 100, maxBatchSize: 4, delayMs: 60_000 });
    spansOf(queue, 4);
    assert.equal(sender.batches.length, 0, "a span's end must not send in the request's own turn");
    await turn();
    assert.deepEqual(sender.batches, [4]);
    sender.release();
    await queue.close(Date.now() + 1000);
  });

  test("sends a partial batch once the delay passes", async () => {
    const sender = heldSender();
    const queue = new SpanExportQueue(sender.send, () => undefined, { maxQueueSize: 100, maxBatchSize: 10, delayMs: 20 });
    spansOf(queue, 3);
    for (let i = 0; i < 100 && sender.batches.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    assert.deepEqual(sender.batches, [3]);
    sender.release();
    await queue.close(Date.now() + 1000);
  });

  test("keeps one export in flight and sends what waited once it finishes", async () => {
    const sender = heldSender();
    const queue = new SpanExportQueue(sender.send, () => undefined, { maxQueueSize: 100, maxBatchSize: 2, delayMs: 60_000 });
    spansOf(queue, 2);
    await turn();
    spansOf(queue, 4);
    await turn();
    assert.equal(sender.batches.length, 1);
    sender.release();
    await batchesReach(sender, 2);
    sender.release();
    await batchesReach(sender, 3);
    assert.deepEqual(sender.batches, [2, 2, 2]);
    sender.release();
    await queue.close(Date.now() + 1000);
  });

  test("drops spans past its size while the collector is slow, counting them", async () => {
    const sender = heldSender();
    let lost = 0;
    const queue = new SpanExportQueue(sender.send, (count) => (lost += count), { maxQueueSize: 5, maxBatchSize: 5, delayMs: 60_000 });
    spansOf(queue, 5);
    await turn();
    spansOf(queue, 8);
    assert.equal(lost, 3);
    assert.equal(queue.size, 5);
    sender.release();
    await batchesReach(sender, 2);
    sender.release();
    await queue.close(Date.now() + 1000);
  });

  test("counts the spans of a failed export as lost", async () => {
    const sender = heldSender();
    const reasons: string[] = [];
    let lost = 0;
    const queue = new SpanExportQueue(sender.send, (count, reason) => {
      lost += count;
      reasons.push(reason);
    }, { maxQueueSize: 100, maxBatchSize: 3, delayMs: 60_000 });
    spansOf(queue, 3);
    await turn();
    sender.release(new Error("connect ECONNREFUSED 127.0.0.1:9"));
    await turn();
    assert.equal(lost, 3);
    assert.deepEqual(reasons, ["connect ECONNREFUSED 127.0.0.1:9"]);
    await queue.close(Date.now() + 1000);
  });

  test("sends the spans that ended in the turn it is closed in", async () => {
    const batches: number[] = [];
    const queue = new SpanExportQueue(async (batch) => {
      batches.push(batch.count);
    }, () => undefined, { maxQueueSize: 100, maxBatchSize: 4, delayMs: 60_000 });
    spansOf(queue, 6);
    await queue.close(Date.now() + 1000);
    assert.deepEqual(batches, [4, 2]);
  });

  test("sends everything queued when closed, in batches", async () => {
    const batches: number[] = [];
    const queue = new SpanExportQueue(async (batch) => {
      batches.push(batch.count);
    }, () => undefined, { maxQueueSize: 100, maxBatchSize: 4, delayMs: 60_000 });
    const tracer = new RecordingTracer(queue.add, () => true);
    for (let i = 0; i < 3; i++) tracer.startSpan("s", {}, ROOT_CONTEXT).end();
    await queue.close(Date.now() + 1000);
    assert.deepEqual(batches, [3]);
    assert.equal(queue.size, 0);
  });
});

describe("the span export queue's encoding", () => {
  test("counts a span it cannot encode as lost and keeps the batch's other spans intact", async () => {
    const sent: Buffer[] = [];
    const reasons: string[] = [];
    const queue = new SpanExportQueue(async (batch) => {
      sent.push(batch.request({ resource: { "service.name": "t" }, scopeName: "gw", scopeVersion: "0" }));
    }, (_count, reason) => reasons.push(reason), { maxQueueSize: 100, maxBatchSize: 10, delayMs: 60_000 });
    const tracer = new RecordingTracer(queue.add, () => true);
    tracer.startSpan("before", {}, ROOT_CONTEXT).end();
    const broken = tracer.startSpan("broken", {}, ROOT_CONTEXT);
    broken.setStatus({
      code: SpanStatusCode.ERROR,
      get message(): string {
        throw new Error("no message today");
      },
    });
    broken.end();
    tracer.startSpan("after", {}, ROOT_CONTEXT).end();
    assert.deepEqual(reasons, [], "spans are encoded on the next turn, not in the one that ended them");
    await turn();
    assert.equal(queue.size, 2);
    await queue.close(Date.now() + 1000);
    assert.deepEqual(reasons, ["a span could not be encoded: no message today"]);
    assert.deepEqual(decodeExport(sent[0]!).map((span) => span.name), ["before", "after"]);
  });
});

describe("the span export queue's buffers", () => {
  /** A sender that records each batch's buffer and request, failing the exports `fails` names (by their order). */
  function recordingSender(fails: ReadonlySet<number>): { send: BatchSender; buffers: Buffer[]; names: string[][] } {
    const buffers: Buffer[] = [];
    const names: string[][] = [];
    const send: BatchSender = async (batch) => {
      buffers.push(batch.buffer);
      names.push(decodeExport(batch.request({ resource: { "service.name": "t" }, scopeName: "gw", scopeVersion: "0" })).map((span) => span.name));
      if (fails.has(buffers.length)) throw new Error("the collector answered 503");
    };
    return { send, buffers, names };
  }

  /** Two batches of two spans exported one after the other, the first failing when `firstFails`. */
  async function twoExports(firstFails: boolean): Promise<ReturnType<typeof recordingSender>> {
    const sender = recordingSender(new Set(firstFails ? [1] : []));
    const queue = new SpanExportQueue(sender.send, () => undefined, { maxQueueSize: 100, maxBatchSize: 2, delayMs: 60_000 });
    spansOf(queue, 2);
    await batchesReach({ batches: sender.buffers }, 1);
    await turn();
    spansOf(queue, 2);
    await batchesReach({ batches: sender.buffers }, 2);
    await queue.close(Date.now() + 1000);
    return sender;
  }

  test("encodes the next batch into the buffer of the one the collector took", async () => {
    const sender = await twoExports(false);
    assert.equal(sender.buffers[1], sender.buffers[0]);
    assert.deepEqual(sender.names, [["s0", "s1"], ["s0", "s1"]]);
  });

  test("never reuses the buffer of a failed export, which may still be on its way", async () => {
    const sender = await twoExports(true);
    assert.notEqual(sender.buffers[1], sender.buffers[0]);
  });
});

describe("samplers", () => {
  // Trace ids' last 32 bits, spread over the whole range.
  const lows = Array.from({ length: 2000 }, (_, i) => (i * 2147483) >>> 0);
  const parent = { traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331", traceFlags: 1 };

  test("traceidratio keeps about its ratio of traces, the same answer for the same trace id", () => {
    const sampler = samplerFor("traceidratio", 0.25);
    const kept = lows.filter((low) => sampler(low, undefined)).length;
    assert.ok(kept > 300 && kept < 700, `kept ${kept} of 2000`);
    for (const low of lows.slice(0, 50)) assert.equal(sampler(low, undefined), sampler(low, undefined));
  });

  test("parent-based samplers follow the parent's sampled flag and use their root rule without one", () => {
    const sampler = samplerFor("parentbased_always_off", 1);
    assert.equal(sampler(7, parent), true);
    assert.equal(sampler(7, { ...parent, traceFlags: 0 }), false);
    assert.equal(sampler(7, undefined), false);
    assert.equal(samplerFor("parentbased_always_on", 1)(7, undefined), true);
  });

  test("always_on and always_off ignore the parent", () => {
    assert.equal(samplerFor("always_on", 0)(7, { ...parent, traceFlags: 0 }), true);
    assert.equal(samplerFor("always_off", 1)(7, parent), false);
  });
});
