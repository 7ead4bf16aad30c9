/**
 * Which committed migrations a database has not applied, read straight from MikroORM's migrations table.
 * A restart usually finds none, and this one query then stands in for the migrator, whose own check
 * (creating its table if missing, listing what ran) is slow on the embedded database.
 */
import type { MikroORM } from "@mikro-orm/postgresql";
import { MIGRATION_NAMES } from "./migration-names.js";

/** The table MikroORM records applied migrations in (its default name, which the config keeps). */
const MIGRATIONS_TABLE = "mikro_orm_migrations";

/** The names of the committed migrations not recorded as applied in `schema` (all of them when the table is missing). */
export async function pendingMigrations(orm: MikroORM, schema: string | undefined): Promise<string[]> {
  const connection = orm.em.getConnection();
  const table = schema === undefined ? MIGRATIONS_TABLE : `"${schema}".${MIGRATIONS_TABLE}`;
  // to_regclass answers null for a table that does not exist, where selecting from it would fail.
  const [found] = await connection.execute<{ present: boolean }[]>(`select to_regclass(?) is not null as present`, [table]);
  if (found?.present !== true) return [...MIGRATION_NAMES];
  const rows = await connection.execute<{ name: string }[]>(`select name from ${table}`);
  const applied = new Set(rows.map((row) => row.name));
  return MIGRATION_NAMES.filter((name) => !applied.has(name));
}
