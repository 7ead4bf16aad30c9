/**
 * Where the at-rest encryption key comes from: GW_ENCRYPTION_KEY when set, otherwise a key file in the
 * data directory that is generated on first start, so a fresh install works without setup.
 */
import { randomBytes } from "node:crypto";
import { chmod, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { GatewayError } from "../errors.js";
import type { Logger } from "../telemetry/logger.js";

/** Name of the generated key file inside the data directory. */
export const KEY_FILE_NAME = "encryption.key";

const HEX_KEY = /^[0-9a-fA-F]{64}$/;
// 32 bytes in standard or URL-safe base64, padded or not.
const BASE64_KEY = /^[A-Za-z0-9+/_-]{43}=?$/;

/** Parses a key given as 64 hex characters or base64 of 32 bytes; anything else is invalid_argument. */
export function parseEncryptionKey(value: string, source = "GW_ENCRYPTION_KEY"): Buffer {
  const trimmed = value.trim();
  if (HEX_KEY.test(trimmed)) return Buffer.from(trimmed, "hex");
  if (BASE64_KEY.test(trimmed)) {
    const bytes = Buffer.from(trimmed.replace(/-/g, "+").replace(/_/g, "/"), "base64");
    if (bytes.length === 32) return bytes;
  }
  throw new GatewayError(
    "invalid_argument",
    `${source} must be 32 bytes written as 64 hex characters or as base64 (generate one with \`openssl rand -hex 32\`)`,
    { field: "encryption_key" },
  );
}

/** Returns the configured key, or reads `<dataDir>/encryption.key`, generating it (mode 0600) when missing. */
export async function resolveEncryptionKey(options: {
  dataDir: string;
  encryptionKey?: string | undefined;
  logger: Logger;
}): Promise<Buffer> {
  if (options.encryptionKey !== undefined) return parseEncryptionKey(options.encryptionKey);
  const file = join(options.dataDir, KEY_FILE_NAME);
  const existing = await readKeyFile(file);
  if (existing !== undefined) {
    await warnIfReadableByOthers(file, options.logger);
    return parseEncryptionKey(existing, file);
  }
  const key = randomBytes(32);
  try {
    // "wx" so two processes starting at once cannot overwrite each other's key.
    await writeFile(file, key.toString("hex") + "\n", { mode: 0o600, flag: "wx" });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") {
      return parseEncryptionKey((await readKeyFile(file)) ?? "", file);
    }
    throw err;
  }
  // The umask can strip bits from `mode` but never add them; chmod makes 0600 exact.
  await chmod(file, 0o600);
  options.logger.warn(
    { keyFile: file },
    "generated a new encryption key for secrets at rest; back it up and set GW_ENCRYPTION_KEY to its contents, " +
      "because data written with it cannot be read without it",
  );
  return key;
}

/** The key file's text, or undefined when there is none. */
export async function readKeyFile(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}

async function warnIfReadableByOthers(file: string, logger: Logger): Promise<void> {
  const { mode } = await stat(file);
  if ((mode & 0o077) !== 0) {
    logger.warn({ keyFile: file, mode: (mode & 0o777).toString(8) }, "the encryption key file is readable by other users; run chmod 600 on it");
  }
}
