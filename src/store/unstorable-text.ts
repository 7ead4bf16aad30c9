/**
 * Text PostgreSQL cannot hold: U+0000 (NUL), in text and jsonb alike. The ORM writes a statement's values into
 * its text, where a NUL cuts the statement short; the server then drops the connection, which would read as the
 * database being down (a 503) for what is bad input. Every ORM statement passes refuseUnstorableText first (the
 * ORM's onQuery hook), so such a value is refused before it is sent, whichever path it came in by; a NUL escaped
 * inside a JSON value reaches the server and comes back as an error isUnstorableText recognises.
 */
import { GatewayError } from "../errors.js";
import { someCause } from "./error-causes.js";

/** SQLSTATEs of text the server cannot store: character_not_in_repertoire, untranslatable_character. */
const UNSTORABLE_SQLSTATES = new Set(["22021", "22P05"]);
/** How deep nested statement values are searched (arrays of arrays, JSON objects). */
const MAX_DEPTH = 8;

/** The 400 for a value that contains a NUL character. */
export class UnstorableTextError extends GatewayError {
  /**
   * The ORM turns an error thrown under a query into its own exception, copying the error's own fields onto it;
   * this one survives the copy, so isUnstorableText still knows the error for what it is.
   */
  readonly unstorableText = true;

  constructor(cause?: unknown) {
    super("invalid_argument", "a value in the request contains a NUL character (U+0000), which the database cannot store or look up: remove it and retry", {
      type: "invalid_request",
      httpStatus: 400,
      ...(cause === undefined ? {} : { cause }),
    });
  }
}

function holdsNul(value: unknown, depth: number): boolean {
  if (typeof value === "string") return value.includes("\u0000");
  if (depth >= MAX_DEPTH || typeof value !== "object" || value === null) return false;
  if (Array.isArray(value)) return value.some((item) => holdsNul(item, depth + 1));
  // Buffers, dates and other class instances are sent in a form of their own, never as raw text.
  if (Object.getPrototypeOf(value) !== Object.prototype) return false;
  return Object.entries(value).some(([key, item]) => key.includes("\u0000") || holdsNul(item, depth + 1));
}

/** The ORM's onQuery hook: returns `sql` unchanged, or throws the 400 when it or a value holds a NUL. */
export function refuseUnstorableText(sql: string, params: readonly unknown[]): string {
  if (sql.includes("\u0000") || params.some((param) => holdsNul(param, 0))) throw new UnstorableTextError();
  return sql;
}

/** True when `err` (or what it wraps) is text the database cannot store: refused here, or by the server. */
export function isUnstorableText(err: unknown): boolean {
  return someCause(err, (current) => {
    const { code, unstorableText } = current as { code?: unknown; unstorableText?: unknown };
    return unstorableText === true || (typeof code === "string" && UNSTORABLE_SQLSTATES.has(code));
  });
}
