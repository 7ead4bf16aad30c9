import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { keepWhere } from "../../src/routing/keep-where.js";
import { seededRandom, weightedIndex, weightedOrder } from "../../src/routing/weighted-random.js";

/** Successive weightedIndex draws over what is left: the order weightedOrder must reproduce draw for draw. */
function drawOneByOne<T>(items: readonly T[], weightOf: (item: T) => number, random: () => number): T[] {
  const remaining = [...items];
  const ordered: T[] = [];
  while (remaining.length > 0) ordered.push(remaining.splice(weightedIndex(remaining, weightOf, random), 1)[0] as T);
  return ordered;
}

describe("weighted random order", () => {
  test("orders items exactly as successive weighted draws with the same seed", () => {
    const weights = new Map([["a", 3], ["b", 0], ["c", 1], ["d", 5], ["e", Number.NaN]]);
    const weightOf = (item: string): number => weights.get(item) ?? 0;
    for (let seed = 1; seed <= 200; seed++) {
      const expected = drawOneByOne([...weights.keys()], weightOf, seededRandom(seed));
      assert.deepEqual(weightedOrder([...weights.keys()], weightOf, seededRandom(seed)), expected, `seed ${seed}`);
    }
  });

  test("consumes the same random draws as a weighted index over one item", () => {
    const order = seededRandom(7);
    const index = seededRandom(7);
    assert.deepEqual(weightedOrder(["only"], () => 2, order), ["only"]);
    assert.equal(weightedIndex(["only"], () => 2, index), 0);
    assert.equal(order(), index(), "the next draw of both generators");
  });

  test("asks each item's weight once per order", () => {
    const asked = new Map<string, number>();
    weightedOrder(["a", "b", "c"], (item) => {
      asked.set(item, (asked.get(item) ?? 0) + 1);
      return 1;
    }, seededRandom(3));
    assert.deepEqual([...asked.values()], [1, 1, 1]);
  });

  test("picks the only item without a positive weight and draws nothing for it", () => {
    let draws = 0;
    const random = (): number => {
      draws++;
      return 0.5;
    };
    assert.equal(weightedIndex(["zero"], () => 0, random), 0);
    assert.equal(draws, 0);
  });
});

describe("keepWhere", () => {
  test("returns the list itself when every item passes", () => {
    const list = [1, 2, 3];
    assert.equal(keepWhere(list, (n) => n > 0), list);
  });

  test("keeps the passing items in order when some fail", () => {
    const list = [1, -2, 3, -4, 5];
    const kept = keepWhere(list, (n) => n > 0);
    assert.deepEqual(kept, [1, 3, 5]);
    assert.deepEqual(list, [1, -2, 3, -4, 5], "the input is left as it was");
  });

  test("returns an empty list when nothing passes", () => {
    assert.deepEqual(keepWhere([1, 2], () => false), []);
  });
});
