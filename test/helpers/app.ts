/**
 * Starts the real gateway for integration tests: port 0, a fresh data directory, the embedded database
 * by default or the PostgreSQL server named by GW_TEST_DATABASE_URL (each app in its own schema), and a
 * logger whose lines the test can read.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { createApp, type App, type AppOptions } from "../../src/app.js";
import { dropSchema } from "../../src/store/index.js";
import { createLogger } from "../../src/telemetry/logger.js";
import { seedEmbeddedDatabase } from "./pglite-template.js";

export interface TestApp extends App {
  readonly dataDir: string;
  /** Every log line written so far, raw JSON text. */
  readonly logLines: string[];
  /** Options to start the same app again on the same data (restart tests). */
  readonly restartOptions: TestAppOptions;
  /** Closes the app; with `keepData` the data directory and schema stay for a restart. */
  stop(opts?: { keepData?: boolean }): Promise<void>;
}

export type TestAppOptions = Partial<AppOptions> & { dataDir?: string; schema?: string };

/** The PostgreSQL server the suite runs against, when GW_TEST_DATABASE_URL is set. */
export const testDatabaseUrl = process.env["GW_TEST_DATABASE_URL"] || undefined;

/** Starts an app. */
export async function startApp(options: TestAppOptions = {}): Promise<TestApp> {
  let dataDir = options.dataDir;
  if (dataDir === undefined) {
    dataDir = await mkdtemp(join(tmpdir(), "gw-"));
    if (!testDatabaseUrl) await seedEmbeddedDatabase(dataDir);
  }
  const schema = options.schema ?? (testDatabaseUrl ? `t_${randomBytes(6).toString("hex")}` : undefined);
  const logLines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      logLines.push(...chunk.toString("utf8").split("\n").filter(Boolean));
      done();
    },
  });
  const logger = createLogger({ level: "debug", destination });
  const app = await createApp({
    port: 0,
    host: "127.0.0.1",
    logger,
    ...options,
    dataDir,
    ...(testDatabaseUrl ? { databaseUrl: testDatabaseUrl, databaseSchema: schema } : {}),
  });
  return Object.assign(Object.create(app) as App, app, {
    dataDir,
    logLines,
    restartOptions: { ...options, dataDir, ...(schema ? { schema } : {}) },
    async stop(opts: { keepData?: boolean } = {}) {
      await app.close();
      if (opts.keepData) return;
      if (testDatabaseUrl && schema) await dropSchema(testDatabaseUrl, schema);
      await rm(dataDir as string, { recursive: true, force: true });
    },
  });
}

/** JSON request helper against the app: returns status and parsed body. */
export async function api(
  app: { url: string },
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: any /* JSON of any shape; tests assert on it */ }> {
  const res = await fetch(`${app.url}${path}`, {
    method,
    headers: { ...(body !== undefined ? { "content-type": "application/json" } : {}), ...headers },
    ...(body !== undefined ? { body: typeof body === "string" ? body : JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    // Leave non-JSON bodies as text.
  }
  return { status: res.status, body: parsed };
}
