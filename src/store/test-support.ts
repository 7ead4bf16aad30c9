/** Helpers for tests that share one PostgreSQL server and isolate each run in its own schema. */
import { randomBytes } from "node:crypto";
import { MikroORM } from "@mikro-orm/postgresql";
import { parseDatabaseUrl } from "./connection-target.js";
import { validateSchemaName } from "./orm-config.js";

/** A schema name no other run uses, e.g. `t_1a2b3c4d5e6f`. */
export function randomSchemaName(): string {
  return `t_${randomBytes(6).toString("hex")}`;
}

/** Drops `schema` and everything in it from the server at `url`; a missing schema is fine. */
export async function dropSchema(url: string, schema: string): Promise<void> {
  validateSchemaName(schema);
  const target = parseDatabaseUrl(url);
  const orm = await MikroORM.init({
    entities: [],
    discovery: { warnWhenNoEntities: false },
    host: target.host,
    port: target.port,
    user: target.user,
    ...(target.password === undefined ? {} : { password: target.password }),
    dbName: target.dbName,
    ...(target.ssl === undefined ? {} : { driverOptions: { connection: { ssl: target.ssl } } }),
    pool: { min: 0, max: 1 },
    ensureDatabase: false,
    debug: false,
  });
  try {
    await orm.em.getConnection().execute(`drop schema if exists "${schema}" cascade`);
  } finally {
    await orm.close(true);
  }
}
