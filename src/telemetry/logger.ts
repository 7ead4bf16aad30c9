import { pino, type Logger, type LoggerOptions } from "pino";

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

/**
 * Bytes of lines the destination gathers before it writes them in one system call. At the `info` level
 * every request writes a short access line; unbatched, the asynchronous destination wrote every line or
 * few lines on its own, and those writes, their thread-pool hops and their callbacks cost a noticeable
 * share of a forwarded request's CPU.
 */
const LOG_BATCH_BYTES = 4096;

/** The longest a line waits for its batch to fill before it is written anyway. */
const LOG_FLUSH_MS = 100;

/**
 * The gateway's log destination: stdout (fd 1) or a file, written asynchronously in batches of
 * LOG_BATCH_BYTES or every LOG_FLUSH_MS, whichever comes first. pino writes what is still queued
 * synchronously when the process exits, so a stop loses no line.
 */
export function batchedDestination(dest: number | string): NodeJS.WritableStream {
  // sonic-boom implements what pino writes to without declaring every property of a Node stream.
  return pino.destination({ dest, sync: false, minLength: LOG_BATCH_BYTES, periodicFlush: LOG_FLUSH_MS }) as unknown as NodeJS.WritableStream;
}

let timeMs = -1;
let timeField = "";

/**
 * pino's ISO-8601 `time` field, formatted once per millisecond: under load many lines share each
 * millisecond, and formatting the date was a large part of pino's cost per line.
 */
function isoTimeOncePerMs(): string {
  const now = Date.now();
  if (now !== timeMs) {
    timeMs = now;
    timeField = `,"time":"${new Date(now).toISOString()}"`;
  }
  return timeField;
}

/**
 * Creates the structured JSON logger; `destination` lets tests capture lines. Without one it writes to
 * stdout through `batchedDestination`.
 */
export function createLogger(
  options: { level?: string; destination?: NodeJS.WritableStream } = {},
): Logger {
  const opts: LoggerOptions = {
    level: options.level ?? process.env["GW_LOG_LEVEL"] ?? "info",
    base: { service: "gw" },
    redact: { paths: REDACT_PATHS, censor: "[redacted]" },
    timestamp: isoTimeOncePerMs,
  };
  return pino(opts, options.destination ?? batchedDestination(1));
}
