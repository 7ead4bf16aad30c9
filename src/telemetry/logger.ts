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

/** The three digits of each millisecond of a second, with the field's closing `Z"`. */
const MILLIS_TEXT: readonly string[] = Array.from({ length: 1000 }, (_, ms) => `${String(ms).padStart(3, "0")}Z"`);

/**
 * pino's ISO-8601 `time` field (with its leading comma) for a time in epoch milliseconds, formatted once per
 * millisecond and its date and time of day once per second: under load many lines share each millisecond,
 * and `Date#toISOString` costs several times the rest of an access line.
 */
export class TimeField {
  private ms = -1;
  private text = "";
  private second = Number.NaN;
  private secondText = "";

  /** The field for `now` (epoch milliseconds, a whole number). */
  at(now: number): string {
    if (now === this.ms) return this.text;
    const second = Math.floor(now / 1000);
    if (second !== this.second) {
      this.second = second;
      // "YYYY-MM-DDTHH:MM:SS." of every year from 0 to 9999, the only ones a log's clock gives.
      this.secondText = `,"time":"${new Date(now).toISOString().slice(0, 20)}`;
    }
    this.ms = now;
    this.text = this.secondText + MILLIS_TEXT[now - second * 1000];
    return this.text;
  }
}

const timeField = new TimeField();

/** The `time` field of a line written now (see TimeField). */
export function isoTimeOncePerMs(): string {
  return timeField.at(Date.now());
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
