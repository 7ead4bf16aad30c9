/**
 * Provider key backoffs every node shares (table provider_key_backoff): one row per key with the time
 * until which its upstream asked it to wait. A write notifies the other nodes, which read the row back.
 */
import type { Store } from "./store.js";

/** One stored backoff. */
export interface StoredKeyBackoff {
  provider: string;
  keyId: string;
  untilMs: number;
}

/** The row id of a provider's key (JSON, so no provider or key name can make two keys collide). */
export function keyBackoffRowId(provider: string, keyId: string): string {
  return JSON.stringify([provider, keyId]);
}

function fromRow(row: Record<string, unknown>): StoredKeyBackoff {
  return { provider: String(row["provider"]), keyId: String(row["key_id"]), untilMs: Number(row["until_at"]) };
}

/** The provider_key_backoff table. */
export class KeyBackoffTable {
  readonly #store: Store;

  constructor(store: Store) {
    this.#store = store;
  }

  /** Stores a backoff; a later one already stored stays. */
  async publish(backoff: StoredKeyBackoff): Promise<void> {
    await this.#store
      .fork()
      .getConnection()
      .execute(
        `insert into provider_key_backoff (id, provider, key_id, until_at) values (?, ?, ?, ?)
         on conflict (id) do update set until_at = excluded.until_at where provider_key_backoff.until_at < excluded.until_at`,
        [keyBackoffRowId(backoff.provider, backoff.keyId), backoff.provider, backoff.keyId, Math.round(backoff.untilMs)],
      );
  }

  /** The backoff of a row id a notification named, or null when the row is gone. */
  async read(id: string): Promise<StoredKeyBackoff | null> {
    const rows = await this.#store.fork().getConnection().execute<Array<Record<string, unknown>>>("select provider, key_id, until_at from provider_key_backoff where id = ?", [id]);
    const row = rows[0];
    return row === undefined ? null : fromRow(row);
  }

  /** Every backoff that has not ended at `now`. */
  async active(now: number): Promise<StoredKeyBackoff[]> {
    const rows = await this.#store.fork().getConnection().execute<Array<Record<string, unknown>>>("select provider, key_id, until_at from provider_key_backoff where until_at > ?", [Math.round(now)]);
    return rows.map(fromRow);
  }
}
