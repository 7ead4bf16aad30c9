/**
 * Opening and closing the database: the embedded PGlite or a real server, the encryption key for
 * secret columns, and pending migrations, behind one handle the app keeps for its lifetime.
 */
import { randomUUID } from "node:crypto";
import { mkdir } from "node:fs/promises";
import { resolve } from "node:path";
import type { ForkOptions } from "@mikro-orm/core";
import { MikroORM, type EntityManager } from "@mikro-orm/postgresql";
import { GatewayError } from "../errors.js";
import type { Logger } from "../telemetry/logger.js";
import { parseDatabaseUrl, type ConnectionTarget } from "./connection-target.js";
import { startEmbeddedDatabase, type EmbeddedDatabase } from "./embedded-database.js";
import { registerSecretBox } from "./encrypted-json-type.js";
import { resolveEncryptionKey } from "./encryption-key.js";
import { verifyEncryptionKey } from "./key-check.js";
import { withAdvisoryLock } from "./raw-connection.js";
import { loadMigrator } from "./migrator.js";
import { createOrmConfig, validateSchemaName } from "./orm-config.js";
import { pendingMigrations } from "./pending-migrations.js";
import { retryWhenOtherSchemaDropped } from "./schema-dropped-elsewhere.js";
import { SecretBox } from "./secret-box.js";

export interface StoreOptions {
  /** Holds the embedded database, its socket and a generated encryption key. */
  dataDir: string;
  /** postgres://user@host:port/db -> a real server; absent -> embedded PGlite. */
  url?: string;
  /** PostgreSQL schema to use, created if missing (tests isolate runs with it). */
  schema?: string;
  /** GW_ENCRYPTION_KEY: 64 hex chars or base64 of 32 bytes. */
  encryptionKey?: string;
  /** false for the embedded template, which must not carry a check value sealed with its throwaway key. */
  keyCheck?: boolean;
  logger: Logger;
}

export interface Store {
  readonly orm: MikroORM;
  readonly embedded: boolean;
  /** This process's id among the nodes sharing the database; its connections' application_name is `gw:<nodeId>`. */
  readonly nodeId: string;
  /** The schema the tables live in ("public" unless one was given). */
  readonly schema: string;
  /**
   * Runs `work` while no other node sharing the database runs work under the same name (a PostgreSQL
   * advisory lock); on the embedded database, which serves one node, it just runs it.
   */
  exclusive<T>(name: string, work: () => Promise<T>): Promise<T>;
  /** A fresh EntityManager: one unit of work per request (`options` as the ORM's `fork` takes them). */
  fork(options?: ForkOptions): EntityManager;
  /** Closes the ORM, the socket server and PGlite; idempotent. */
  close(): Promise<void>;
}

/** Connects (starting the embedded database when no url is given) and runs pending migrations. */
export async function openStore(options: StoreOptions): Promise<Store> {
  const logger = options.logger.child({ component: "store" });
  const dataDir = resolve(options.dataDir);
  const schema = options.schema === undefined ? undefined : validateSchemaName(options.schema);
  // Parse everything the caller gave before touching the disk, so bad input fails fast and clean.
  const urlTarget = options.url === undefined ? undefined : parseDatabaseUrl(options.url);
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const box = new SecretBox(await resolveEncryptionKey({ dataDir, encryptionKey: options.encryptionKey, logger }));

  let embedded: EmbeddedDatabase | undefined;
  let target: ConnectionTarget;
  if (urlTarget === undefined) {
    embedded = await startEmbeddedDatabase(dataDir, logger);
    target = embedded.target;
  } else {
    target = urlTarget;
  }

  const nodeId = randomUUID();
  let orm: MikroORM | undefined;
  try {
    orm = await MikroORM.init(createOrmConfig({ target, embedded: embedded !== undefined, schema, applicationName: applicationNameOf(nodeId), logger }));
    registerSecretBox(orm.em.getPlatform(), box);
    const check = await orm.checkConnection();
    if (!check.ok) {
      throw new GatewayError(
        "unavailable",
        `cannot connect to the database ${target.dbName} at ${target.host}:${target.port} as ${target.user}: ${check.reason}`,
        { cause: check.error },
      );
    }
    const ready = orm;
    const migrate = async (): Promise<void> => {
      if (schema !== undefined) {
        await ready.em.getConnection().execute(`create schema if not exists "${schema}"`);
      }
      const migrator = await loadMigrator(ready);
      const applied = await retryWhenOtherSchemaDropped(schema ?? "public", () => migrator.up());
      if (applied.length > 0) logger.info({ migrations: applied.map((m) => m.name) }, "applied database migrations");
    };
    // A database with every migration applied needs neither the migrator nor the lock: nothing can un-apply one.
    if ((await pendingMigrations(ready, schema)).length > 0) {
      // Nodes started together would otherwise race to create the same tables. The embedded database has a
      // single connection and a single node, so it needs (and could take) no lock.
      if (embedded === undefined) await withAdvisoryLock(orm, `gw_migrations:${schema ?? "public"}`, migrate);
      else await migrate();
    }
    if (options.keyCheck !== false) await verifyEncryptionKey(orm.em.fork(), box);
  } catch (err) {
    await orm?.close(true).catch(() => undefined);
    await embedded?.close().catch(() => undefined);
    throw err;
  }

  const readyOrm = orm;
  let closing: Promise<void> | undefined;
  return {
    orm: readyOrm,
    embedded: embedded !== undefined,
    nodeId,
    schema: schema ?? "public",
    exclusive: (name, work) => (embedded === undefined ? withAdvisoryLock(readyOrm, `gw:${schema ?? "public"}:${name}`, work) : work()),
    fork: (options) => readyOrm.em.fork(options),
    close() {
      closing ??= (async () => {
        await readyOrm.close(true);
        await embedded?.close();
      })();
      return closing;
    },
  };
}

/** The application_name of a node's pooled connections. */
export function applicationNameOf(nodeId: string): string {
  return `gw:${nodeId}`;
}
