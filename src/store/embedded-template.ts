/**
 * The embedded database's template: an empty cluster with every migration applied, which a first start
 * copies instead of running initdb and the migrations itself (slow, and initdb takes a lot of memory).
 * `npm run build` makes one beside the bundle; the tests make one per migration set.
 */
import { randomBytes } from "node:crypto";
import { rename, rm } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "../telemetry/logger.js";
import { ensureVectorExtension } from "./response-cache-table.js";
import { openStore } from "./store.js";

/** Creates the migrated cluster in `dir`, replacing what is there. */
export async function createEmbeddedTemplate(dir: string, logger: Logger): Promise<void> {
  const work = `${dir}.${randomBytes(4).toString("hex")}`;
  try {
    // A throwaway key: the template holds no secrets, and the key file must not travel with it.
    const store = await openStore({ dataDir: work, logger, encryptionKey: randomBytes(32).toString("hex"), keyCheck: false });
    try {
      // pgvector (semantic caching) comes created, so a first start does not pay for it.
      await ensureVectorExtension(store);
    } finally {
      await store.close();
    }
    await rm(dir, { recursive: true, force: true });
    await rename(join(work, "pglite"), dir);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
