/**
 * Where the ORM connects, as discrete options. MikroORM ignores `?host=` in a client URL, so URLs are
 * parsed here and passed as host/port/user/dbName, which also lets a unix socket directory through.
 */
import { GatewayError } from "../errors.js";

/** Connection options for one PostgreSQL server (a host name, or a socket directory starting with "/"). */
export interface ConnectionTarget {
  host: string;
  port: number;
  user: string;
  password?: string;
  dbName: string;
  /** TLS for the connection; absent means plain TCP or a socket. */
  ssl?: { rejectUnauthorized: boolean };
}

const SSL_MODES = new Set(["disable", "allow", "prefer", "require", "verify-ca", "verify-full"]);

/** Parses postgres://user:password@host:port/db?host=/socket/dir&sslmode=require into a ConnectionTarget. */
export function parseDatabaseUrl(url: string): ConnectionTarget {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw invalidUrl("it is not a URL");
  }
  if (parsed.protocol !== "postgres:" && parsed.protocol !== "postgresql:") {
    throw invalidUrl(`the scheme must be postgres:// or postgresql://, not ${parsed.protocol}//`);
  }
  const socketDir = parsed.searchParams.get("host");
  // URL keeps the brackets of an IPv6 literal; the driver wants the bare address.
  const host = socketDir ?? parsed.hostname.replace(/^\[(.*)\]$/, "$1");
  if (host === "") throw invalidUrl("it names no host");
  const port = parsed.port === "" ? 5432 : Number(parsed.port);
  const user = decodeURIComponent(parsed.username) || "postgres";
  const dbName = decodeURIComponent(parsed.pathname.replace(/^\//, "")) || user;
  const target: ConnectionTarget = { host, port, user, dbName };
  if (parsed.password !== "") target.password = decodeURIComponent(parsed.password);
  const sslMode = parsed.searchParams.get("sslmode");
  if (sslMode !== null) {
    if (!SSL_MODES.has(sslMode)) throw invalidUrl(`sslmode=${sslMode} is not one of ${[...SSL_MODES].join(", ")}`);
    if (sslMode === "require") target.ssl = { rejectUnauthorized: false };
    if (sslMode === "verify-ca" || sslMode === "verify-full") target.ssl = { rejectUnauthorized: true };
  }
  return target;
}

function invalidUrl(reason: string): GatewayError {
  return new GatewayError("invalid_argument", `the database URL is invalid: ${reason} (expected postgres://user@host:5432/db)`, {
    field: "database_url",
  });
}
