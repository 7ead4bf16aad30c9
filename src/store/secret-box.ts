/**
 * Authenticated encryption of secret values at rest (AES-256-GCM). The sealed form is a versioned
 * string so the algorithm or key scheme can change later without guessing what old rows hold.
 */
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { GatewayError } from "../errors.js";

const ALGORITHM = "aes-256-gcm";
const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const VERSION_PREFIX = "v1:";

/** Seals and opens strings with one 32-byte key. */
export class SecretBox {
  readonly #key: Buffer;

  constructor(key: Uint8Array) {
    if (key.length !== KEY_BYTES) {
      throw new GatewayError("invalid_argument", `encryption key must be ${KEY_BYTES} bytes, got ${key.length}`);
    }
    // Copy so a caller that later zeroes or reuses its buffer cannot change ours.
    this.#key = Buffer.from(key);
  }

  /** Encrypts `plaintext` with a fresh random IV; returns "v1:" + base64(iv | tag | ciphertext). */
  encrypt(plaintext: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv(ALGORITHM, this.#key, iv);
    const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
    return VERSION_PREFIX + Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64");
  }

  /** Decrypts a value sealed by `encrypt`; throws GatewayError(internal) on a wrong key or altered value. */
  decrypt(sealed: string): string {
    if (!sealed.startsWith(VERSION_PREFIX)) {
      throw new GatewayError(
        "internal",
        "a stored secret is not in a known encrypted format (expected a \"v1:\" value); the database row was written by something else or altered",
      );
    }
    const raw = Buffer.from(sealed.slice(VERSION_PREFIX.length), "base64");
    if (raw.length < IV_BYTES + TAG_BYTES) {
      throw new GatewayError("internal", "a stored secret is truncated; the database row was altered");
    }
    const iv = raw.subarray(0, IV_BYTES);
    const tag = raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES);
    const body = raw.subarray(IV_BYTES + TAG_BYTES);
    try {
      const decipher = createDecipheriv(ALGORITHM, this.#key, iv);
      decipher.setAuthTag(tag);
      return Buffer.concat([decipher.update(body), decipher.final()]).toString("utf8");
    } catch (cause) {
      throw new GatewayError(
        "internal",
        "the encryption key does not match the data: stored secrets cannot be decrypted. Set GW_ENCRYPTION_KEY " +
          "(or keep <data-dir>/encryption.key) to the key the data was written with",
        { cause },
      );
    }
  }
}
