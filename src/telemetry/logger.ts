import { pino, type Logger, type LoggerOptions } from "pino";
import { BatchedLogDestination, type LogDestination } from "./log-destination.js";

export type { Logger };

/** Paths whose values never reach a log line, whatever logs them. */
const REDACT_PATHS = [
  "headers",
  "*.headers",
  "user_headers",
  "*.user_headers",
  "password",
  "*.password",
  "authorization",
  "*.authorization",
  "value",
  "*.value",
];

/** Names the redaction censors one level down in a line (`*.<name>`). */
const REDACTED_FIELD_NAMES: ReadonlySet<string> = new Set(REDACT_PATHS.flatMap((path) => (path.startsWith("*.") ? [path.slice(2)] : [])));

/** The gateway's log destination for stdout (fd 1) or a file: see BatchedLogDestination. */
export function batchedDestination(dest: number | string): BatchedLogDestination {
  return new BatchedLogDestination(dest);
}

let timeMs = -1;
let timeField = "";

/**
 * pino's ISO-8601 `time` field (with its leading comma), formatted once per millisecond: under load many
 * lines share each millisecond, and formatting the date was a large part of pino's cost per line.
 */
export function isoTimeOncePerMs(): string {
  const now = Date.now();
  if (now !== timeMs) {
    timeMs = now;
    timeField = `,"time":"${new Date(now).toISOString()}"`;
  }
  return timeField;
}

/** Where each logger createLogger made writes. */
const destinations = new WeakMap<Logger, LogDestination>();

/**
 * Creates the structured JSON logger; `destination` lets tests capture lines. Without one it writes to
 * stdout through `batchedDestination`.
 */
export function createLogger(options: { level?: string; destination?: LogDestination } = {}): Logger {
  const opts: LoggerOptions = {
    level: options.level ?? process.env["GW_LOG_LEVEL"] ?? "info",
    base: { service: "gw" },
    redact: { paths: REDACT_PATHS, censor: "[redacted]" },
    timestamp: isoTimeOncePerMs,
  };
  const destination = options.destination ?? batchedDestination(1);
  const logger = pino(opts, destination);
  destinations.set(logger, destination);
  return logger;
}

/** The destination `logger` writes to, when createLogger made it; undefined for any other logger. */
export function destinationOf(logger: Logger): LogDestination | undefined {
  return destinations.get(logger);
}

/** True when an object put in a line under some field has a field the redaction censors (`*.<name>`). */
export function mayHoldRedacted(values: Readonly<Record<string, unknown>>): boolean {
  for (const name in values) if (REDACTED_FIELD_NAMES.has(name)) return true;
  return false;
}
