/**
 * Recognising a database that cannot be reached (connection refused, reset or cut, the server shutting down,
 * no pooled connection in time), so callers can answer "try again" (503) instead of a 500.
 */
import { ConnectionException } from "@mikro-orm/core";
import { someCause } from "./error-causes.js";

/** Socket errors of a connection that was refused, reset or timed out. */
const SOCKET_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "ENOTFOUND", "EAI_AGAIN"]);
/** SQLSTATEs of a server going away: admin_shutdown, crash_shutdown, cannot_connect_now. */
const SERVER_GONE = new Set(["57P01", "57P02", "57P03"]);
/** What node-postgres and knex say when a connection ends under a query, or none frees up in time. */
const MESSAGES = [/^Connection terminated/, /^Client has encountered a connection error/, /^Knex: Timeout acquiring a connection/, /Client was closed and is not queryable/];

/** True when `err` (or what it wraps) says the database is out of reach rather than that the query was wrong. */
export function isDatabaseUnavailable(err: unknown): boolean {
  return someCause(err, (current) => {
    if (current instanceof ConnectionException) return true;
    const { code, message } = current as { code?: unknown; message?: unknown };
    if (typeof code === "string" && (SOCKET_CODES.has(code) || SERVER_GONE.has(code) || code.startsWith("08"))) return true;
    return typeof message === "string" && MESSAGES.some((pattern) => pattern.test(message));
  });
}
