/**
 * Surviving another schema being dropped while ours is migrated. MikroORM's migrator first lists every table
 * of every schema on the server and casts each name to regclass; a schema that someone else drops between the
 * listing and the cast fails that query with "schema ... does not exist" though nothing of ours is wrong.
 * Servers shared by several gateways (or test runs), each in its own schema, meet this whenever one goes away.
 */
import { setTimeout as delay } from "node:timers/promises";

/** SQLSTATE invalid_schema_name. */
const PG_INVALID_SCHEMA_NAME = "3F000";
const MISSING_SCHEMA = /schema "([^"]+)" does not exist/;

/** How often a migration is tried in all when other schemas keep vanishing under it. */
export const MIGRATION_ATTEMPTS = 10;

/** True when `err` (or what it wraps) is PostgreSQL's "schema does not exist" for a schema other than `own`. */
export function isOtherSchemaDropped(err: unknown, own: string): boolean {
  for (let current = err, depth = 0; typeof current === "object" && current !== null && depth < 5; depth++) {
    const { code, message } = current as { code?: unknown; message?: unknown };
    if (code === PG_INVALID_SCHEMA_NAME && typeof message === "string") {
      const missing = MISSING_SCHEMA.exec(message)?.[1];
      return missing !== undefined && missing !== own;
    }
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/** Runs `work`, again (a few times at most) when it failed only because a schema other than `own` was dropped meanwhile. */
export async function retryWhenOtherSchemaDropped<T>(own: string, work: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (err) {
      if (attempt >= MIGRATION_ATTEMPTS || !isOtherSchemaDropped(err, own)) throw err;
      // A moment's pause, so that the next listing does not meet the same burst of drops (a test run ending).
      await delay(10 + Math.random() * 40);
    }
  }
}
