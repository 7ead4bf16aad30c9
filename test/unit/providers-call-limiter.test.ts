/** CallLimiter: a provider's concurrency_and_buffer_size slots, waiting line and refusals. */
import assert from "node:assert/strict";
import { getEventListeners } from "node:events";
import { describe, test } from "node:test";
import { RequestAbort } from "../../src/cancellation.js";
import { GatewayError } from "../../src/errors.js";
import { CallLimiter } from "../../src/providers/call-limiter.js";

/** Records the order in which waiting calls get their slot. */
function track(wait: Promise<void> | null, name: string, order: string[]): Promise<void> {
  assert.ok(wait, `${name} should have had to wait`);
  return wait.then(() => void order.push(name));
}

describe("CallLimiter", () => {
  test("starts up to `concurrency` calls at once and makes the next one wait", () => {
    const limiter = new CallLimiter("openai", 2, 5);
    assert.equal(limiter.acquire(undefined, false), null);
    assert.equal(limiter.acquire(undefined, false), null);
    assert.ok(limiter.acquire(undefined, false) instanceof Promise);
    assert.equal(limiter.inFlight, 2);
    assert.equal(limiter.waiting, 1);
  });

  test("hands a released slot to the longest waiting call", async () => {
    const limiter = new CallLimiter("openai", 1, 5);
    limiter.acquire(undefined, false);
    const order: string[] = [];
    const first = track(limiter.acquire(undefined, false), "first", order);
    const second = track(limiter.acquire(undefined, false), "second", order);
    limiter.release();
    await first;
    assert.deepEqual(order, ["first"]);
    limiter.release();
    await second;
    assert.deepEqual(order, ["first", "second"]);
    assert.equal(limiter.inFlight, 1);
  });

  test("frees the slot when nobody waits", () => {
    const limiter = new CallLimiter("openai", 1, 0);
    limiter.acquire(undefined, false);
    limiter.release();
    assert.equal(limiter.inFlight, 0);
    assert.equal(limiter.acquire(undefined, true), null);
  });

  test("refuses with a 429 gateway_queue_full when the buffer is full and excess requests are dropped", () => {
    const limiter = new CallLimiter("openai", 1, 1);
    limiter.acquire(undefined, true);
    void limiter.acquire(undefined, true);
    assert.throws(
      () => limiter.acquire(undefined, true),
      (err: unknown) => err instanceof GatewayError && err.type === "gateway_queue_full" && err.httpStatus === 429 && /provider "openai"/.test(err.message),
    );
    assert.equal(limiter.waiting, 1);
  });

  test("refuses as soon as every slot is busy with a buffer of 0 and excess requests dropped", () => {
    const limiter = new CallLimiter("openai", 1, 0);
    limiter.acquire(undefined, true);
    assert.throws(() => limiter.acquire(undefined, true), /concurrency_and_buffer_size/);
  });

  test("lets calls wait beyond the buffer when excess requests are not dropped", () => {
    const limiter = new CallLimiter("openai", 1, 1);
    limiter.acquire(undefined, false);
    void limiter.acquire(undefined, false);
    assert.ok(limiter.acquire(undefined, false) instanceof Promise);
    assert.equal(limiter.waiting, 2);
  });

  test("drops a waiting call whose caller leaves, rejecting it with the abort reason", async () => {
    const limiter = new CallLimiter("openai", 1, 5);
    limiter.acquire(undefined, false);
    const abort = new RequestAbort();
    const leaving = limiter.acquire(abort, false);
    const reason = new Error("client left");
    abort.abort(reason);
    await assert.rejects(leaving ?? Promise.resolve(), (err: unknown) => err === reason);
    assert.equal(limiter.waiting, 0);
  });

  test("passes the place of a caller that left to the next in line", async () => {
    const limiter = new CallLimiter("openai", 1, 5);
    limiter.acquire(undefined, false);
    const abort = new AbortController();
    const leaving = limiter.acquire(abort.signal, false);
    const order: string[] = [];
    const next = track(limiter.acquire(undefined, false), "next", order);
    abort.abort();
    await assert.rejects(leaving ?? Promise.resolve());
    limiter.release();
    await next;
    assert.deepEqual(order, ["next"]);
    assert.equal(limiter.inFlight, 1);
  });

  test("refuses a caller that has already left instead of queueing it", () => {
    const limiter = new CallLimiter("openai", 1, 5);
    limiter.acquire(undefined, false);
    const abort = new RequestAbort();
    const reason = new Error("gone");
    abort.abort(reason);
    assert.throws(() => limiter.acquire(abort, false), (err: unknown) => err === reason);
    assert.equal(limiter.waiting, 0);
  });

  test("stops listening to a caller's signal once its wait is over", async () => {
    const limiter = new CallLimiter("openai", 1, 5);
    limiter.acquire(undefined, false);
    const abort = new AbortController();
    const waiting = limiter.acquire(abort.signal, false);
    assert.equal(getEventListeners(abort.signal, "abort").length, 1);
    limiter.release();
    await waiting;
    assert.equal(getEventListeners(abort.signal, "abort").length, 0);
  });
});
