/**
 * A transaction for work the serving thread does besides requests (the usage counters' writes, seeding):
 * native statements (find, upsert, native insert, update and delete, raw SQL), never a flush, bound to a
 * connection-level transaction. The ORM's `transactional` runs its callback inside an AsyncLocalStorage, and
 * so does every flush of its unit of work; on Node 20 the first store entered turns promise hooks on for the
 * whole process, which every request then pays for. Nothing here enters one.
 */
import { FlushMode, wrap } from "@mikro-orm/core";
import type { EntityManager } from "@mikro-orm/postgresql";
import type { Store } from "./store.js";

/**
 * Writes one record, new (from `em.create`) or loaded and assigned, with a native upsert on its primary key,
 * and leaves it managed as written, so no flush is needed for it: a flush would enter the AsyncLocalStorage.
 * The mapping's `onCreate` (a new record) or `onUpdate` (a loaded one) defaults are filled first, as a flush
 * would. For flat records only (no relations: nothing cascades).
 */
export async function writeRecord(em: EntityManager, record: object): Promise<void> {
  const isNew = !wrap(record).isManaged();
  const fields = record as Record<string, unknown>;
  for (const prop of em.getMetadata().get(record.constructor.name).props) {
    const fill = isNew ? prop.onCreate : prop.onUpdate;
    if (fill !== undefined && (!isNew || fields[prop.name] === undefined || fields[prop.name] === null)) fields[prop.name] = fill(record, em);
  }
  await em.upsert(record);
}

/**
 * Runs `work` on a fresh entity manager inside one transaction, committed when it resolves and rolled
 * back when it throws. No flush runs at the end: what `work` persists it writes itself (inside the
 * transaction), natively (`writeRecord`), as each flush enters an AsyncLocalStorage too.
 */
export async function inNativeTransaction<T>(store: Store, work: (em: EntityManager) => Promise<T>): Promise<T> {
  // A query must not flush what `em.create` queued (the ORM's default): `writeRecord` has written it already.
  const em = store.fork({ flushMode: FlushMode.COMMIT });
  return em.getConnection("write").transactional(async (trx) => {
    em.setTransactionContext(trx);
    try {
      return await work(em);
    } finally {
      em.resetTransactionContext();
    }
  });
}
