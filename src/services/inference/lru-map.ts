/** A map bounded by entry count and total size that drops its least recently used entries first. */

/** An LRU map; `sizeOf` weighs each value (bytes, say) against `maxSize`. */
export class LruMap<K, V> {
  readonly #entries = new Map<K, { value: V; size: number }>();
  #size = 0;

  constructor(
    private readonly maxEntries: number,
    private readonly maxSize: number,
    private readonly sizeOf: (value: V) => number,
  ) {}

  /** The value under `key`, now the most recently used; undefined when absent. */
  get(key: K): V | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    // Map keeps insertion order: re-inserting moves the entry to the recent end.
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    return entry.value;
  }

  /** Stores `value`, evicting the least recently used entries over the bounds; a value alone over maxSize is not kept. */
  set(key: K, value: V): void {
    this.delete(key);
    const size = this.sizeOf(value);
    if (size > this.maxSize) return;
    this.#entries.set(key, { value, size });
    this.#size += size;
    for (const [oldest, entry] of this.#entries) {
      if (this.#entries.size <= this.maxEntries && this.#size <= this.maxSize) break;
      this.#entries.delete(oldest);
      this.#size -= entry.size;
    }
  }

  /** Removes `key`; nothing when absent. */
  delete(key: K): void {
    const entry = this.#entries.get(key);
    if (entry === undefined) return;
    this.#entries.delete(key);
    this.#size -= entry.size;
  }

  /** Removes every entry `drop` picks. */
  prune(drop: (value: V) => boolean): void {
    for (const [key, entry] of this.#entries) if (drop(entry.value)) this.delete(key);
  }

  get count(): number {
    return this.#entries.size;
  }
}
