/** The relay between a provider's stream and the caller: event timing for the stream metrics and the one end report. */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { JsonObject, ProviderStream, TokenUsage } from "../../src/providers/types.js";
import { RelayedStream } from "../../src/inference/relayed-stream.js";
import type { InferenceObserver } from "../../src/telemetry/inference-observer.js";
import type { BaseLabels } from "../../src/telemetry/metrics.js";

const BASE: BaseLabels = { provider: "openai", model: "gpt-4o-mini", method: "chat" };
const USAGE: TokenUsage = { input_tokens: 3, output_tokens: 5 };

/** A provider stream over fixed batches, failing after them when `failure` is given. */
function providerStream(batches: JsonObject[][], failure?: Error): ProviderStream {
  async function* grouped(): AsyncGenerator<readonly JsonObject[]> {
    for (const batch of batches) yield batch;
    if (failure) throw failure;
  }
  return {
    status: 200,
    usage: () => USAGE,
    batches: grouped,
    async *[Symbol.asyncIterator]() {
      for await (const batch of grouped()) yield* batch;
    },
  };
}

/** What the relay told the observer: first tokens and each chunks() call as [seconds > 0, count]. */
function recorder(): { observer: InferenceObserver; firstTokens: number; chunks: number[] } {
  const seen = { firstTokens: 0, chunks: [] as number[] };
  // The relay calls only these two of the observer's methods.
  const observer = {
    firstToken: () => seen.firstTokens++,
    chunks: (_labels: BaseLabels, _seconds: number, count: number) => seen.chunks.push(count),
  } as unknown as InferenceObserver;
  return Object.assign(seen, { observer });
}

test("times every event after the first, a batch counting each of its events", async () => {
  const seen = recorder();
  const relayed = new RelayedStream(providerStream([[{ a: 1 }, { a: 2 }, { a: 3 }], [{ a: 4 }]]), () => {}, seen.observer, BASE, 0, undefined);
  const sizes: number[] = [];
  for await (const batch of relayed.batches?.() ?? []) sizes.push(batch.length);
  assert.deepEqual(sizes, [3, 1]);
  assert.equal(seen.firstTokens, 1);
  assert.deepEqual(seen.chunks, [2, 1]);
});

test("offers no batches when the provider's stream has none", () => {
  const stream: ProviderStream = { status: 200, usage: () => null, async *[Symbol.asyncIterator]() {} };
  assert.equal(new RelayedStream(stream, () => {}, recorder().observer, BASE, 0, undefined).batches, undefined);
});

test("reports the usage once when the stream ends", async () => {
  const ends: [TokenUsage | null, unknown][] = [];
  const relayed = new RelayedStream(providerStream([[{ a: 1 }]]), (usage, err) => ends.push([usage, err]), recorder().observer, BASE, 0, undefined);
  for await (const chunk of relayed) assert.deepEqual(chunk, { a: 1 });
  assert.deepEqual(ends, [[USAGE, null]]);
});

test("reports the failure that ended the batches", async () => {
  const ends: unknown[] = [];
  const failure = new Error("upstream went away");
  const relayed = new RelayedStream(providerStream([[{ a: 1 }]], failure), (_usage, err) => ends.push(err), recorder().observer, BASE, 0, undefined);
  await assert.rejects(async () => {
    for await (const _ of relayed.batches?.() ?? []);
  }, /upstream went away/);
  assert.deepEqual(ends, [failure]);
});

test("reports a caller that stopped reading as a closed request", async () => {
  const ends: unknown[] = [];
  const relayed = new RelayedStream(providerStream([[{ a: 1 }], [{ a: 2 }]]), (_usage, err) => ends.push(err), recorder().observer, BASE, 0, undefined);
  for await (const _ of relayed.batches?.() ?? []) break;
  assert.equal(ends.length, 1);
  assert.match(String((ends[0] as Error).message), /client closed the stream/);
});

test("closes the provider's batches before reporting a caller that stopped reading", async () => {
  const order: string[] = [];
  async function* batches(): AsyncGenerator<readonly JsonObject[]> {
    try {
      yield [{ a: 1 }];
      yield [{ a: 2 }];
    } finally {
      order.push("provider closed");
    }
  }
  const stream: ProviderStream = { status: 200, usage: () => null, batches, async *[Symbol.asyncIterator]() {} };
  const relayed = new RelayedStream(stream, () => order.push("end reported"), recorder().observer, BASE, 0, undefined);
  for await (const _ of relayed.batches?.() ?? []) break;
  assert.deepEqual(order, ["provider closed", "end reported"]);
});

test("reports the end once when a caller stops reading after the batches ran out", async () => {
  const ends: unknown[] = [];
  const relayed = new RelayedStream(providerStream([[{ a: 1 }]]), (_usage, err) => ends.push(err), recorder().observer, BASE, 0, undefined);
  const iterator = relayed.batches?.()[Symbol.asyncIterator]();
  assert.ok(iterator);
  assert.equal((await iterator.next()).done, false);
  assert.equal((await iterator.next()).done, true);
  await iterator.return?.();
  assert.deepEqual(ends, [null]);
});
