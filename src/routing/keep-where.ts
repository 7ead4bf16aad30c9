/**
 * Filtering on the request path, where a filter usually keeps everything (every key permitted, every
 * config allowed): the list itself comes back then, so the common case allocates nothing.
 */

/** The items that pass `test`, in order: `list` itself when every item passes. */
export function keepWhere<T>(list: readonly T[], test: (item: T) => boolean): readonly T[] {
  for (let index = 0; index < list.length; index++) {
    if (!test(list[index] as T)) {
      const kept = list.slice(0, index);
      for (let rest = index + 1; rest < list.length; rest++) if (test(list[rest] as T)) kept.push(list[rest] as T);
      return kept;
    }
  }
  return list;
}
