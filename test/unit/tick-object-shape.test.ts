/**
 * keepTickObjectShape holds one of process.nextTick's queue entries for the life of the process, so the
 * hidden class V8 builds for those entries is never collected (see tick-object-shape.ts for why).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { keepTickObjectShape } from "../../src/tick-object-shape.js";

test("keeps a next-tick queue entry with its callback", () => {
  const entry = keepTickObjectShape() as { callback?: unknown; args?: unknown } | undefined;
  assert.ok(entry, "an entry was captured");
  assert.equal(typeof entry.callback, "function");
  assert.equal(entry.args, undefined);
});

test("keeps the same entry on later calls", () => {
  assert.equal(keepTickObjectShape(), keepTickObjectShape());
});

test("leaves next-tick callbacks running after the capture", async () => {
  keepTickObjectShape();
  const ran = await new Promise<boolean>((resolve) => process.nextTick(resolve, true));
  assert.equal(ran, true);
});
