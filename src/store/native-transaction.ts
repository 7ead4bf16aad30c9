/**
 * Writes without the ORM's flush, for everything the gateway stores while it serves (admin API writes,
 * sign-ins, MCP credentials, the usage counters, seeding): native statements (find, insert, upsert, update
 * and delete, raw SQL), one record at a time, in a connection-level transaction when several go together.
 * The ORM's `transactional` runs its callback inside an AsyncLocalStorage, and so does every flush of its unit
 * of work; on Node 20 the first store entered turns promise hooks on for the whole process, which every
 * request then pays for. Nothing here enters one.
 */
import { wrap } from "@mikro-orm/core";
import type { EntityManager } from "@mikro-orm/postgresql";
import type { Store } from "./store.js";

/**
 * Fills a record's mapped `onCreate` (a new record) or `onUpdate` (a loaded one) defaults, as a flush would:
 * a new record's only where it holds no value.
 */
function fillDefaults(em: EntityManager, record: object, isNew: boolean): void {
  const fields = record as Record<string, unknown>;
  for (const prop of em.getMetadata().get(record.constructor.name).props) {
    const fill = isNew ? prop.onCreate : prop.onUpdate;
    if (fill !== undefined && (!isNew || fields[prop.name] === undefined || fields[prop.name] === null)) fields[prop.name] = fill(record, em);
  }
}

/**
 * Writes one record, new (from `em.create`) or loaded and assigned, with a native upsert on its primary key
 * (a loaded one only when something changed), its defaults filled first (`fillDefaults`), and leaves it
 * managed as written, so no flush is needed for it. For flat records only (no relations: nothing cascades).
 */
export async function writeRecord(em: EntityManager, record: object): Promise<void> {
  const isNew = !wrap(record).isManaged();
  // As a flush: a loaded record that nothing changed is not written, nor its `onUpdate` time moved.
  if (!isNew && !changedSinceLoad(em, record)) return;
  fillDefaults(em, record, isNew);
  await em.upsert(record);
}

/** Whether a loaded record differs from the snapshot the unit of work took when it was read. */
function changedSinceLoad(em: EntityManager, record: object): boolean {
  const original = em.getUnitOfWork().getOriginalEntityData(record);
  if (original === undefined) return true;
  const comparator = em.getComparator();
  return Object.keys(comparator.diffEntities(record.constructor.name, original, comparator.prepareEntity(record))).length > 0;
}

/**
 * Inserts one new record (from `em.create`) with a native INSERT, its `onCreate` defaults filled first. Unlike
 * `writeRecord`, a row already holding its primary key is not overwritten: the insert fails as a unique
 * violation, as a flush's would, so that of two nodes creating the same id at once one is refused.
 */
export async function insertRecord(em: EntityManager, record: object): Promise<void> {
  fillDefaults(em, record, true);
  await em.insert(record);
}

/** Writes one record as a flush would: a new one (from `em.create`) inserted, a loaded one written over its row. */
export async function saveRecord(em: EntityManager, record: object): Promise<void> {
  if (wrap(record).isManaged()) await writeRecord(em, record);
  else await insertRecord(em, record);
}

/** Deletes one record's row by its primary key with a native DELETE. */
export async function deleteRecord(em: EntityManager, record: object): Promise<void> {
  const meta = em.getMetadata().get(record.constructor.name);
  const fields = record as Record<string, unknown>;
  const where: Record<string, unknown> = {};
  for (const key of meta.primaryKeys) where[key] = fields[key];
  await em.nativeDelete(meta.className, where);
}

/**
 * Runs `work` on a fresh entity manager inside one transaction, committed when it resolves and rolled
 * back when it throws. No flush runs at the end: what `work` persists it writes itself (inside the
 * transaction), natively (`insertRecord`, `writeRecord`, `deleteRecord`), as each flush enters an
 * AsyncLocalStorage too.
 */
export async function inNativeTransaction<T>(store: Store, work: (em: EntityManager) => Promise<T>): Promise<T> {
  // No query flushes first: the store's flush mode is COMMIT (orm-config.ts).
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
