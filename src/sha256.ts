/** SHA-256 for keys of in-memory maps that must not hold a secret (tokens, session ids) as it is. */
import { createHash } from "node:crypto";

/** The hex SHA-256 of a text's UTF-8 bytes. */
export function sha256Hex(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}
