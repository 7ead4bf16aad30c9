/**
 * The embedded default database: PGlite with its files in the data directory, served over a unix
 * socket there, so MikroORM talks to it exactly as it talks to a real PostgreSQL server.
 */
import { execFile } from "node:child_process";
import { createConnection } from "node:net";
import { mkdir, readdir, rename, rm, rmdir, stat, unlink } from "node:fs/promises";
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
  if (!(await exists(join(pgliteDir, "PG_VERSION")))) await createDatabase(pgliteDir, logger);
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

const INITDB_TIMEOUT_MS = 120_000;

/**
 * Creates the cluster beside `pgliteDir` and moves it into place only when it is complete, so a first
 * start that is interrupted leaves no half-made database behind: the next start begins again.
 */
async function createDatabase(pgliteDir: string, logger: Logger): Promise<void> {
  const present = await readdir(pgliteDir).catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT") return [];
    throw err;
  });
  if (present.length > 0) {
    throw new GatewayError(
      "failed_precondition",
      `could not create the embedded database in ${pgliteDir}: it holds files but no database (no PG_VERSION); move them away or use another --data-dir / GW_DATA_DIR`,
    );
  }
  const building = `${pgliteDir}.initdb`;
  // What an interrupted first start left.
  await rm(building, { recursive: true, force: true });
  await mkdir(building, { recursive: true, mode: 0o700 });
  try {
    await initialiseInChildProcess(building, logger);
  } catch (err) {
    await rm(building, { recursive: true, force: true });
    throw err;
  }
  await rmdir(pgliteDir).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== "ENOENT") throw err;
  });
  await rename(building, pgliteDir);
}

// Run by `node --input-type=module -e`: argv[1] is PGlite's module URL, argv[2] the directory.
// Its stderr is one line naming the failure (Emscripten's errors have no message, only an errno).
const INITDB_SCRIPT = `try {
  const { PGlite } = await import(process.argv[1]);
  const db = await PGlite.create({ dataDir: process.argv[2] });
  await db.close();
} catch (err) {
  process.stderr.write(err instanceof Error && err.message ? err.message : JSON.stringify(err));
  process.exitCode = 1;
}`;

/**
 * Creates a new cluster in `dir` in a short-lived child process. PGlite's initdb runs in a
 * WebAssembly instance of its own whose memory the process never returns: done in the gateway's
 * process it leaves it about 500 MiB larger for its whole life (about 950 MiB against 300 MiB when
 * opening an existing directory, measured on PGlite 0.5). The child exits, so that memory goes with it.
 */
async function initialiseInChildProcess(dir: string, logger: Logger): Promise<void> {
  logger.info({ dir }, "creating the embedded database (first start)");
  const pglite = import.meta.resolve("@electric-sql/pglite");
  await new Promise<void>((resolve, reject) => {
    execFile(
      process.execPath,
      ["--input-type=module", "-e", INITDB_SCRIPT, pglite, dir],
      { timeout: INITDB_TIMEOUT_MS, maxBuffer: 1 << 20 },
      (err, _stdout, stderr) => {
        if (!err) return resolve();
        const detail = err.killed ? `initdb did not finish within ${INITDB_TIMEOUT_MS / 1000} s` : stderr.trim() || err.message;
        reject(new GatewayError("unavailable", `could not create the embedded database in ${dir}: ${detail}`, { cause: err }));
      },
    );
  });
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

/**
 * A socket file left by a crashed process blocks listen(); remove it, but refuse to start when a
 * live server answers there, because two PGlite instances on one directory corrupt it.
 */
async function removeStaleSocket(socketPath: string): Promise<void> {
  if (!(await exists(socketPath))) return;
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
