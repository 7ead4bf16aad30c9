/**
 * A MikroORM column type that keeps a JSON value encrypted at rest: the column holds SecretBox text,
 * entities see the plain value. Each ORM instance has its own key (tests open several stores with
 * different keys in one process), so the key is looked up by the instance's Platform object, which
 * MikroORM passes to every conversion.
 */
import { Type, type EntityProperty, type Platform } from "@mikro-orm/core";
import { GatewayError } from "../errors.js";
import type { SecretBox } from "./secret-box.js";

const boxes = new WeakMap<Platform, SecretBox>();

/** Binds the key of one ORM instance (its platform) so its encrypted columns can be read and written. */
export function registerSecretBox(platform: Platform, box: SecretBox): void {
  boxes.set(platform, box);
}

function boxFor(platform: Platform | undefined): SecretBox {
  const box = platform === undefined ? undefined : boxes.get(platform);
  if (box === undefined) {
    throw new GatewayError(
      "internal",
      "an encrypted column was used on an ORM instance without an encryption key; open the database with openStore()",
    );
  }
  return box;
}

/** JSON stored as AES-256-GCM ciphertext text; `null` stays SQL NULL. */
export class EncryptedJsonType<T = unknown> extends Type<T | null, string | null> {
  override convertToDatabaseValue(value: T | null, platform: Platform): string | null {
    if (value === null || value === undefined) return null;
    return boxFor(platform).encrypt(JSON.stringify(value));
  }

  override convertToJSValue(value: string | null, platform: Platform): T | null {
    if (value === null || value === undefined) return null;
    // MikroORM also routes already-converted values through here (e.g. em.create with convertCustomTypes).
    if (typeof value !== "string") return value as T;
    return JSON.parse(boxFor(platform).decrypt(value)) as T;
  }

  /**
   * Every encryption uses a fresh IV, so two ciphertexts of one value differ; compare the plaintexts,
   * or each flush would rewrite every loaded secret.
   */
  override compareValues(a: string | null, b: string | null): boolean {
    if (a === b) return true;
    if (a === null || b === null || a === undefined || b === undefined) return false;
    const box = this.platform === undefined ? undefined : boxes.get(this.platform);
    // Without the key we cannot tell; reporting a change only costs a redundant UPDATE.
    if (box === undefined) return false;
    return box.decrypt(a) === box.decrypt(b);
  }

  /** The snapshot keeps the ciphertext as read; re-encrypting it on every load would be wasted work. */
  override ensureComparable(): boolean {
    return false;
  }

  override getColumnType(_prop: EntityProperty, _platform: Platform): string {
    return "text";
  }
}
