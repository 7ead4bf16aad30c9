/**
 * The migrator, loaded on demand: a database with every migration applied (every restart, and a first
 * start from the build's template) never needs it, and loading it with the migrations and their libraries
 * took a noticeable part of each start and kept its heap for good.
 */
import type { Migrator } from "@mikro-orm/migrations";
import type { MikroORM } from "@mikro-orm/postgresql";

/** The ORMs whose migrator is registered (or being registered): once per ORM however often it is asked for. */
const registered = new WeakMap<MikroORM, Promise<Migrator>>();

/** Registers the migrator on `orm`, with the committed migrations as its list (imported, not globbed: the bundled build has no migration files beside it). */
export function loadMigrator(orm: MikroORM): Promise<Migrator> {
  let migrator = registered.get(orm);
  if (migrator === undefined) {
    migrator = register(orm);
    registered.set(orm, migrator);
    // A failed load is tried again on the next call rather than remembered.
    migrator.catch(() => registered.delete(orm));
  }
  return migrator;
}

async function register(orm: MikroORM): Promise<Migrator> {
  const [{ Migrator: MigratorClass }, { MIGRATIONS }] = await Promise.all([import("@mikro-orm/migrations"), import("./migration-list.js")]);
  orm.config.set("migrations", { ...orm.config.get("migrations"), migrationsList: [...MIGRATIONS] });
  MigratorClass.register(orm);
  return orm.migrator as Migrator;
}
