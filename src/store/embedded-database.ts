/**
 * The embedded default database: PGlite with its files in the data directory, served over a unix
 * socket there, so MikroORM talks to it exactly as it talks to a real PostgreSQL server.
 */
import { execFile } from "node:child_process";
import { createConnection } from "node:net";
import { copyFile, mkdir, readdir, rename, rm, rmdir, stat, unlink } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { PGlite } from "@electric-sql/pglite";
import { vector } from "@electric-sql/pglite-pgvector";
import { PGLiteSocketServer } from "@electric-sql/pglite-socket";
import { GatewayError } from "../errors.js";
import type { Logger } from "../telemetry/logger.js";
import type { ConnectionTarget } from "./connection-target.js";

// libpq's naming: a client given host=<dir> and port=5432 connects to <dir>/.s.PGSQL.5432.
const SOCKET_PORT = 5432;
const SOCKET_NAME = `.s.PGSQL.${SOCKET_PORT}`;
// sun_path holds 108 bytes on Linux, 104 on macOS, including the terminating NUL.
const MAX_SOCKET_PATH = 103;

/**
 * PostgreSQL settings for the embedded database, over PGlite's own defaults. Its shared_buffers default
 * of 128 MB lives in the WebAssembly heap, whose pages once touched stay resident, and PostgreSQL touches
 * all of them at start: at 8 MB the gateway's resident memory is much smaller, the configuration tables (a
 * few hundred rows) still fit in it many times over, and the tables that grow (the usage history, the
 * response cache when configured) are written and read off the request path.
 */
const SETTINGS = ["shared_buffers=8MB"];

/** PGlite's start parameters with SETTINGS added, for the gateway and for initdb alike. */
function startParams(): string[] {
  return [...PGlite.defaultStartParams, ...SETTINGS.flatMap((setting) => ["-c", setting])];
}

/** A running embedded database and how to reach it. */
export interface EmbeddedDatabase {
  readonly target: ConnectionTarget;
  /** Stops the socket server, then closes PGlite (flushing its files). */
  close(): Promise<void>;
}

/**
 * Where `npm run build` puts a migrated empty cluster (embedded-template.ts) for first starts to copy:
 * beside the bundle (dist/pglite-template). Run from source there is none, and a first start runs
 * initdb instead.
 */
export const DEFAULT_TEMPLATE_DIR = fileURLToPath(new URL("./pglite-template", import.meta.url));

/** Starts PGlite on `<dataDir>/pglite` and serves it on `<dataDir>/.s.PGSQL.5432`. */
export async function startEmbeddedDatabase(
  dataDir: string,
  logger: Logger,
  options: { templateDir?: string } = {},
): Promise<EmbeddedDatabase> {
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
  if (!(await exists(join(pgliteDir, "PG_VERSION")))) await createDatabase(pgliteDir, logger, options.templateDir ?? DEFAULT_TEMPLATE_DIR);
  // pgvector ships with PGlite as an extension: the semantic response cache's nearest-neighbour search.
  const db = await PGlite.create({ dataDir: pgliteDir, startParams: startParams(), extensions: { vector } });
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
 * Creates the cluster beside `pgliteDir`, by copying `templateDir` when it holds one (a copy is quick;
 * initdb is slow and takes a lot of memory) or else by running initdb, and moves
 * it into place only when it is complete, so a first start that is interrupted leaves no half-made
 * database behind: the next start begins again.
 */
async function createDatabase(pgliteDir: string, logger: Logger, templateDir: string): Promise<void> {
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
    if (await exists(join(templateDir, "PG_VERSION"))) {
      logger.info({ dir: pgliteDir, template: templateDir }, "creating the embedded database from the build's template (first start)");
      await copyContents(templateDir, building);
    } else {
      await initialiseInChildProcess(building, logger);
    }
  } catch (err) {
    await rm(building, { recursive: true, force: true });
    throw err;
  }
  await rmdir(pgliteDir).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== "ENOENT") throw err;
  });
  await rename(building, pgliteDir);
}

// Run by `node --input-type=module -e`: argv[1] is PGlite's module URL, argv[2] the directory, argv[3]
// the start parameters as JSON. Its stderr is one line naming the failure (Emscripten's errors have no
// message, only an errno).
const INITDB_SCRIPT = `try {
  const { PGlite } = await import(process.argv[1]);
  const db = await PGlite.create({ dataDir: process.argv[2], startParams: JSON.parse(process.argv[3]) });
  await db.close();
} catch (err) {
  process.stderr.write(err instanceof Error && err.message ? err.message : JSON.stringify(err));
  process.exitCode = 1;
}`;

/**
 * Creates a new cluster in `dir` in a short-lived child process. PGlite's initdb runs in a
 * WebAssembly instance of its own whose memory the process never returns: done in the gateway's
 * process it leaves it far larger for its whole life than opening an existing directory does. The
 * child exits, so that memory goes with it.
 */
async function initialiseInChildProcess(dir: string, logger: Logger): Promise<void> {
  logger.info({ dir }, "creating the embedded database (first start)");
  const pglite = import.meta.resolve("@electric-sql/pglite");
  await new Promise<void>((resolve, reject) => {
    execFile(
      process.execPath,
      ["--input-type=module", "-e", INITDB_SCRIPT, pglite, dir, JSON.stringify(startParams())],
      { timeout: INITDB_TIMEOUT_MS, maxBuffer: 1 << 20 },
      (err, _stdout, stderr) => {
        if (!err) return resolve();
        const detail = err.killed ? `initdb did not finish within ${INITDB_TIMEOUT_MS / 1000} s` : stderr.trim() || err.message;
        reject(new GatewayError("unavailable", `could not create the embedded database in ${dir}: ${detail}`, { cause: err }));
      },
    );
  });
}

/**
 * Copies the files and folders in `from` into the existing folder `to`, all at once: fs.cp, which copies
 * one entry after another with a stat of each, was many times slower on the template's many files.
 */
export async function copyContents(from: string, to: string): Promise<void> {
  const entries = await readdir(from, { withFileTypes: true });
  // Settled, not all: a failure must wait for the copies still running, or the caller's clean-up races them.
  const copies = await Promise.allSettled(
    entries.map(async (entry) => {
      const source = join(from, entry.name);
      const target = join(to, entry.name);
      if (entry.isFile()) return copyFile(source, target);
      if (!entry.isDirectory()) throw new GatewayError("failed_precondition", `the embedded database template holds ${source}, which is neither a file nor a folder`);
      await mkdir(target, { mode: 0o700 });
      await copyContents(source, target);
    }),
  );
  const failed = copies.find((copy): copy is PromiseRejectedResult => copy.status === "rejected");
  if (failed !== undefined) throw failed.reason;
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
