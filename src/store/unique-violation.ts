/** Recognising a unique-constraint failure, so callers can answer "already exists" instead of a 500. */
import { UniqueConstraintViolationException } from "@mikro-orm/core";

const PG_UNIQUE_VIOLATION = "23505";

/** True when `err` is a violated unique constraint or primary key, as MikroORM or the driver reports it. */
export function isUniqueViolation(err: unknown): boolean {
  if (err instanceof UniqueConstraintViolationException) return true;
  // Raw driver errors (e.g. from em.getConnection().execute) carry only the SQLSTATE.
  return typeof err === "object" && err !== null && (err as { code?: unknown }).code === PG_UNIQUE_VIOLATION;
}
