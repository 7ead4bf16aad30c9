/**
 * Migration tooling for developers: `create [name]` writes a new migration from the difference between
 * the entity mappings and a throwaway embedded database migrated from the committed files; `check`
 * exits non-zero when such a difference exists (for CI). Run through `npm run migration:create`.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "../telemetry/logger.js";
import { loadMigrator } from "./migrator.js";
import { MIGRATIONS_DIR } from "./orm-config.js";
import { openStore } from "./store.js";

const USAGE = "usage: migrate-cli.ts create [name] | check";

async function main(args: string[]): Promise<number> {
  const [command, name] = args;
  if (command !== "create" && command !== "check") {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  const logger = createLogger({ level: process.env["GW_LOG_LEVEL"] ?? "warn" });
  const dataDir = await mkdtemp(join(tmpdir(), "gw-migrate-"));
  // A throwaway key keeps the "generated a key" warning out of a developer tool's output.
  const store = await openStore({ dataDir, encryptionKey: randomBytes(32).toString("hex"), logger });
  try {
    const migrator = await loadMigrator(store.orm);
    if (command === "check") {
      const needed = await migrator.checkMigrationNeeded();
      process.stdout.write(needed ? "entity mappings differ from the migrations: run npm run migration:create\n" : "migrations are up to date\n");
      return needed ? 1 : 0;
    }
    const result = await migrator.createMigration(MIGRATIONS_DIR, false, false, name);
    if (result.diff.up.length === 0) {
      process.stdout.write("no changes: the migrations already match the entity mappings\n");
    } else {
      process.stdout.write(`wrote ${join(MIGRATIONS_DIR, result.fileName)}; add its class to src/store/migration-list.ts and its name to src/store/migration-names.ts\n`);
    }
    return 0;
  } finally {
    await store.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

process.exitCode = await main(process.argv.slice(2));
