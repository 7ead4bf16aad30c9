/**
 * Budget and rate-limit counters shared by every node on one database (table shared_counter). A node
 * leases a slice of a counter in one atomic statement: the row is locked by the upsert, so concurrent
 * leases from any number of nodes never grant more than the limit between them.
 */
import type { Store } from "./store.js";

/** One lease: at least `want` (capped at what remains), more when plenty remains. */
export interface LeaseRequest {
  key: string;
  /** The window a node would open when the stored one has ended or none exists, in ms since the epoch. */
  start: number;
  end: number;
  /** The window's fixed length in ms, or 0 when it follows the calendar (the node's start and end are used). */
  lengthMs: number;
  now: number;
  want: number;
  max: number;
  /** Counts whole units (requests, tokens): slices are rounded down. */
  integral: boolean;
  /** Live nodes: a slice is at most what remains divided by twice this. */
  nodes: number;
}

/** What a lease granted, in which window. */
export interface LeaseGrant {
  start: number;
  end: number;
  granted: number;
  /** The counter's total after the grant. */
  used: number;
}

/** Where shared counters live: the database, or Redis. */
export interface CounterBackend {
  lease(request: LeaseRequest): Promise<LeaseGrant>;
  /** Adds `amount` (negative: gives back) to the counter when its window still starts at `start`. */
  adjust(key: string, start: number, amount: number): Promise<void>;
}

/** The grant for a counter at `used` (an SQL expression over the parameters `p`). */
function grant(used: string): string {
  const slice = `case when p.whole then floor((p.mx - ${used}) / (2 * p.nodes)) else (p.mx - ${used}) / (2 * p.nodes) end`;
  return `least(greatest(p.want, ${slice}), greatest(p.mx - ${used}, 0))`;
}

// A window that has ended rolls forward in whole lengths from its last start (or, when it follows the
// calendar, to the window the node computed); `base` is what the window already holds.
const LEASE_SQL = `with p as (select ?::text k, ?::bigint st, ?::bigint en, ?::bigint len, ?::bigint now, ?::float8 want, ?::float8 mx, ?::boolean whole, ?::float8 nodes)
insert into shared_counter as s (counter_key, window_start, window_end, used, last_grant, updated_at)
select p.k, p.st, p.en, ${grant("0")}, ${grant("0")}, now() from p
on conflict (counter_key) do update set (window_start, window_end, used, last_grant, updated_at) = (
  select w.ws, w.we, w.base + ${grant("w.base")}, ${grant("w.base")}, now()
  from p, lateral (select
    case when p.now < s.window_end then s.window_start when p.len > 0 then s.window_start + ((p.now - s.window_start) / p.len) * p.len else p.st end as ws,
    case when p.now < s.window_end then s.window_end when p.len > 0 then s.window_start + ((p.now - s.window_start) / p.len) * p.len + p.len else p.en end as we,
    case when p.now < s.window_end then s.used else 0 end as base) w)
returning window_start, window_end, used, last_grant`;

/** The shared_counter table. */
export class SharedCounterTable implements CounterBackend {
  readonly #store: Store;

  constructor(store: Store) {
    this.#store = store;
  }

  async lease(request: LeaseRequest): Promise<LeaseGrant> {
    const { key, start, end, lengthMs, now, want, max, integral, nodes } = request;
    const rows = await this.#store
      .fork()
      .getConnection()
      .execute<Array<Record<string, unknown>>>(LEASE_SQL, [key, start, end, lengthMs, now, want, max, integral, Math.max(1, nodes)]);
    const row = rows[0];
    if (row === undefined) throw new Error(`leasing shared counter ${key} returned no row`);
    return { start: Number(row["window_start"]), end: Number(row["window_end"]), granted: Number(row["last_grant"]), used: Number(row["used"]) };
  }

  async adjust(key: string, start: number, amount: number): Promise<void> {
    await this.#store
      .fork()
      .getConnection()
      .execute("update shared_counter set used = greatest(used + ?::float8, 0), updated_at = now() where counter_key = ? and window_start = ?", [amount, key, start]);
  }
}
