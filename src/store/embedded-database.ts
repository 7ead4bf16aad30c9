/**
 * The embedded default database: PGlite with its files in the data directory, served over a unix
 * socket there, so MikroORM talks to it exactly as it talks to a real PostgreSQL server.
 */
import { createConnection } from "node:net";
import { mkdir, stat, unlink } from "node:fs/promises";
import { join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { PGLiteSocketServer } from "@electric-sql/pglite-socket";
import { GatewayError } from "../errors.js";
import type { Logger } from "../telemetry/logger.js";
import type { ConnectionTarget } from "./connection-target.js";

// libpq's naming: a client given host=<dir> and port=5432 connects to <dir>/.s.PGSQL.5432.
const SOCKET_PORT = 5432;
const SOCKET_NAME = `.s.PGSQL.${SOCKET_PORT}`;
// sun_path holds 108 bytes on Linux, 104 on macOS, including the terminating NUL.
const MAX_SOCKET_PATH = 103;

/** A running embedded database and how to reach it. */
export interface EmbeddedDatabase {
  readonly target: ConnectionTarget;
  /** Stops the socket server, then closes PGlite (flushing its files). */
  close(): Promise<void>;
}

/** Starts PGlite on `<dataDir>/pglite` and serves it on `<dataDir>/.s.PGSQL.5432`. */
export async function startEmbeddedDatabase(dataDir: string, logger: Logger): Promise<EmbeddedDatabase> {
  const socketPath = join(dataDir, SOCKET_NAME);
  if (Buffer.byteLength(socketPath) > MAX_SOCKET_PATH) {
    throw new GatewayError(
      "invalid_argument",
      `the data directory path is too long for the embedded database's unix socket (${socketPath}); use a shorter --data-dir / GW_DATA_DIR`,
      { field: "data_dir" },
    );
  }
  await removeStaleSocket(socketPath);
  const pgliteDir = join(dataDir, "pglite");
  await mkdir(pgliteDir, { recursive: true, mode: 0o700 });
  const db = await PGlite.create({ dataDir: pgliteDir });
  // The ORM pool holds one connection; the second slot only absorbs a reconnect racing the old
  // socket's close. pglite-socket serialises queries and keeps a transaction to its own connection.
  const server = new PGLiteSocketServer({ db, path: socketPath, maxConnections: 2 });
  try {
    await server.start();
  } catch (err) {
    await db.close();
    throw err;
  }
  logger.info({ dataDir, socket: socketPath }, "embedded PostgreSQL (PGlite) started");
  let closed: Promise<void> | undefined;
  return {
    target: { host: dataDir, port: SOCKET_PORT, user: "postgres", dbName: "postgres" },
    close() {
      closed ??= (async () => {
        await server.stop();
        await db.close();
        await unlink(socketPath).catch(() => undefined);
      })();
      return closed;
    },
  };
}

/**
 * A socket file left by a crashed process blocks listen(); remove it, but refuse to start when a
 * live server answers there, because two PGlite instances on one directory corrupt it.
 */
async function removeStaleSocket(socketPath: string): Promise<void> {
  const exists = await stat(socketPath).then(
    () => true,
    () => false,
  );
  if (!exists) return;
  const live = await new Promise<boolean>((resolve) => {
    const probe = createConnection(socketPath);
    probe.once("connect", () => {
      probe.destroy();
      resolve(true);
    });
    probe.once("error", () => resolve(false));
  });
  if (live) {
    throw new GatewayError(
      "failed_precondition",
      `another process is serving the embedded database at ${socketPath}; stop it or use a different --data-dir`,
    );
  }
  await unlink(socketPath);
}
