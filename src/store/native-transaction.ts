/**
 * A transaction for work the serving thread does besides requests (the usage counters' writes, seeding):
 * native statements (find, upsert, native insert, update and delete, raw SQL) and flushes only where
 * something changed, bound to a connection-level transaction. The ORM's `transactional` runs its callback inside an AsyncLocalStorage, and so does every
 * flush of its unit of work; on Node 20 the first store entered turns promise hooks on for the whole
 * process, which every request then pays for. Nothing here enters one.
 */
import type { EntityManager } from "@mikro-orm/postgresql";
import type { Store } from "./store.js";

/**
 * Runs `work` on a fresh entity manager inside one transaction, committed when it resolves and rolled
 * back when it throws. No flush runs at the end: what `work` persists it flushes itself (inside the
 * transaction), and only when there is something to write, as each flush enters an AsyncLocalStorage too.
 */
export async function inNativeTransaction<T>(store: Store, work: (em: EntityManager) => Promise<T>): Promise<T> {
  const em = store.fork();
  return em.getConnection("write").transactional(async (trx) => {
    em.setTransactionContext(trx);
    try {
      return await work(em);
    } finally {
      em.resetTransactionContext();
    }
  });
}
