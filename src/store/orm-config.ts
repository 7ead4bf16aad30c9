/**
 * The one MikroORM configuration, shared by openStore and the migration CLI so migrations are always
 * generated against exactly the mapping the app runs with.
 */
import { fileURLToPath } from "node:url";
import { FlushMode } from "@mikro-orm/core";
import { defineConfig, type Options } from "@mikro-orm/postgresql";
import { GatewayError } from "../errors.js";
import type { Logger } from "../telemetry/logger.js";
import type { ConnectionTarget } from "./connection-target.js";
import { ENTITY_SCHEMAS } from "./entities/index.js";
import { refuseUnstorableText } from "./unstorable-text.js";

/** Directory of the committed migration files, where the migration CLI writes new ones. */
export const MIGRATIONS_DIR = fileURLToPath(new URL("./migrations", import.meta.url));

const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** Rejects schema names that would need more than plain double quotes to be safe in SQL. */
export function validateSchemaName(schema: string): string {
  if (!SCHEMA_NAME.test(schema)) {
    throw new GatewayError("invalid_argument", `database schema "${schema}" must be letters, digits and _ (at most 63, not starting with a digit)`, {
      field: "schema",
    });
  }
  return schema;
}

/** A PostgreSQL connection as the pool hands it to `afterCreate` (the `pg` client). */
interface PoolConnection {
  query(sql: string, callback: (err: Error | null) => void): void;
}

/** Builds the MikroORM options for one store. */
export function createOrmConfig(options: {
  target: ConnectionTarget;
  embedded: boolean;
  schema?: string | undefined;
  /** Names this node's connections in pg_stat_activity and in the change notifications they cause. */
  applicationName?: string | undefined;
  logger: Logger;
}): Options {
  const { target, schema, logger } = options;
  const debug = logger.isLevelEnabled("debug");
  const pool: NonNullable<Options["pool"]> = options.embedded ? { min: 1, max: 1 } : {};
  const setup: string[] = [];
  // Migrations are written without a schema qualifier; search_path points them at ours.
  if (schema !== undefined) setup.push(`set search_path to "${schema}"`);
  // The change notifications carry the writer's application_name, so a node can skip its own changes.
  if (options.applicationName !== undefined) setup.push(`set application_name to '${options.applicationName.replace(/'/g, "''")}'`);
  if (setup.length > 0) {
    pool.afterCreate = (conn: PoolConnection, done: (err: Error | null, conn: PoolConnection) => void) => {
      conn.query(setup.join("; "), (err) => done(err, conn));
    };
  }
  return defineConfig({
    entities: ENTITY_SCHEMAS,
    host: target.host,
    port: target.port,
    user: target.user,
    ...(target.password === undefined ? {} : { password: target.password }),
    dbName: target.dbName,
    ...(schema === undefined ? {} : { schema }),
    ...(target.ssl === undefined ? {} : { driverOptions: { connection: { ssl: target.ssl } } }),
    pool,
    // Creating a missing database needs a second connection to the server's maintenance database,
    // which the single-connection embedded server refuses; operators create the database themselves.
    ensureDatabase: false,
    discovery: { disableDynamicFileAccess: true },
    // The migrator and the migrations themselves are loaded only when one is to run (loadMigrator), which
    // also gives it the migration list.
    migrations: {
      path: MIGRATIONS_DIR,
      pathTs: MIGRATIONS_DIR,
      emit: "ts",
      // Diffs are taken against a database migrated from the committed files, never a snapshot file.
      snapshot: false,
      transactional: true,
      allOrNothing: true,
    },
    // The gateway writes every record itself with native statements (native-transaction.ts) and never
    // flushes: a flush, and so a query's automatic one, runs inside an AsyncLocalStorage, which on Node 20
    // turns promise hooks on for every request after.
    flushMode: FlushMode.COMMIT,
    // A NUL in a value would cut the statement short and cost the connection: refused as bad input instead.
    onQuery: refuseUnstorableText,
    debug,
    colors: false,
    logger: (message: string) => logger.debug({ component: "mikro-orm" }, message),
  });
}
