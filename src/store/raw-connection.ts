/**
 * A PostgreSQL connection of its own, outside the ORM's pool, for what must hold one session: an advisory
 * lock across migrations, or a LISTEN that lives as long as the node.
 */
import type { MikroORM } from "@mikro-orm/postgresql";

/** A notification as the `pg` driver delivers it. */
export interface PgNotification {
  channel: string;
  payload?: string;
}

/** The parts of the `pg` client a raw connection is used through. */
export interface RawConnection {
  query(sql: string, params?: unknown[]): Promise<{ rows: Record<string, unknown>[] }>;
  on(event: "notification", listener: (message: PgNotification) => void): void;
  on(event: "error", listener: (err: Error) => void): void;
  on(event: "end", listener: () => void): void;
  end(): Promise<void>;
}

/** The knex client method that dials a new connection with the pool's settings but outside it. */
interface RawDialer {
  acquireRawConnection(): Promise<RawConnection>;
}

/** Opens a new connection with the ORM's settings (host, user, TLS), not taken from or returned to its pool. */
export async function openRawConnection(orm: MikroORM, applicationName: string): Promise<RawConnection> {
  // knex types its client as any; acquireRawConnection is what its pool itself calls to dial.
  const dialer = orm.em.getConnection().getKnex().client as RawDialer;
  const conn = await dialer.acquireRawConnection();
  await conn.query("select set_config('application_name', $1, false)", [applicationName]);
  return conn;
}

/** Runs `work` while holding a session advisory lock named by `name` on a dedicated connection. */
export async function withAdvisoryLock<T>(orm: MikroORM, name: string, work: () => Promise<T>): Promise<T> {
  const conn = await openRawConnection(orm, "gw-lock");
  try {
    await conn.query("select pg_advisory_lock(hashtext($1))", [name]);
    try {
      return await work();
    } finally {
      await conn.query("select pg_advisory_unlock(hashtext($1))", [name]);
    }
  } finally {
    await conn.end().catch(() => undefined);
  }
}
