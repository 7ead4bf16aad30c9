/**
 * `npm run rotate-key`: re-encrypts every stored secret under GW_NEW_ENCRYPTION_KEY. Reads the database and
 * the current key the way the gateway does at start (GW_DATABASE_URL, GW_DATABASE_SCHEMA, GW_DATA_DIR or
 * --data-dir, GW_ENCRYPTION_KEY or <data-dir>/encryption.key). Run it with every gateway node stopped.
 */
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { GatewayError } from "../errors.js";
import { createLogger } from "../telemetry/logger.js";
import { rotateEncryptionKey } from "./rotate-key.js";

const USAGE =
  "usage: GW_NEW_ENCRYPTION_KEY=<64 hex chars> npm run rotate-key [-- --data-dir <dir>]\n" +
  "  the current key is GW_ENCRYPTION_KEY, or <data-dir>/encryption.key; the database is GW_DATABASE_URL (embedded when unset)";

async function main(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  let dataDirArg: string | undefined;
  try {
    dataDirArg = parseArgs({ args: argv, options: { "data-dir": { type: "string" } }, strict: true, allowPositionals: false }).values["data-dir"];
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${USAGE}\n`);
    return 2;
  }
  const newKey = env["GW_NEW_ENCRYPTION_KEY"];
  if (!newKey) {
    process.stderr.write(`GW_NEW_ENCRYPTION_KEY is not set (generate one with \`openssl rand -hex 32\`)\n${USAGE}\n`);
    return 2;
  }
  const logger = createLogger({ level: env["GW_LOG_LEVEL"] ?? "warn" });
  try {
    const result = await rotateEncryptionKey({
      dataDir: resolve(dataDirArg ?? env["GW_DATA_DIR"] ?? "./data"),
      ...(env["GW_DATABASE_URL"] ? { url: env["GW_DATABASE_URL"] } : {}),
      ...(env["GW_DATABASE_SCHEMA"] ? { schema: env["GW_DATABASE_SCHEMA"] } : {}),
      ...(env["GW_ENCRYPTION_KEY"] ? { currentKey: env["GW_ENCRYPTION_KEY"] } : {}),
      newKey,
      logger,
    });
    const total = Object.values(result.values).reduce((a, b) => a + b, 0);
    process.stdout.write(`re-encrypted ${total} secret values under the new key\n`);
    process.stdout.write(
      result.keyFile !== undefined
        ? `wrote the new key to ${result.keyFile}\n`
        : "set GW_ENCRYPTION_KEY to the new key on every node before starting them again\n",
    );
    return 0;
  } catch (err) {
    // Only the gateway's own errors carry a message written for the operator; anything else is unexpected.
    if (err instanceof GatewayError) {
      process.stderr.write(`key rotation failed: ${err.message}\n`);
      return 1;
    }
    throw err;
  }
}

process.exitCode = await main(process.argv.slice(2), process.env);
