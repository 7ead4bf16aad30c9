/** The store's public API: the rest of the app imports from here only. */
export * from "./entities/index.js";
export { parseDatabaseUrl, type ConnectionTarget } from "./connection-target.js";
export { EncryptedJsonType } from "./encrypted-json-type.js";
export { parseEncryptionKey } from "./encryption-key.js";
export { SecretBox } from "./secret-box.js";
export { openStore, type Store, type StoreOptions } from "./store.js";
export { dropSchema, randomSchemaName } from "./test-support.js";
export { isUniqueViolation } from "./unique-violation.js";
export { createEmbeddedTemplate } from "./embedded-template.js";
