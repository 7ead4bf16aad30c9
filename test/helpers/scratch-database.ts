/**
 * A database of its own on the PostgreSQL server, for tests that run the gateway as a child process (which
 * takes a database URL, not a schema) and must not see other runs' data; and a one-off query for tests that
 * read the server behind the gateway's back.
 */
import { randomBytes } from "node:crypto";
import { MikroORM } from "@mikro-orm/postgresql";
import { parseDatabaseUrl } from "../../src/store/index.js";

/** A database created for one test. */
export interface ScratchDatabase {
  /** The URL of the new database on the same server. */
  readonly url: string;
  /** Drops it, ending any session still connected. */
  drop(): Promise<void>;
}

async function onServer<T>(url: string, run: (execute: (sql: string) => Promise<unknown>) => Promise<T>): Promise<T> {
  const target = parseDatabaseUrl(url);
  const orm = await MikroORM.init({
    entities: [],
    discovery: { warnWhenNoEntities: false },
    host: target.host,
    port: target.port,
    user: target.user,
    ...(target.password === undefined ? {} : { password: target.password }),
    dbName: target.dbName,
    pool: { min: 0, max: 1 },
    ensureDatabase: false,
    debug: false,
  });
  try {
    return await run((sql) => orm.em.getConnection().execute(sql));
  } finally {
    await orm.close(true);
  }
}

/** Runs one SQL statement on the database `url` names, over a connection of its own, and returns the rows. */
export function queryDatabase<T>(url: string, sql: string): Promise<T[]> {
  return onServer(url, (execute) => execute(sql) as Promise<T[]>);
}

/** Creates an empty database next to the one `serverUrl` names. */
export async function createScratchDatabase(serverUrl: string): Promise<ScratchDatabase> {
  const name = `gw_scratch_${randomBytes(6).toString("hex")}`;
  await onServer(serverUrl, (execute) => execute(`create database "${name}"`));
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      await onServer(serverUrl, (execute) => execute(`drop database if exists "${name}" with (force)`));
    },
  };
}
