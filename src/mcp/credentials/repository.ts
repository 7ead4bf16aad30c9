/**
 * Stored per-user credentials and their in-memory cache. Every credential is loaded at start and every
 * write goes to the database first and then to the cache, so the tool-call path reads the cache only and
 * never awaits the database. Writes are serialized: they are rare, and this keeps the unique
 * (client, identity) row and the cache in step without retry logic.
 */
import { randomUUID } from "node:crypto";
import { LockMode } from "@mikro-orm/core";
import { inNativeTransaction, McpUserCredentialRecord, saveRecord, writeRecord, type McpCredentialStatus, type McpIdentityKind, type Store } from "../../store/index.js";

/** A credential as the cache holds it. */
export interface StoredCredential {
  readonly id: string;
  readonly clientId: string;
  readonly identityKind: McpIdentityKind;
  readonly identityId: string;
  readonly values: Readonly<Record<string, string>>;
  readonly status: McpCredentialStatus;
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

/** What a write changes. */
export interface CredentialChange {
  values?: Record<string, string>;
  status?: McpCredentialStatus;
}

function cacheKey(clientId: string, kind: McpIdentityKind, identityId: string): string {
  return `${clientId}\u0000${kind}\u0000${identityId}`;
}

function fromRecord(rec: McpUserCredentialRecord): StoredCredential {
  return {
    id: rec.id,
    clientId: rec.clientId,
    identityKind: rec.identityKind,
    identityId: rec.identityId,
    values: { ...rec.values },
    status: rec.status,
    createdAt: rec.createdAt,
    updatedAt: rec.updatedAt,
  };
}

/** The credential table behind a write-through cache. */
export class CredentialRepository {
  private readonly byKey = new Map<string, StoredCredential>();
  private readonly byId = new Map<string, StoredCredential>();
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly store: Store,
    private readonly now: () => number,
  ) {}

  /** Loads every stored credential into the cache. */
  async load(): Promise<void> {
    const records = await this.store.fork().find(McpUserCredentialRecord, {});
    this.byKey.clear();
    this.byId.clear();
    for (const rec of records) this.cache(fromRecord(rec));
  }

  /** Reads one credential again (another node wrote it): the cache then holds the row as stored, or drops it when gone. */
  reload(id: string): Promise<void> {
    return this.serial(async () => {
      const rec = await this.store.fork().findOne(McpUserCredentialRecord, { id });
      const old = this.byId.get(id);
      if (old) this.uncache(old);
      if (!rec) return;
      // A (client, identity) slot holds one credential: a row replaced on another node leaves no stale twin here.
      const twin = this.find(rec.clientId, rec.identityKind, rec.identityId);
      if (twin) this.uncache(twin);
      this.cache(fromRecord(rec));
    });
  }

  /** The credential of (client, identity), from memory. */
  find(clientId: string, kind: McpIdentityKind, identityId: string): StoredCredential | undefined {
    return this.byKey.get(cacheKey(clientId, kind, identityId));
  }

  /** A credential by id, from memory. */
  get(id: string): StoredCredential | undefined {
    return this.byId.get(id);
  }

  /** Every cached credential. */
  all(): StoredCredential[] {
    return [...this.byId.values()];
  }

  /** Stores values for (client, identity) as active, replacing what was there. */
  save(clientId: string, kind: McpIdentityKind, identityId: string, values: Record<string, string>): Promise<StoredCredential> {
    return this.serial(async () => {
      const em = this.store.fork();
      const existing = this.find(clientId, kind, identityId);
      const at = new Date(this.now());
      let rec = existing ? await em.findOne(McpUserCredentialRecord, { id: existing.id }) : null;
      if (rec) {
        rec.values = { ...values };
        rec.headerKeys = Object.keys(values);
        rec.status = "active";
        rec.updatedAt = at;
      } else {
        rec = em.create(McpUserCredentialRecord, {
          id: randomUUID(),
          clientId,
          identityKind: kind,
          identityId,
          values: { ...values },
          headerKeys: Object.keys(values),
          status: "active",
          createdAt: at,
          updatedAt: at,
        });
      }
      await saveRecord(em, rec);
      if (existing) this.uncache(existing);
      const stored = fromRecord(rec);
      this.cache(stored);
      return stored;
    });
  }

  /** Applies status and value changes to several credentials at once (transitions). */
  update(changes: ReadonlyMap<string, CredentialChange>): Promise<void> {
    if (changes.size === 0) return Promise.resolve();
    return this.serial(async () => {
      // All or none, as one flush wrote them: the cache takes them only once every row is written.
      const records = await inNativeTransaction(this.store, async (em) => {
        const found = await em.find(McpUserCredentialRecord, { id: { $in: [...changes.keys()] } });
        const at = new Date(this.now());
        for (const rec of found) {
          const change = changes.get(rec.id);
          if (!change) continue;
          if (change.values !== undefined) {
            rec.values = { ...change.values };
            rec.headerKeys = Object.keys(change.values);
          }
          if (change.status !== undefined) rec.status = change.status;
          rec.updatedAt = at;
          await writeRecord(em, rec);
        }
        return found;
      });
      for (const rec of records) {
        const old = this.byId.get(rec.id);
        if (old) this.uncache(old);
        this.cache(fromRecord(rec));
      }
    });
  }

  /**
   * Runs `work` on a credential as stored, under its row lock (SELECT ... FOR UPDATE, so instances sharing
   * a PostgreSQL database take turns), and writes the change it returns; the cache then holds the row as
   * committed, which may be another instance's newer write. Not serialized with the other writes: `work`
   * may wait on the network, and only this credential's row is held meanwhile.
   */
  async withRowLock(id: string, work: (stored: StoredCredential) => Promise<CredentialChange | null>): Promise<StoredCredential | undefined> {
    const rec = await inNativeTransaction(this.store, async (tx) => {
      const row = await tx.findOne(McpUserCredentialRecord, { id }, { lockMode: LockMode.PESSIMISTIC_WRITE });
      if (!row) return null;
      const change = await work(fromRecord(row));
      if (change?.values !== undefined) {
        row.values = { ...change.values };
        row.headerKeys = Object.keys(change.values);
      }
      if (change?.status !== undefined) row.status = change.status;
      if (change) {
        row.updatedAt = new Date(this.now());
        await writeRecord(tx, row);
      }
      return row;
    });
    const old = this.byId.get(id);
    if (old) this.uncache(old);
    if (!rec) return undefined;
    const stored = fromRecord(rec);
    this.cache(stored);
    return stored;
  }

  /** Deletes credentials by id. */
  remove(ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return Promise.resolve();
    return this.serial(async () => {
      await this.store.fork().nativeDelete(McpUserCredentialRecord, { id: { $in: [...ids] } });
      for (const id of ids) {
        const old = this.byId.get(id);
        if (old) this.uncache(old);
      }
    });
  }

  private cache(cred: StoredCredential): void {
    this.byKey.set(cacheKey(cred.clientId, cred.identityKind, cred.identityId), cred);
    this.byId.set(cred.id, cred);
  }

  private uncache(cred: StoredCredential): void {
    this.byKey.delete(cacheKey(cred.clientId, cred.identityKind, cred.identityId));
    this.byId.delete(cred.id);
  }

  private serial<T>(work: () => Promise<T>): Promise<T> {
    const run = this.queue.then(work);
    this.queue = run.catch(() => undefined);
    return run;
  }
}
