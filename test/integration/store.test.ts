/**
 * The store against a real database: the embedded PGlite by default, or the PostgreSQL server named by
 * GW_TEST_DATABASE_URL with every store in its own random schema.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { after, describe, test } from "node:test";
import { GatewayError } from "../../src/errors.js";
import {
  AdminSessionRecord,
  McpClientRecord,
  SettingRecord,
  dropSchema,
  isUniqueViolation,
  openStore,
  pendingMigrations,
  randomSchemaName,
  type Store,
} from "../../src/store/index.js";
import { MIGRATION_ATTEMPTS, isOtherSchemaDropped, retryWhenOtherSchemaDropped } from "../../src/store/schema-dropped-elsewhere.js";
import { createLogger } from "../../src/telemetry/logger.js";

const serverUrl = process.env["GW_TEST_DATABASE_URL"] || undefined;

/** Everything a test created, removed once the file's tests are done. */
const dataDirs: string[] = [];
const schemas: string[] = [];
const openStores: Store[] = [];

after(async () => {
  for (const store of openStores) await store.close();
  for (const schema of schemas) if (serverUrl) await dropSchema(serverUrl, schema);
  for (const dir of dataDirs) await rm(dir, { recursive: true, force: true });
});

/** A data directory plus, on a server, a schema: the identity of one database. */
interface Place {
  dataDir: string;
  schema?: string;
}

async function newPlace(): Promise<Place> {
  const dataDir = await mkdtemp(join(tmpdir(), "gw-store-"));
  dataDirs.push(dataDir);
  if (!serverUrl) return { dataDir };
  const schema = randomSchemaName();
  schemas.push(schema);
  return { dataDir, schema };
}

function capturingLogger(): { logger: ReturnType<typeof createLogger>; lines: () => Array<Record<string, unknown>> } {
  const raw: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      raw.push(...chunk.toString("utf8").split("\n").filter(Boolean));
      done();
    },
  });
  return {
    logger: createLogger({ level: "info", destination }),
    lines: () => raw.map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}

async function open(place: Place, extra: { encryptionKey?: string; logger?: ReturnType<typeof createLogger> } = {}): Promise<Store> {
  const store = await openStore({
    dataDir: place.dataDir,
    logger: extra.logger ?? createLogger({ level: "silent" }),
    ...(serverUrl ? { url: serverUrl } : {}),
    ...(place.schema ? { schema: place.schema } : {}),
    ...(extra.encryptionKey ? { encryptionKey: extra.encryptionKey } : {}),
  });
  openStores.push(store);
  return store;
}

function newKey(): string {
  return randomBytes(32).toString("hex");
}

async function addClient(store: Store, name: string, headers: Record<string, string> = {}): Promise<string> {
  const em = store.fork();
  const client = em.create(McpClientRecord, {
    name,
    connectionType: "http",
    connectionString: "http://127.0.0.1:1/mcp",
    authType: "headers",
    headers,
  });
  await em.flush();
  return client.id;
}

async function rawHeaders(store: Store, id: string): Promise<string> {
  const rows = await store.fork().getConnection().execute<Array<{ headers: string }>>(
    "select headers from mcp_client where id = ?",
    [id],
  );
  const row = rows[0];
  assert.ok(row, "the client row exists");
  return row.headers;
}

describe(`store on ${serverUrl ? "a PostgreSQL server" : "embedded PGlite"}`, () => {
  test("persists a client across close and reopen of the same data directory", async () => {
    const place = await newPlace();
    const key = newKey();
    const first = await open(place, { encryptionKey: key });
    const id = await addClient(first, "persisted", { "X-Api-Key": "k1" });
    await first.close();

    const second = await open(place, { encryptionKey: key });
    const loaded = await second.fork().findOneOrFail(McpClientRecord, { id });
    assert.equal(loaded.name, "persisted");
    assert.deepEqual(loaded.headers, { "X-Api-Key": "k1" });
    assert.equal(loaded.toolSyncInterval, 0);
    assert.equal(loaded.disabled, false);
    assert.equal(loaded.source, "api");
    assert.deepEqual(loaded.toolsToExecute, []);
    assert.ok(loaded.createdAt instanceof Date);
  });

  test("keeps header values as ciphertext in the table and decrypts them on load", async () => {
    const store = await open(await newPlace(), { encryptionKey: newKey() });
    const id = await addClient(store, "secretive", { Authorization: "Bearer top-secret-value" });

    const raw = await rawHeaders(store, id);
    assert.match(raw, /^v1:[A-Za-z0-9+/=]+$/);
    assert.ok(!raw.includes("top-secret-value"));
    assert.ok(!raw.includes("Authorization"));

    const loaded = await store.fork().findOneOrFail(McpClientRecord, { id });
    assert.deepEqual(loaded.headers, { Authorization: "Bearer top-secret-value" });
  });

  test("does not rewrite unchanged encrypted headers when a loaded client is flushed", async () => {
    const store = await open(await newPlace(), { encryptionKey: newKey() });
    const id = await addClient(store, "steady", { "X-Api-Key": "k" });
    const before = await rawHeaders(store, id);

    const em = store.fork();
    await em.findOneOrFail(McpClientRecord, { id });
    await em.flush();

    assert.equal(await rawHeaders(store, id), before);
  });

  test("re-encrypts headers when they change", async () => {
    const store = await open(await newPlace(), { encryptionKey: newKey() });
    const id = await addClient(store, "rotating", { "X-Api-Key": "old" });

    const em = store.fork();
    const client = await em.findOneOrFail(McpClientRecord, { id });
    client.headers = { "X-Api-Key": "new" };
    await em.flush();

    const loaded = await store.fork().findOneOrFail(McpClientRecord, { id });
    assert.deepEqual(loaded.headers, { "X-Api-Key": "new" });
  });

  test("refuses to open, naming GW_ENCRYPTION_KEY, a database whose secrets were written with a different key", async () => {
    const place = await newPlace();
    const writerKey = newKey();
    const writer = await open(place, { encryptionKey: writerKey });
    const id = await addClient(writer, "locked", { "X-Api-Key": "k" });
    await writer.close();

    await assert.rejects(open(place, { encryptionKey: newKey() }), (err: unknown) => {
      assert.ok(err instanceof GatewayError);
      assert.equal(err.code, "failed_precondition");
      assert.match(err.message, /GW_ENCRYPTION_KEY does not match/);
      return true;
    });
    const reopened = await open(place, { encryptionKey: writerKey });
    assert.deepEqual((await reopened.fork().findOneOrFail(McpClientRecord, { id })).headers, { "X-Api-Key": "k" });
  });

  test("fails with a clear error when a stored ciphertext was altered", async () => {
    const store = await open(await newPlace(), { encryptionKey: newKey() });
    const id = await addClient(store, "tampered", { "X-Api-Key": "k" });
    const raw = await rawHeaders(store, id);
    const body = Buffer.from(raw.slice(3), "base64");
    body[body.length - 1] = (body[body.length - 1] ?? 0) ^ 1;
    await store.fork().getConnection().execute("update mcp_client set headers = ? where id = ?", [`v1:${body.toString("base64")}`, id]);

    await assert.rejects(store.fork().findOneOrFail(McpClientRecord, { id }), /encryption key does not match the data/);
  });

  test("generates a key file with mode 0600, warns about it and reuses it on reopen", async () => {
    const place = await newPlace();
    const { logger, lines } = capturingLogger();
    const first = await open(place, { logger });
    const id = await addClient(first, "keyed", { "X-Api-Key": "k" });
    await first.close();

    const keyFile = join(place.dataDir, "encryption.key");
    assert.equal((await stat(keyFile)).mode & 0o777, 0o600);
    assert.match((await readFile(keyFile, "utf8")).trim(), /^[0-9a-f]{64}$/);
    const warnings = lines().filter((line) => line["level"] === 40 && String(line["msg"]).includes("GW_ENCRYPTION_KEY"));
    assert.equal(warnings.length, 1);

    const keyBefore = await readFile(keyFile, "utf8");
    const second = await open(place, { logger });
    assert.equal(await readFile(keyFile, "utf8"), keyBefore);
    const loaded = await second.fork().findOneOrFail(McpClientRecord, { id });
    assert.deepEqual(loaded.headers, { "X-Api-Key": "k" });
    assert.equal(lines().filter((line) => line["level"] === 40 && String(line["msg"]).includes("GW_ENCRYPTION_KEY")).length, 1);
  });

  test("serves two stores with different data directories and keys at once", async () => {
    const a = await open(await newPlace(), { encryptionKey: newKey() });
    const b = await open(await newPlace(), { encryptionKey: newKey() });
    const idA = await addClient(a, "same_name", { "X-Key": "for-a" });
    const idB = await addClient(b, "same_name", { "X-Key": "for-b" });

    const emA = a.fork();
    const emB = b.fork();
    const fromA = await emA.findOneOrFail(McpClientRecord, { id: idA });
    const fromB = await emB.findOneOrFail(McpClientRecord, { id: idB });
    assert.deepEqual(fromA.headers, { "X-Key": "for-a" });
    assert.deepEqual(fromB.headers, { "X-Key": "for-b" });
    assert.equal(await emA.count(McpClientRecord), 1);
    assert.equal(await emB.count(McpClientRecord), 1);

    fromA.disabled = true;
    fromB.headers = { "X-Key": "for-b-2" };
    await emA.flush();
    await emB.flush();
    assert.deepEqual((await a.fork().findOneOrFail(McpClientRecord, { id: idA })).headers, { "X-Key": "for-a" });
    assert.deepEqual((await b.fork().findOneOrFail(McpClientRecord, { id: idB })).headers, { "X-Key": "for-b-2" });
  });

  test("raises a unique violation for a second client with the same name", async () => {
    const store = await open(await newPlace(), { encryptionKey: newKey() });
    await addClient(store, "taken");

    const err = await addClient(store, "taken").then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(err !== undefined, "the duplicate insert was refused");
    assert.equal(isUniqueViolation(err), true);
    assert.equal(isUniqueViolation(new Error("something else")), false);
  });

  test("rejects a malformed encryption key before opening anything", async () => {
    const place = await newPlace();
    for (const bad of ["", "abc", "zz".repeat(32), randomBytes(16).toString("base64"), randomBytes(33).toString("hex")]) {
      await assert.rejects(open(place, { encryptionKey: bad || " " }), (err: unknown) => {
        assert.ok(err instanceof GatewayError, `key ${JSON.stringify(bad)} gives a GatewayError`);
        assert.equal(err.code, "invalid_argument");
        assert.match(err.message, /64 hex characters or as base64/);
        return true;
      });
    }
  });

  test("accepts a base64 encryption key", async () => {
    const store = await open(await newPlace(), { encryptionKey: randomBytes(32).toString("base64") });
    const id = await addClient(store, "b64", { "X-Api-Key": "k" });
    assert.deepEqual((await store.fork().findOneOrFail(McpClientRecord, { id })).headers, { "X-Api-Key": "k" });
  });

  test("stores admin sessions and JSON settings", async () => {
    const store = await open(await newPlace(), { encryptionKey: newKey() });
    const em = store.fork();
    const expiresAt = new Date(Date.now() + 3_600_000);
    em.create(AdminSessionRecord, { tokenHash: "h1", username: "admin", expiresAt });
    em.create(SettingRecord, { key: "mcp_tool_sync_interval", value: { minutes: 10, enabled: true } });
    await em.flush();

    const read = store.fork();
    const session = await read.findOneOrFail(AdminSessionRecord, { tokenHash: "h1" });
    assert.equal(session.username, "admin");
    assert.equal(session.expiresAt.getTime(), expiresAt.getTime());
    const setting = await read.findOneOrFail(SettingRecord, { key: "mcp_tool_sync_interval" });
    assert.deepEqual(setting.value, { minutes: 10, enabled: true });
  });

  test("an opened database has no migration left pending", async () => {
    const place = await newPlace();
    const store = await open(place);
    assert.deepEqual(await pendingMigrations(store.orm, place.schema), []);
  });

  test("applies on reopen a migration the migrations table does not record", async () => {
    const place = await newPlace();
    const encryptionKey = newKey();
    const first = await open(place, { encryptionKey });
    const last = "Migration20261126200000_provider_key_backoff";
    // Undo the last migration by hand, as a database the release before it wrote would be.
    const connection = first.fork().getConnection();
    await connection.execute(`drop table "provider_key_backoff" cascade`);
    await connection.execute("delete from mikro_orm_migrations where name = ?", [last]);
    assert.deepEqual(await pendingMigrations(first.orm, place.schema), [last]);
    await first.close();
    const { logger, lines } = capturingLogger();
    const second = await open(place, { encryptionKey, logger });
    assert.deepEqual(await pendingMigrations(second.orm, place.schema), []);
    const rows = await second.fork().getConnection().execute<Array<{ n: number }>>("select count(*)::int as n from provider_key_backoff");
    assert.equal(rows[0]?.n, 0);
    assert.ok(lines().some((line) => line["msg"] === "applied database migrations" && JSON.stringify(line["migrations"]) === JSON.stringify([last])));
  });

  test("tries a migration again when a schema other than its own vanished under it, a few times at most", async () => {
    const store = await open(await newPlace());
    // The error the migrator's listing of every schema's tables meets when one is dropped meanwhile (the
    // listing's own race cannot be timed from a test; naming a missing schema raises the same error).
    const gone = await store
      .fork()
      .getConnection()
      .execute(`create table "t_dropped_elsewhere"."x" (id int)`)
      .then(
        () => assert.fail("a table of a missing schema resolved"),
        (err: unknown) => err,
      );
    assert.equal(isOtherSchemaDropped(gone, store.schema), true);
    assert.equal(isOtherSchemaDropped(gone, "t_dropped_elsewhere"), false, "its own schema missing is not retried");
    assert.equal(isOtherSchemaDropped(new Error('schema "x" does not exist'), store.schema), false, "only the SQLSTATE counts");

    let calls = 0;
    const answer = await retryWhenOtherSchemaDropped(store.schema, async () => {
      calls++;
      if (calls === 1) throw gone;
      return "migrated";
    });
    assert.deepEqual([answer, calls], ["migrated", 2]);

    calls = 0;
    await assert.rejects(
      retryWhenOtherSchemaDropped("t_dropped_elsewhere", async () => {
        calls++;
        throw gone;
      }),
      (err: unknown) => err === gone,
    );
    assert.equal(calls, 1);

    calls = 0;
    await assert.rejects(
      retryWhenOtherSchemaDropped(store.schema, async () => {
        calls++;
        throw gone;
      }),
      (err: unknown) => err === gone,
    );
    assert.equal(calls, MIGRATION_ATTEMPTS);
  });

  test("close is idempotent", async () => {
    const store = await open(await newPlace(), { encryptionKey: newKey() });
    await store.close();
    await store.close();
  });
});
