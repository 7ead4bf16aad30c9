/** The per-label cardinality cap. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { LabelCap, OVERFLOW_VALUE } from "../../src/telemetry/label-cap.js";

test("values beyond the cap of a label become __overflow__", () => {
  const cap = new LabelCap(2);
  assert.equal(cap.admit("team", "a"), "a");
  assert.equal(cap.admit("team", "b"), "b");
  assert.equal(cap.admit("team", "c"), OVERFLOW_VALUE);
  assert.equal(cap.overflowCount, 1);
});

test("values seen before the cap was reached keep passing", () => {
  const cap = new LabelCap(2);
  cap.admit("team", "a");
  cap.admit("team", "b");
  cap.admit("team", "c");
  assert.equal(cap.admit("team", "a"), "a");
});

test("each label name has its own cap", () => {
  const cap = new LabelCap(1);
  assert.equal(cap.admit("team", "a"), "a");
  assert.equal(cap.admit("env", "prod"), "prod");
  assert.equal(cap.admit("team", "b"), OVERFLOW_VALUE);
});

test("refuses a cap that is not a positive integer", () => {
  assert.throws(() => new LabelCap(0), RangeError);
});
