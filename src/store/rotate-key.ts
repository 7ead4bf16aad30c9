/**
 * Key rotation: every encrypted column of every table is decrypted with the current key and sealed with a
 * new one in one transaction, together with the key check value, so the database is either wholly under
 * the old key or wholly under the new one. A key file in the data directory is replaced only after the
 * commit, since data the old file could no longer open would otherwise be lost if the rotation failed.
 */
import { randomBytes } from "node:crypto";
import { chmod, rename, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import type { EntityManager } from "@mikro-orm/postgresql";
import { GatewayError } from "../errors.js";
import type { Logger } from "../telemetry/logger.js";
import { EncryptedJsonType } from "./encrypted-json-type.js";
import { KEY_FILE_NAME, parseEncryptionKey, readKeyFile } from "./encryption-key.js";
import { KeyCheckRecord } from "./entities/key-check-record.js";
import { CHECK_ROW_ID, sealKeyCheck } from "./key-check.js";
import { inNativeTransaction } from "./native-transaction.js";
import { SecretBox } from "./secret-box.js";
import { openStore } from "./store.js";

/** What to rotate and where. */
export interface RotateKeyOptions {
  /** The data directory: the embedded database and, unless `currentKey` is given, the key file. */
  dataDir: string;
  /** postgres://… for a server; absent for the embedded database. */
  url?: string;
  schema?: string;
  /** The key the data is under now (GW_ENCRYPTION_KEY); absent: the data directory's key file. */
  currentKey?: string;
  /** The key to move to (GW_NEW_ENCRYPTION_KEY). */
  newKey: string;
  logger: Logger;
}

/** What a rotation did. */
export interface RotateKeyResult {
  /** Sealed values re-encrypted, per "table.column". */
  values: Record<string, number>;
  /** The key file rewritten with the new key, when the current key came from one. */
  keyFile?: string;
}

/** One encrypted column of one table, with the primary key columns that address its rows. */
interface SealedColumn {
  table: string;
  column: string;
  primaryKey: string[];
}

/** Re-encrypts every secret under `newKey`; throws (changing nothing) when any stored value cannot be opened. */
export async function rotateEncryptionKey(options: RotateKeyOptions): Promise<RotateKeyResult> {
  // The new key is checked first: a typo in it should not wait for the database.
  const newKey = parseEncryptionKey(options.newKey, "GW_NEW_ENCRYPTION_KEY");
  const newBox = new SecretBox(newKey);
  const dataDir = resolve(options.dataDir);
  const keyFile = join(dataDir, KEY_FILE_NAME);
  let currentText = options.currentKey;
  if (currentText === undefined) {
    currentText = await readKeyFile(keyFile);
    if (currentText === undefined) {
      throw new GatewayError(
        "failed_precondition",
        `there is no current key: set GW_ENCRYPTION_KEY to the key the data is under, or run with the data directory that holds ${KEY_FILE_NAME}`,
        { field: "encryption_key" },
      );
    }
  }
  const currentBox = new SecretBox(parseEncryptionKey(currentText, options.currentKey === undefined ? keyFile : "GW_ENCRYPTION_KEY"));

  // Opening checks the current key against the key check value, so a wrong current key stops here.
  const store = await openStore({
    dataDir,
    ...(options.url === undefined ? {} : { url: options.url }),
    ...(options.schema === undefined ? {} : { schema: options.schema }),
    encryptionKey: currentText,
    logger: options.logger,
  });
  const values: Record<string, number> = {};
  try {
    const columns = sealedColumns(store.orm.em);
    await inNativeTransaction(store, async (em) => {
      for (const column of columns) {
        values[`${column.table}.${column.column}`] = await resealColumn(em, column, currentBox, newBox);
      }
      await em.nativeUpdate(KeyCheckRecord, { id: CHECK_ROW_ID }, { sealed: sealKeyCheck(newBox) });
    });
  } finally {
    await store.close();
  }
  if (options.currentKey !== undefined) return { values };
  await replaceKeyFile(keyFile, newKey);
  return { values, keyFile };
}

/** The encrypted columns the entity mappings declare. */
function sealedColumns(em: EntityManager): SealedColumn[] {
  const columns: SealedColumn[] = [];
  for (const meta of Object.values(em.getMetadata().getAll())) {
    if (meta.embeddable || meta.virtual || meta.abstract) continue;
    const primaryKey = meta.primaryKeys.flatMap((name) => meta.properties[name]?.fieldNames ?? []);
    for (const prop of Object.values(meta.properties)) {
      if (!(prop.customType instanceof EncryptedJsonType)) continue;
      const column = prop.fieldNames[0];
      if (column === undefined) continue;
      columns.push({ table: meta.tableName, column, primaryKey });
    }
  }
  return columns;
}

/** Re-seals one column's values inside the caller's transaction; returns how many. */
async function resealColumn(em: EntityManager, column: SealedColumn, from: SecretBox, to: SecretBox): Promise<number> {
  const conn = em.getConnection();
  const tx = em.getTransactionContext();
  const keys = column.primaryKey.map(quote).join(", ");
  const rows = await conn.execute<Record<string, unknown>[]>(
    `select ${keys}, ${quote(column.column)} as sealed from ${quote(column.table)} where ${quote(column.column)} is not null order by ${keys} for update`,
    [],
    "all",
    tx,
  );
  const where = column.primaryKey.map((k) => `${quote(k)} = ?`).join(" and ");
  for (const row of rows) {
    const sealed = row["sealed"];
    if (typeof sealed !== "string") continue;
    let plain: string;
    try {
      plain = from.decrypt(sealed);
    } catch (cause) {
      const id = column.primaryKey.map((k) => `${k}=${String(row[k])}`).join(", ");
      throw new GatewayError(
        "failed_precondition",
        `${column.table}.${column.column} of the row ${id} cannot be opened with the current key (the value was altered or written ` +
          "with another key); nothing was changed. Fix or delete that row, then run the rotation again",
        { cause },
      );
    }
    await conn.execute(`update ${quote(column.table)} set ${quote(column.column)} = ? where ${where}`, [to.encrypt(plain), ...column.primaryKey.map((k) => row[k])], "run", tx);
  }
  return rows.length;
}

/** Names come from the entity mappings, not from input; quoting keeps reserved words (e.g. "value") valid. */
function quote(identifier: string): string {
  return `"${identifier.replace(/"/g, '""')}"`;
}

/** Writes the new key beside the old file and renames it over, so a crash leaves one whole key file. */
async function replaceKeyFile(file: string, key: Buffer): Promise<void> {
  const temp = `${file}.${randomBytes(6).toString("hex")}.tmp`;
  await writeFile(temp, key.toString("hex") + "\n", { mode: 0o600, flag: "wx" });
  await chmod(temp, 0o600);
  await rename(temp, file);
}
