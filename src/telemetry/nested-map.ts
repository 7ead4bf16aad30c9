/**
 * The inner map of a map of maps: what the metric and usage caches find their entries through, by the
 * strings a request already holds, without building a combined key string per request.
 */

/** What innerMap needs of the outer map: a Map, or a bounded cache (an LRUCache) that evicts on its own. */
export interface MapOfMaps<K, IK, V> {
  get(key: K): Map<IK, V> | undefined;
  set(key: K, value: Map<IK, V>): unknown;
}

/** The map under `key` in `outer`, made when missing. */
export function innerMap<K, IK, V>(outer: MapOfMaps<K, IK, V>, key: K): Map<IK, V> {
  let inner = outer.get(key);
  if (inner === undefined) {
    inner = new Map();
    outer.set(key, inner);
  }
  return inner;
}
