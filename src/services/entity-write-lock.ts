/**
 * Serializes the writes of one stored entity, so that each write reads what the one before committed and
 * what a node installs in memory is what the store holds after that write. Within a node, the writers of
 * one entity (its kind and id) take turns on a keyed lock held from the read of the row to the in-memory
 * install; across the nodes sharing a PostgreSQL schema, the row is read with SELECT ... FOR UPDATE inside
 * the write's transaction, so another node's writer waits for the commit and reads the committed row.
 */
import { LockMode } from "@mikro-orm/core";
import type { EntityManager } from "@mikro-orm/postgresql";
import { inNativeTransaction, type Store } from "../store/index.js";

/**
 * Find options for the row a write reads: locked until its transaction ends, and read from the database
 * even when the unit of work already holds the entity, since only that read sees the last commit.
 */
export const FOR_UPDATE = { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true } as const;

/** An async mutex per key; a key's entry lives only while someone holds or waits for it. */
export class KeyedLock {
  readonly #tails = new Map<string, Promise<void>>();

  /** Runs `work` once every earlier caller with the same key is done. */
  async run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    let release = (): void => undefined;
    const mine = new Promise<void>((resolve) => {
      release = resolve;
    });
    // Every tail resolves and never rejects, so a failed holder still lets the next one in.
    const tail = previous.then(() => mine);
    this.#tails.set(key, tail);
    await previous;
    try {
      return await work();
    } finally {
      release();
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    }
  }

  /** How many keys someone holds or waits for. */
  get size(): number {
    return this.#tails.size;
  }
}

/** One stored entity: its kind (as the change notifications name its table) and its id. */
export interface EntityRef {
  kind: string;
  id: string;
}

/** The lock key of an entity; a kind never holds a colon. */
export function entityLockKey(ref: EntityRef): string {
  return `${ref.kind}:${ref.id}`;
}

// One lock per store object: every service of a gateway shares it, and two gateways in one process do not.
const locks = new WeakMap<object, KeyedLock>();

/** The keyed lock of the gateway that owns `store`. */
export function entityLocks(store: object): KeyedLock {
  let lock = locks.get(store);
  if (lock === undefined) {
    lock = new KeyedLock();
    locks.set(store, lock);
  }
  return lock;
}

/**
 * Runs one write of one entity under this node's lock on it: `write` in a native transaction on a fresh entity
 * manager (reading the row with FOR_UPDATE), then, once committed, `install` with what `write` returned. `write`
 * writes what it changes itself, natively (`insertRecord`, `writeRecord`, `deleteRecord`, native statements),
 * never through a flush: the ORM runs each flush inside an AsyncLocalStorage, and on Node 20 the first one
 * entered keeps promise hooks on for every request after. The lock is taken before the transaction starts and
 * nothing inside the transaction waits for it, so the embedded database's single connection is never held by a
 * writer waiting for another.
 */
export async function writeEntity<T>(store: Store, ref: EntityRef, write: (tx: EntityManager) => Promise<T>, install?: (written: T) => Promise<void> | void): Promise<T> {
  return entityLocks(store).run(entityLockKey(ref), async () => {
    const written = await inNativeTransaction(store, write);
    await install?.(written);
    return written;
  });
}
