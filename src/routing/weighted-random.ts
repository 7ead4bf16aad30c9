/**
 * Weighted random selection in floating point, shared by provider and key selection. Items with weight 0
 * are picked only when every remaining weight is 0, so a zero weight means "last resort", never "gone".
 */
import type { Random } from "./types.js";

function usableWeight(weight: number): number {
  return Number.isFinite(weight) && weight > 0 ? weight : 0;
}

/** The index drawn from usable `weights` (each finite and >= 0): random() is called only when some weight is positive. */
function drawIndex(weights: readonly number[], random: Random): number {
  let total = 0;
  for (let index = 0; index < weights.length; index++) total += weights[index] as number;
  if (total === 0) return 0;
  const target = random() * total;
  let reached = 0;
  let lastPositive = 0;
  for (let index = 0; index < weights.length; index++) {
    const weight = weights[index] as number;
    if (weight === 0) continue;
    reached += weight;
    lastPositive = index;
    if (target < reached) return index;
  }
  // Rounding can leave target a hair above the running sum; the last positive item owns that sliver.
  return lastPositive;
}

/** The usable weight of every item, asked once each. */
function weightsOf<T>(items: readonly T[], weightOf: (item: T) => number): number[] {
  const weights = new Array<number>(items.length);
  for (let index = 0; index < items.length; index++) weights[index] = usableWeight(weightOf(items[index] as T));
  return weights;
}

/** Returns the index of one item drawn with probability proportional to its weight. */
export function weightedIndex<T>(items: readonly T[], weightOf: (item: T) => number, random: Random): number {
  if (items.length === 0) throw new RangeError("weightedIndex needs at least one item");
  // Every request draws its provider and key: one item is the common case, and needs no weights array.
  if (items.length === 1) {
    if (usableWeight(weightOf(items[0] as T)) > 0) random();
    return 0;
  }
  return drawIndex(weightsOf(items, weightOf), random);
}

/**
 * Orders all items by successive weighted draws without replacement (the rotation order for retries).
 * Each item's weight is asked once; every draw consumes random() as a weightedIndex over the remaining
 * items would, so seeded sequences stay the same.
 */
export function weightedOrder<T>(items: readonly T[], weightOf: (item: T) => number, random: Random): T[] {
  if (items.length === 1) {
    weightedIndex(items, weightOf, random);
    return [items[0] as T];
  }
  const remaining = [...items];
  const weights = weightsOf(remaining, weightOf);
  const ordered: T[] = [];
  while (remaining.length > 0) {
    const index = drawIndex(weights, random);
    ordered.push(remaining[index] as T);
    remaining.splice(index, 1);
    weights.splice(index, 1);
  }
  return ordered;
}

/** A deterministic generator (mulberry32) for tests and benchmarks that need repeatable draws. */
export function seededRandom(seed: number): Random {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
