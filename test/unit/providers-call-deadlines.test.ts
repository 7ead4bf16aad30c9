/** The upstream calls' shared deadline clock. */
import assert from "node:assert/strict";
import { performance } from "node:perf_hooks";
import { test } from "node:test";
import { DEADLINE_TICK_MS, unwatchDeadline, watchDeadline, watchedDeadlines, type Deadlined } from "../../src/providers/http/call-deadlines.js";

/** A call whose deadline is `inMs` from now; `overdue` counts its calls. */
function call(inMs: number): Deadlined & { overdues: number } {
  return {
    deadline: performance.now() + inMs,
    deadlineSlot: -1,
    overdues: 0,
    overdue() {
      this.overdues++;
    },
  };
}

const ticks = (count: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, count * DEADLINE_TICK_MS));

test("calls overdue() once for each listed call whose deadline passed, and takes it off the list", async () => {
  const calls = [call(0), call(0), call(0)];
  for (const each of calls) watchDeadline(each);
  assert.equal(watchedDeadlines(), 3);
  await ticks(3);
  assert.deepEqual(
    calls.map((each) => each.overdues),
    [1, 1, 1],
  );
  assert.equal(watchedDeadlines(), 0);
  assert.ok(calls.every((each) => each.deadlineSlot === -1));
});

test("never calls a call taken off the list, and keeps the others' places", async () => {
  const [first, second, third] = [call(0), call(0), call(0)];
  for (const each of [first, second, third]) watchDeadline(each);
  // Taking the first off moves the last into its slot.
  unwatchDeadline(first);
  assert.equal(third.deadlineSlot, 0);
  await ticks(3);
  assert.deepEqual([first.overdues, second.overdues, third.overdues], [0, 1, 1]);
});

test("does not call a call whose deadline is still ahead or was moved to Infinity", async () => {
  const later = call(60_000);
  const paused = call(0);
  paused.deadline = Infinity;
  watchDeadline(later);
  watchDeadline(paused);
  await ticks(3);
  assert.deepEqual([later.overdues, paused.overdues], [0, 0]);
  unwatchDeadline(later);
  unwatchDeadline(paused);
  assert.equal(watchedDeadlines(), 0);
});

test("lists a call once however often it is watched", () => {
  const once = call(60_000);
  watchDeadline(once);
  watchDeadline(once);
  assert.equal(watchedDeadlines(), 1);
  unwatchDeadline(once);
  unwatchDeadline(once);
  assert.equal(watchedDeadlines(), 0);
});
