/**
 * The encryption key check value: the first node seals a known text into the database; every later node
 * opens it at start, so one started with another GW_ENCRYPTION_KEY stops before it writes secrets no other
 * node can read.
 */
import type { EntityManager } from "@mikro-orm/postgresql";
import { GatewayError } from "../errors.js";
import { KeyCheckRecord } from "./entities/key-check-record.js";
import type { SecretBox } from "./secret-box.js";
import { isUniqueViolation } from "./unique-violation.js";

/** The one row of encryption_key_check. */
export const CHECK_ROW_ID = 1;
const CHECK_TEXT = "gw encryption key check";

/** The check value sealed with `box`, as the encryption_key_check row holds it. */
export function sealKeyCheck(box: SecretBox): string {
  return box.encrypt(CHECK_TEXT);
}

/** Stores the check value on first start; throws failed_precondition naming GW_ENCRYPTION_KEY when this key cannot open it. */
export async function verifyEncryptionKey(em: EntityManager, box: SecretBox): Promise<void> {
  let row = await em.findOne(KeyCheckRecord, { id: CHECK_ROW_ID });
  if (row === null) {
    try {
      await em.insert(KeyCheckRecord, { id: CHECK_ROW_ID, sealed: sealKeyCheck(box) });
    } catch (err) {
      // Another node starting at the same moment wrote it first: check against theirs.
      if (!isUniqueViolation(err)) throw err;
    }
    row = await em.findOneOrFail(KeyCheckRecord, { id: CHECK_ROW_ID }, { refresh: true });
  }
  let opened: string | undefined;
  try {
    opened = box.decrypt(row.sealed);
  } catch {
    opened = undefined;
  }
  if (opened !== CHECK_TEXT) {
    throw new GatewayError(
      "failed_precondition",
      "GW_ENCRYPTION_KEY does not match the key this database's secrets were written with: set GW_ENCRYPTION_KEY on this node " +
        "to the key the other nodes use (the contents of their <data-dir>/encryption.key when they generated one)",
      { field: "encryption_key" },
    );
  }
}
