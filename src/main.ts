/**
 * The gateway's entry point: the only place that reads argv and the environment, and handles signals.
 * `node dist/main.js [--config path] [--host h] [--port n] [--data-dir dir] [--require-auth]` (built by
 * `npm run build`). SIGTERM and SIGINT stop it gracefully; SIGHUP re-reads the config file.
 */
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { appOptionsFromConfig, createApp, type App, type AppOptions } from "./app.js";
import { loadConfigFile } from "./config/load-config.js";
import { GatewayError } from "./errors.js";
import { embeddedFlagsOnServer } from "./serving-environment.js";
import { createLogger, type Logger } from "./telemetry/logger.js";
import { otlpOptionsFrom } from "./telemetry/otlp-settings.js";

const USAGE = "usage: npm start -- [--config path] [--host 127.0.0.1] [--port 8080] [--data-dir ./data] [--require-auth]";

function parsePort(text: string, source: string): number {
  const port = Number(text);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new GatewayError("invalid_argument", `${source}: "${text}" is not a port number (0-65535)`);
  return port;
}

/** GW_REQUIRE_AUTH: a security switch, so anything but an exact on or off value is refused rather than guessed. */
function parseSwitch(text: string | undefined, name: string): boolean {
  if (text === undefined || text === "" || text === "0" || text === "false") return false;
  if (text === "1" || text === "true") return true;
  throw new GatewayError("invalid_argument", `${name}: "${text}" is not 1, true, 0 or false`);
}

/** The options the config file decides, with the environment's overrides: the same at start and on SIGHUP. */
async function fileOptions(configPath: string | undefined, env: NodeJS.ProcessEnv): Promise<Partial<AppOptions>> {
  const file = configPath ? await loadConfigFile(configPath, env) : undefined;
  const fromFile = file ? appOptionsFromConfig(file) : {};
  const databaseUrl = env["GW_DATABASE_URL"] || fromFile.databaseUrl;
  const redisUrl = env["GW_REDIS_URL"];
  if (redisUrl && !/^rediss?:\/\/./.test(redisUrl)) throw new GatewayError("invalid_argument", "GW_REDIS_URL: must be a redis:// or rediss:// URL");
  const redis = redisUrl ? { url: redisUrl, keyPrefix: fromFile.redis?.keyPrefix ?? "gw:" } : fromFile.redis;
  // The OTEL_* variables win over telemetry.otlp, as in every OpenTelemetry SDK.
  const tracing = otlpOptionsFrom(file?.telemetry.otlp, env);
  return { ...fromFile, ...(databaseUrl ? { databaseUrl } : {}), ...(redis ? { redis } : {}), ...(tracing ? { tracing } : {}) };
}

/** Re-reads the config file into the running app; a file that cannot be applied is logged and changes nothing. */
async function reloadConfig(app: App, configPath: string | undefined, env: NodeJS.ProcessEnv, logger: Logger): Promise<void> {
  if (configPath === undefined) {
    logger.warn("SIGHUP: there is no config file to re-read (start with --config or GW_CONFIG)");
    return;
  }
  logger.info({ config: configPath }, "SIGHUP: re-reading the config file");
  try {
    await app.reload(await fileOptions(configPath, env));
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    logger.error({ err, config: configPath }, `config file not applied, the running configuration stays: ${message}`);
  }
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
        "require-auth": { type: "boolean" },
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
  const configText = args.config ?? env["GW_CONFIG"];
  const configPath = configText ? resolve(configText) : undefined;
  const portText = args.port ?? env["GW_PORT"];
  const options: AppOptions = {
    ...(await fileOptions(configPath, env)),
    dataDir: resolve(args["data-dir"] ?? env["GW_DATA_DIR"] ?? "./data"),
    host: args.host ?? env["GW_HOST"] ?? "127.0.0.1",
    port: portText === undefined ? 8080 : parsePort(portText, args.port !== undefined ? "--port" : "GW_PORT"),
    requireAuth: args["require-auth"] === true || parseSwitch(env["GW_REQUIRE_AUTH"], "GW_REQUIRE_AUTH"),
    ...(env["GW_ENCRYPTION_KEY"] ? { encryptionKey: env["GW_ENCRYPTION_KEY"] } : {}),
    // Several gateways (or test runs) can share one database, each group in a schema of its own.
    ...(env["GW_DATABASE_SCHEMA"] ? { databaseSchema: env["GW_DATABASE_SCHEMA"] } : {}),
    logger,
  };

  const flagsHint = embeddedFlagsOnServer(process.execArgv, options.databaseUrl);
  if (flagsHint !== undefined) logger.warn(flagsHint);

  // Signals are taken from the start: by default SIGHUP would end the process, and a stop requested
  // while the store opens waits for it, so nothing (an initdb child, say) is left running.
  let app: App | undefined;
  let stopSignal: string | undefined;
  let reloadRequested = false;
  const stop = (running: App) => {
    running.close().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error({ err }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  const onStop = (signal: string) => {
    if (stopSignal !== undefined) return;
    stopSignal = signal;
    logger.info({ signal }, "shutting down");
    if (app) stop(app);
  };
  process.on("SIGTERM", () => onStop("SIGTERM"));
  process.on("SIGINT", () => onStop("SIGINT"));
  process.on("SIGHUP", () => {
    if (app) void reloadConfig(app, configPath, env, logger);
    else reloadRequested = true;
  });

  app = await createApp(options);
  if (stopSignal !== undefined) stop(app);
  else if (reloadRequested) void reloadConfig(app, configPath, env, logger);
}

main().catch((err: unknown) => {
  const message = err instanceof Error ? err.message : String(err);
  process.stderr.write(`gw: cannot start: ${message}\n`);
  process.exit(1);
});
