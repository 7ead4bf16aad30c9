/**
 * The gateway's entry point: the only place that reads argv and the environment and listens.
 * `node dist/main.js [--config path] [--host h] [--port n] [--data-dir dir]` (built by `npm run build`).
 */
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { appOptionsFromConfig, createApp, type AppOptions } from "./app.js";
import { loadConfigFile } from "./config/load-config.js";
import { GatewayError } from "./errors.js";
import { createLogger } from "./telemetry/logger.js";

const USAGE = "usage: npm start -- [--config path] [--host 127.0.0.1] [--port 8080] [--data-dir ./data]";

function parsePort(text: string, source: string): number {
  const port = Number(text);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new GatewayError("invalid_argument", `${source}: "${text}" is not a port number (0-65535)`);
  return port;
}

async function main(): Promise<void> {
  const logger = createLogger();
  const env = process.env;
  let args;
  try {
    args = parseArgs({
      options: {
        config: { type: "string" },
        host: { type: "string" },
        port: { type: "string" },
        "data-dir": { type: "string" },
        help: { type: "boolean" },
      },
      strict: true,
      allowPositionals: false,
    }).values;
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${USAGE}\n`);
    process.exit(2);
  }
  if (args.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const configPath = args.config ?? env["GW_CONFIG"];
  const file = configPath ? await loadConfigFile(resolve(configPath), env) : undefined;
  const fromFile = file ? appOptionsFromConfig(file) : {};
  const portText = args.port ?? env["GW_PORT"];
  const databaseUrl = env["GW_DATABASE_URL"] || fromFile.databaseUrl;
  const options: AppOptions = {
    ...fromFile,
    dataDir: resolve(args["data-dir"] ?? env["GW_DATA_DIR"] ?? "./data"),
    host: args.host ?? env["GW_HOST"] ?? "127.0.0.1",
    port: portText === undefined ? 8080 : parsePort(portText, args.port !== undefined ? "--port" : "GW_PORT"),
    ...(databaseUrl ? { databaseUrl } : {}),
    ...(env["GW_ENCRYPTION_KEY"] ? { encryptionKey: env["GW_ENCRYPTION_KEY"] } : {}),
    logger,
  };
  const app = await createApp(options);
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "shutting down");
    app.close().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error({ err }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
}

main().catch((err: unknown) => {
  const message = err instanceof Error ? err.message : String(err);
  process.stderr.write(`gw: cannot start: ${message}\n`);
  process.exit(1);
});
