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
 * Creates the structured JSON logger; `destination` lets tests capture lines. Without one it writes to
 * stdout asynchronously: a line is queued and written by the event loop, and lines queued while a write
 * is in flight go out together, so a request does not pay a write system call for its access line.
 * pino writes what is still queued synchronously when the process exits, so no line is lost.
 */
export function createLogger(
  options: { level?: string; destination?: NodeJS.WritableStream } = {},
): Logger {
  const opts: LoggerOptions = {
    level: options.level ?? process.env["GW_LOG_LEVEL"] ?? "info",
    base: { service: "gw" },
    redact: { paths: REDACT_PATHS, censor: "[redacted]" },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return pino(opts, options.destination ?? pino.destination({ dest: 1, sync: false }));
}
