/** Looking through an error and what it wraps: the ORM and the driver each wrap what they were given. */

/** How many wrappers deep a cause is looked for. */
const MAX_DEPTH = 5;

/** True when `test` holds for `err` or for an error it wraps (`cause`), up to MAX_DEPTH deep. */
export function someCause(err: unknown, test: (error: object) => boolean): boolean {
  for (let current = err, depth = 0; typeof current === "object" && current !== null && depth < MAX_DEPTH; depth++) {
    if (test(current)) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}
