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

/** Names the redaction censors one level down in a line (`*.<name>`). */
const REDACTED_FIELD_NAMES: ReadonlySet<string> = new Set(REDACT_PATHS.flatMap((path) => (path.startsWith("*.") ? [path.slice(2)] : [])));

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

/**
 * A logger for lines of a fixed shape that no redacted path can match, such as the access line every
 * request writes: the redaction pass over each line was about half of what pino spent on it. It writes
 * where `logger` writes, with its bindings, at every level `logger` has on (the caller asks `logger`).
 * A line with a nested object goes through it only when `mayHoldRedacted` says that object is clean.
 */
export function unredactedLogger(logger: Logger): Logger {
  return logger.child({}, { level: "trace", redact: [] });
}

/** True when an object put in a line under some field has a field the redaction censors (`*.<name>`). */
export function mayHoldRedacted(values: Readonly<Record<string, unknown>>): boolean {
  for (const name in values) if (REDACTED_FIELD_NAMES.has(name)) return true;
  return false;
}
