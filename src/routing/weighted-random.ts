/**
 * Weighted random selection in floating point, shared by provider and key selection. Items with weight 0
 * are picked only when every remaining weight is 0, so a zero weight means "last resort", never "gone".
 */
import type { Random } from "./types.js";

function usableWeight(weight: number): number {
  return Number.isFinite(weight) && weight > 0 ? weight : 0;
}

/** Returns the index of one item drawn with probability proportional to its weight. */
export function weightedIndex<T>(items: readonly T[], weightOf: (item: T) => number, random: Random): number {
  if (items.length === 0) throw new RangeError("weightedIndex needs at least one item");
  const weights = items.map((item) => usableWeight(weightOf(item)));
  const total = weights.reduce((sum, weight) => sum + weight, 0);
  if (total === 0) return 0;
  const target = random() * total;
  let reached = 0;
  let lastPositive = 0;
  for (const [index, weight] of weights.entries()) {
    if (weight === 0) continue;
    reached += weight;
    lastPositive = index;
    if (target < reached) return index;
  }
  // Rounding can leave target a hair above the running sum; the last positive item owns that sliver.
  return lastPositive;
}

/** Orders all items by successive weighted draws without replacement (the rotation order for retries). */
export function weightedOrder<T>(items: readonly T[], weightOf: (item: T) => number, random: Random): T[] {
  const remaining = [...items];
  const ordered: T[] = [];
  while (remaining.length > 0) {
    const [picked] = remaining.splice(weightedIndex(remaining, weightOf, random), 1);
    ordered.push(picked as T);
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
