/**
 * The arithmetic of usage counters several nodes add to: deltas since the store last saw a window, merging
 * a delta into the stored window, and taking the stored total back with what was counted meanwhile.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { adoptCell, deltaOf, mergeCell } from "../../src/inference/usage-cells.js";

const HOUR = 3_600_000;
const hourly = (start: number): number => start + HOUR;
const unknown = (): null => null;

describe("deltaOf", () => {
  test("is what was counted since the store saw the same window", () => {
    assert.deepEqual(deltaOf({ start: 10, used: 7 }, { start: 10, used: 4 }), { start: 10, used: 3 });
  });

  test("is the whole window when the store saw another window", () => {
    assert.deepEqual(deltaOf({ start: 20, used: 2 }, { start: 10, used: 4 }), { start: 20, used: 2 });
  });

  test("is null when nothing was counted since", () => {
    assert.equal(deltaOf({ start: 10, used: 4 }, { start: 10, used: 4 }), null);
  });
});

describe("mergeCell", () => {
  test("adds a delta to the stored window of the same start", () => {
    assert.deepEqual(mergeCell({ start: 0, used: 5 }, { start: 0, used: 2 }, hourly, 10), { start: 0, used: 7 });
  });

  test("adds a delta of a window opened later on another node while both run, in the earlier window", () => {
    assert.deepEqual(mergeCell({ start: 1000, used: 5 }, { start: 0, used: 2 }, hourly, 2000), { start: 0, used: 7 });
  });

  test("replaces a stored window that has ended", () => {
    assert.deepEqual(mergeCell({ start: 0, used: 5 }, { start: HOUR + 10, used: 2 }, hourly, HOUR + 20), { start: HOUR + 10, used: 2 });
  });

  test("drops a delta of a window that has ended", () => {
    assert.deepEqual(mergeCell({ start: HOUR + 10, used: 5 }, { start: 0, used: 2 }, hourly, HOUR + 20), { start: HOUR + 10, used: 5 });
  });

  test("keeps the newer window when the limit is no longer known", () => {
    assert.deepEqual(mergeCell({ start: 0, used: 5 }, { start: 10, used: 2 }, unknown, 20), { start: 10, used: 2 });
  });
});

describe("adoptCell", () => {
  test("takes the stored total plus what was counted after the snapshot", () => {
    assert.deepEqual(adoptCell({ start: 0, used: 9 }, { start: 0, used: 7 }, { start: 0, used: 12 }), { cell: { start: 0, used: 14 }, adopted: true });
  });

  test("takes a counter only other nodes counted", () => {
    assert.deepEqual(adoptCell(null, undefined, { start: 0, used: 3 }), { cell: { start: 0, used: 3 }, adopted: true });
  });

  test("keeps a counter that moved to a window the store has not seen", () => {
    assert.deepEqual(adoptCell({ start: HOUR, used: 1 }, { start: 0, used: 7 }, { start: 0, used: 12 }), { cell: null, adopted: false });
  });

  test("does not bring back a counter dropped since the snapshot", () => {
    assert.deepEqual(adoptCell(null, { start: 0, used: 7 }, { start: 0, used: 12 }), { cell: null, adopted: false });
  });
});
