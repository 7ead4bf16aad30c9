/** The store's public API: the rest of the app imports from here only. */
export * from "./entities/index.js";
export { parseDatabaseUrl, type ConnectionTarget } from "./connection-target.js";
export { EncryptedJsonType } from "./encrypted-json-type.js";
export { parseEncryptionKey } from "./encryption-key.js";
export { SecretBox } from "./secret-box.js";
export { ensureVectorExtension, ResponseCacheTable, type NearestAnswer, type StoredAnswer } from "./response-cache-table.js";
export { applicationNameOf, openStore, type Store, type StoreOptions } from "./store.js";
export { deleteRecord, inNativeTransaction, insertRecord, saveRecord, writeRecord } from "./native-transaction.js";
export { pendingMigrations } from "./pending-migrations.js";
export { openRawConnection, type PgNotification, type RawConnection } from "./raw-connection.js";
export { dropSchema, randomSchemaName } from "./test-support.js";
export { isUniqueViolation } from "./unique-violation.js";
export { isDatabaseUnavailable } from "./database-unavailable.js";
export { isUnstorableText, UnstorableTextError } from "./unstorable-text.js";
export { createEmbeddedTemplate } from "./embedded-template.js";
export { copyContents } from "./embedded-database.js";
export { KeyBackoffTable, keyBackoffRowId, type StoredKeyBackoff } from "./key-backoff-table.js";
export { SharedCounterTable, type CounterBackend, type LeaseGrant, type LeaseRequest } from "./shared-counter-table.js";
