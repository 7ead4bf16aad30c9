/** RequestAbort: the lazy cancellation a /v1 request hands to its upstream calls. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { asAbortSignal, RequestAbort } from "../../src/cancellation.js";

test("runs every listener once with the abort reason readable", () => {
  const abort = new RequestAbort();
  const seen: unknown[] = [];
  abort.addEventListener("abort", () => seen.push(abort.reason));
  abort.addEventListener("abort", { handleEvent: () => seen.push("object") });
  abort.abort("gone");
  abort.abort("again");
  assert.deepEqual(seen, ["gone", "object"]);
  assert.equal(abort.aborted, true);
  assert.equal(abort.reason, "gone");
});

test("does not run a removed listener", () => {
  const abort = new RequestAbort();
  let calls = 0;
  const listener = (): void => {
    calls++;
  };
  abort.addEventListener("abort", listener);
  abort.removeEventListener("abort", listener);
  abort.abort("gone");
  assert.equal(calls, 0);
});

test("never runs a listener added after the abort, as an AbortSignal would not", () => {
  const abort = new RequestAbort();
  abort.abort("gone");
  let calls = 0;
  abort.addEventListener("abort", () => calls++);
  assert.equal(calls, 0);
});

test("a signal taken before the abort aborts with it", () => {
  const abort = new RequestAbort();
  const signal = abort.signal;
  assert.equal(signal.aborted, false);
  abort.abort("gone");
  assert.equal(signal.aborted, true);
  assert.equal(signal.reason, "gone");
});

test("a signal taken after the abort is already aborted", () => {
  const abort = new RequestAbort();
  abort.abort("gone");
  assert.equal(abort.signal.aborted, true);
  assert.equal(abort.signal.reason, "gone");
});

test("asAbortSignal hands a real AbortSignal through unchanged", () => {
  const controller = new AbortController();
  assert.equal(asAbortSignal(controller.signal), controller.signal);
  const abort = new RequestAbort();
  assert.ok(asAbortSignal(abort) instanceof AbortSignal);
});
