/**
 * The gateway's bounded in-memory caches: lru-cache, bounded by entry count through `maxSize` with every
 * entry weighing 1. lru-cache's own `max` allocates room for every entry up front, and these bounds only
 * stop a flood of distinct keys: a cache usually holds a handful of entries and would carry the room for
 * thousands from the start.
 */
import { LRUCache } from "lru-cache";

/** lru-cache options a bounded cache may add: expiry, and the clock it is measured on. */
export type BoundedCacheOptions<K extends {}, V extends {}> = Pick<LRUCache.OptionsBase<K, V, unknown>, "ttl" | "perf" | "ttlResolution">;

const ONE = (): number => 1;

/** A cache of at most `maxEntries` entries; beyond it, the least recently used give way. */
export function boundedCache<K extends {}, V extends {}>(maxEntries: number, options: BoundedCacheOptions<K, V> = {}): LRUCache<K, V> {
  return new LRUCache<K, V>({ ...options, maxSize: maxEntries, sizeCalculation: ONE });
}
