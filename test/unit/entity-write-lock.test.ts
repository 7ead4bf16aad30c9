/** The keyed lock that serializes the writes of one entity: turns per key, release on failure, no leftover entries. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { entityLocks, KeyedLock } from "../../src/services/entity-write-lock.js";

/** A promise with its resolve function, to hold a holder inside its work. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open = (): void => undefined;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

test("the holders of one key run one after another, in the order they asked", async () => {
  const lock = new KeyedLock();
  const events: string[] = [];
  const first = gate();
  const runs = [
    lock.run("k", async () => {
      events.push("first in");
      await first.opened;
      events.push("first out");
    }),
    lock.run("k", async () => {
      events.push("second in");
      events.push("second out");
    }),
  ];
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(events, ["first in"]);
  first.open();
  await Promise.all(runs);
  assert.deepEqual(events, ["first in", "first out", "second in", "second out"]);
});

test("holders of different keys do not wait for each other", async () => {
  const lock = new KeyedLock();
  const held = gate();
  const blocked = lock.run("a", () => held.opened);
  assert.equal(await lock.run("b", async () => "b ran"), "b ran");
  held.open();
  await blocked;
});

test("a holder that throws passes its error on and lets the next one in", async () => {
  const lock = new KeyedLock();
  const failing = lock.run("k", async () => {
    throw new Error("boom");
  });
  const next = lock.run("k", async () => "next ran");
  await assert.rejects(failing, /boom/);
  assert.equal(await next, "next ran");
});

test("a key's entry is dropped once no one holds or waits for it", async () => {
  const lock = new KeyedLock();
  await Promise.all(Array.from({ length: 50 }, (_, i) => lock.run(`k${i % 5}`, async () => undefined)));
  assert.equal(lock.size, 0);
  await assert.rejects(lock.run("k", async () => Promise.reject(new Error("boom"))));
  assert.equal(lock.size, 0);
});

test("each store has a lock of its own, the same on every call", () => {
  const store = {};
  assert.equal(entityLocks(store), entityLocks(store));
  assert.notEqual(entityLocks(store), entityLocks({}));
});
