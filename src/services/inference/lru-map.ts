/** A map bounded by entry count and total size that drops its least recently used entries first. */

/** One entry, linked into the recency list. */
interface Node<K, V> {
  key: K;
  value: V;
  size: number;
  /** The next less recently used entry; null at the oldest. */
  older: Node<K, V> | null;
  /** The next more recently used entry; null at the newest. */
  newer: Node<K, V> | null;
}

/**
 * An LRU map; `sizeOf` weighs each value (bytes, say) against `maxSize`. Recency is a linked list beside
 * the Map, so a hit moves its entry with a few pointer writes: moving it by deleting and re-inserting the
 * key would hash and compare the key twice more and churn the Map's table on every lookup.
 */
export class LruMap<K, V> {
  readonly #entries = new Map<K, Node<K, V>>();
  #size = 0;
  #newest: Node<K, V> | null = null;
  #oldest: Node<K, V> | null = null;

  constructor(
    private readonly maxEntries: number,
    private readonly maxSize: number,
    private readonly sizeOf: (value: V) => number,
  ) {}

  /** The value under `key`, now the most recently used; undefined when absent. */
  get(key: K): V | undefined {
    const node = this.#entries.get(key);
    if (node === undefined) return undefined;
    if (node !== this.#newest) {
      this.#unlink(node);
      this.#linkNewest(node);
    }
    return node.value;
  }

  /** Stores `value`, evicting the least recently used entries over the bounds; a value alone over maxSize is not kept. */
  set(key: K, value: V): void {
    this.delete(key);
    const size = this.sizeOf(value);
    if (size > this.maxSize) return;
    const node: Node<K, V> = { key, value, size, older: null, newer: null };
    this.#entries.set(key, node);
    this.#linkNewest(node);
    this.#size += size;
    while (this.#oldest !== null && (this.#entries.size > this.maxEntries || this.#size > this.maxSize)) this.#remove(this.#oldest);
  }

  /** Removes `key`; nothing when absent. */
  delete(key: K): void {
    const node = this.#entries.get(key);
    if (node !== undefined) this.#remove(node);
  }

  /** Removes every entry `drop` picks. */
  prune(drop: (value: V) => boolean): void {
    for (let node = this.#oldest; node !== null; ) {
      const next = node.newer;
      if (drop(node.value)) this.#remove(node);
      node = next;
    }
  }

  get count(): number {
    return this.#entries.size;
  }

  #remove(node: Node<K, V>): void {
    this.#entries.delete(node.key);
    this.#unlink(node);
    this.#size -= node.size;
  }

  #unlink(node: Node<K, V>): void {
    if (node.older === null) this.#oldest = node.newer;
    else node.older.newer = node.newer;
    if (node.newer === null) this.#newest = node.older;
    else node.newer.older = node.older;
    node.older = null;
    node.newer = null;
  }

  #linkNewest(node: Node<K, V>): void {
    node.older = this.#newest;
    if (this.#newest === null) this.#oldest = node;
    else this.#newest.newer = node;
    this.#newest = node;
  }
}
