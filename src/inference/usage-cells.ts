/**
 * The arithmetic of usage counters several nodes write into the same stored rows. Each node adds what it
 * counted since the store last saw its window (a delta), never its whole count, so what every node counted
 * survives; it then takes the stored total back as its own count plus what it counted meanwhile. Nodes that
 * opened the same rolling window at different moments meet in the earlier one while both still run.
 */

/** One window's running total, from its start (ms since the epoch). */
export interface Cell {
  start: number;
  used: number;
}

/** The end of the window that starts at `start`, or null when the limit it belongs to is no longer known. */
export type WindowEndOf = (start: number) => number | null;

/** What a node counted that the store has not seen: all of its window unless the store saw part of it. */
export function deltaOf(local: Cell, seen: Cell | undefined): Cell | null {
  if (seen === undefined || seen.start !== local.start) return local.used === 0 ? null : { ...local };
  const used = local.used - seen.used;
  return used === 0 ? null : { start: local.start, used };
}

/** The stored window once a node's delta is added to it. */
export function mergeCell(stored: Cell | null, delta: Cell, endOf: WindowEndOf, now: number): Cell {
  if (stored === null) return { ...delta };
  if (stored.start === delta.start) return { start: stored.start, used: stored.used + delta.used };
  const storedEnd = endOf(stored.start);
  const deltaEnd = endOf(delta.start);
  if (storedEnd === null || deltaEnd === null) {
    // Without the limit there is no telling whether the windows overlap: the newer window is the current one.
    return delta.start > stored.start ? { ...delta } : stored;
  }
  const storedRuns = now < storedEnd;
  const deltaRuns = now < deltaEnd;
  if (storedRuns && deltaRuns) return { start: Math.min(stored.start, delta.start), used: stored.used + delta.used };
  if (deltaRuns) return { ...delta };
  if (storedRuns) return stored;
  return delta.start > stored.start ? { ...delta } : stored;
}

/**
 * What a node's counter becomes once the store answered `stored` for it: the stored total plus what the node
 * counted after `snapshot` was taken; null when the node keeps its own (it counted in a window the store has
 * not seen, or dropped the counter since). `adopted` tells whether the store now holds all but that growth.
 */
export function adoptCell(local: Cell | null, snapshot: Cell | undefined, stored: Cell): { cell: Cell; adopted: true } | { cell: null; adopted: false } {
  if (local === null) return snapshot === undefined ? { cell: { ...stored }, adopted: true } : { cell: null, adopted: false };
  if (snapshot === undefined || snapshot.start !== local.start) return { cell: null, adopted: false };
  return { cell: { start: stored.start, used: stored.used + (local.used - snapshot.used) }, adopted: true };
}
