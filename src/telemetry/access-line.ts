/**
 * The access line every request writes, serialised here: its shape is fixed, and pino's general path
 * (merging the object, serialising it field by field, the redaction pass) cost several times as much per
 * line. The line is the one pino writes (level, time, the logger's bindings, the fields, msg), to the
 * logger's own destination; a line whose dimensions hold a field the redaction censors goes through the
 * logger instead.
 */
import { destinationOf, isoTimeOncePerMs, mayHoldRedacted, type Logger } from "./logger.js";

/** What a request's access line says. */
export interface AccessLineFields {
  /** The route template, never the raw path. */
  path: string;
  method: string;
  status: number;
  duration_ms: number;
  /** The request's x-gw-dim-* values. */
  dims: Readonly<Record<string, string>>;
  /** The request's trace, when it is traced: lowercase hex, as the tracer writes ids, so written as it is. */
  trace_id?: string;
  span_id?: string;
}

/** The levels an access line is written at. */
export type AccessLevel = "info" | "debug";

/** Writes a request's access line at `level`; the caller has asked the logger whether that level is on. */
export type AccessLog = (level: AccessLevel, fields: AccessLineFields) => void;

/** The access log of `logger`: written by hand when createLogger made the logger, else through the logger. */
export function accessLogOf(logger: Logger): AccessLog {
  const destination = destinationOf(logger);
  if (destination === undefined) return (level, fields) => logger[level](fields, "request");
  const bindings = JSON.stringify(logger.bindings());
  // pino puts the bindings' members between the time and the line's own fields.
  const bound = bindings === "{}" ? "" : `,${bindings.slice(1, -1)}`;
  const opening: Readonly<Record<AccessLevel, string>> = { info: `{"level":${logger.levels.values["info"]}`, debug: `{"level":${logger.levels.values["debug"]}` };
  return (level, fields) => {
    if (mayHoldRedacted(fields.dims)) {
      logger[level](fields, "request");
      return;
    }
    const trace = fields.trace_id === undefined || fields.span_id === undefined ? "" : `,"trace_id":"${fields.trace_id}","span_id":"${fields.span_id}"`;
    destination.write(
      `${opening[level]}${isoTimeOncePerMs()}${bound},"path":${JSON.stringify(fields.path)},"method":${JSON.stringify(fields.method)},"status":${fields.status},"duration_ms":${fields.duration_ms},"dims":${dimensionsText(fields.dims)}${trace},"msg":"request"}\n`,
    );
  };
}

/** The dimensions as JSON; most requests carry none. */
function dimensionsText(dims: Readonly<Record<string, string>>): string {
  for (const _ in dims) return JSON.stringify(dims);
  return "{}";
}
