/**
 * Keeps MikroORM's AsyncLocalStorage scopes from taxing every request.
 *
 * MikroORM runs its transaction, flush and raw-fragment scopes in AsyncLocalStorage. On Node 20 and 22
 * an enabled AsyncLocalStorage installs promise hooks for the whole process, and it stays enabled until
 * disable() is called, which MikroORM never does. So after the first query every promise of every
 * /v1 request pays for context propagation, though the hot path never touches the database (a
 * noticeable share of the gateway's CPU per request).
 *
 * This module notes each storage that MikroORM enables and disables them again while the ORM is idle
 * (no connection in use or awaited); the ORM's next call enables them again by itself, since
 * AsyncLocalStorage.run() does. Storages of other libraries are never touched. Node versions whose
 * AsyncLocalStorage needs no hooks (async context frames, Node 24) have no `_enable` and are left alone.
 *
 * A storage is MikroORM's when the call that enables it comes from MikroORM's files, or, in the bundle
 * `npm run build` makes (where every frame is in dist/), when the build marked it (ORM_ASYNC_CONTEXT_KEY).
 */
import { AsyncLocalStorage } from "node:async_hooks";

type Storage = AsyncLocalStorage<unknown>;
/** Node's internal per-instance switch: AsyncLocalStorage.run() calls it before every run. */
type EnableHook = (this: Storage & { enabled?: boolean }) => void;

const ormStorages = new Set<Storage>();
const ORM_FRAME = /[\\/]@mikro-orm[\\/]/;

/** The Symbol.for() key of the property the bundle build sets to true on each storage MikroORM creates. */
export const ORM_ASYNC_CONTEXT_KEY = "gw.orm-async-context";
const ORM_MARK = Symbol.for(ORM_ASYNC_CONTEXT_KEY);

/** Whether the storage being enabled is MikroORM's: marked by the build, or enabled from MikroORM's files. */
function isOrmStorage(storage: Storage): boolean {
  return (storage as unknown as Record<symbol, unknown>)[ORM_MARK] === true || ORM_FRAME.test(new Error().stack ?? "");
}
let tracking: boolean | undefined;

/**
 * Starts noting the storages MikroORM enables; false when this Node has no hook-based
 * AsyncLocalStorage (nothing to do). Idempotent.
 */
export function trackOrmAsyncContexts(): boolean {
  if (tracking !== undefined) return tracking;
  const proto = AsyncLocalStorage.prototype as unknown as { _enable?: EnableHook };
  const enable = proto._enable;
  tracking = typeof enable === "function";
  if (!tracking || enable === undefined) return false;
  proto._enable = function (this: Storage & { enabled?: boolean }) {
    // Only the enabling call (rare: once per burst of ORM work) pays for the stack check.
    if (this.enabled !== true && !ormStorages.has(this) && isOrmStorage(this)) ormStorages.add(this);
    enable.call(this);
  };
  return true;
}

/** Disables every storage MikroORM enabled; call it only while no ORM operation is in flight. */
export function quiesceOrmAsyncContexts(): void {
  for (const storage of ormStorages) storage.disable();
}
