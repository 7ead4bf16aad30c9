/**
 * The inner map of a map of maps: what the metric and usage caches find their entries through, by the
 * strings a request already holds, without building a combined key string per request.
 */

/** The map under `key` in `outer`, made when missing; `outer` starts over once it holds `limit` maps. */
export function innerMap<K, IK, V>(outer: Map<K, Map<IK, V>>, key: K, limit = Number.POSITIVE_INFINITY): Map<IK, V> {
  let inner = outer.get(key);
  if (inner === undefined) {
    if (outer.size >= limit) outer.clear();
    inner = new Map();
    outer.set(key, inner);
  }
  return inner;
}
