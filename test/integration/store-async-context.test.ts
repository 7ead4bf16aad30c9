/**
 * The store switches MikroORM's AsyncLocalStorage scopes off while idle (src/store/async-context-quiescer.ts),
 * so Node 20's promise hooks do not tax requests that never touch the database. `enabled` is Node's own
 * per-storage flag, the one the quiescer relies on.
 */
import assert from "node:assert/strict";
import { AsyncLocalStorage } from "node:async_hooks";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { after, before, test } from "node:test";
import { TransactionContext } from "@mikro-orm/core";
import { quiesceOrmAsyncContexts } from "../../src/store/async-context-quiescer.js";
import { dropSchema, openStore, randomSchemaName, SettingRecord, type Store } from "../../src/store/index.js";
import { createLogger } from "../../src/telemetry/logger.js";

const serverUrl = process.env["GW_TEST_DATABASE_URL"] || undefined;
const hasHookStorage = typeof (AsyncLocalStorage.prototype as unknown as { _enable?: unknown })._enable === "function";
let store: Store;
let dataDir: string;
let schema: string | undefined;

before(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "gw-als-"));
  schema = serverUrl ? randomSchemaName() : undefined;
  store = await openStore({
    dataDir,
    ...(serverUrl ? { url: serverUrl } : {}),
    ...(schema ? { schema } : {}),
    encryptionKey: "11".repeat(32),
    logger: createLogger({ level: "silent" }),
  });
});

after(async () => {
  await store.close();
  if (serverUrl && schema) await dropSchema(serverUrl, schema);
  await rm(dataDir, { recursive: true, force: true });
});

function transactionScopeEnabled(): boolean {
  // The storage is public at run time; MikroORM's typings mark it private.
  return (TransactionContext as unknown as { storage: { enabled: boolean } }).storage.enabled;
}

test("a transaction leaves MikroORM's scope enabled and a quiesce disables it", { skip: !hasHookStorage }, async () => {
  await store.fork().transactional(async (em) => {
    await em.find(SettingRecord, {});
  });
  assert.equal(transactionScopeEnabled(), true);
  quiesceOrmAsyncContexts();
  assert.equal(transactionScopeEnabled(), false);
});

test("the store disables MikroORM's scopes by itself once no query is running", { skip: !hasHookStorage }, async () => {
  await store.fork().transactional(async (em) => {
    await em.find(SettingRecord, {});
  });
  assert.equal(transactionScopeEnabled(), true);
  // The store checks every second; allow a few checks on a busy machine.
  for (let i = 0; i < 50 && transactionScopeEnabled(); i++) await sleep(100);
  assert.equal(transactionScopeEnabled(), false);
});

test("the ORM works again after its scopes were disabled", async () => {
  quiesceOrmAsyncContexts();
  const found = await store.fork().transactional(async (em) => em.find(SettingRecord, {}));
  assert.ok(Array.isArray(found));
});

test("a quiesce leaves other libraries' storages alone", async () => {
  const storage = new AsyncLocalStorage<string>();
  await storage.run("mine", async () => {
    quiesceOrmAsyncContexts();
    await sleep(1);
    assert.equal(storage.getStore(), "mine");
  });
});
