/**
 * Per-minute request totals for the usage history: requests, errors, tokens, spend, a fixed latency
 * histogram, and tallies by virtual key, model and tool. Counting runs on the request path, so it only
 * adds to in-memory numbers; the usage flush writes the buckets off the path and readers merge them.
 * Percentiles come from the histogram (bucket counts add up across minutes and nodes; samples would not).
 */
import { randomUUID } from "node:crypto";

/** Upper bounds (ms) of the latency buckets; a last bucket takes everything slower. */
export const LATENCY_BOUNDS_MS: readonly number[] = [5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000];

/** A minute in milliseconds. */
export const MINUTE_MS = 60_000;

/** Entries kept per tally map of a bucket when it is written; the busiest stay. */
export const TALLY_CAP = 50;

/** Requests, tokens and spend of one key, model or tool. */
export interface Tally {
  requests: number;
  tokens: number;
  costUsd: number;
}

/** One minute's totals. */
export interface MinuteBucket {
  /** The minute's start, ms since the epoch. */
  minute: number;
  requests: number;
  errors: number;
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
  /** Counts per latency bucket (LATENCY_BOUNDS_MS, then the overflow bucket). */
  latency: number[];
  keys: Record<string, Tally>;
  models: Record<string, Tally>;
  tools: Record<string, Tally>;
}

/** An empty bucket for the minute starting at `minute`. */
export function emptyBucket(minute: number): MinuteBucket {
  return { minute, requests: 0, errors: 0, inputTokens: 0, outputTokens: 0, costUsd: 0, latency: new Array<number>(LATENCY_BOUNDS_MS.length + 1).fill(0), keys: {}, models: {}, tools: {} };
}

function addUsage(tally: Tally, tokens: number, costUsd: number): void {
  tally.tokens += tokens;
  tally.costUsd += costUsd;
}

/**
 * The name a tally is kept under. Model names are the caller's text, and a NUL in one would make the whole
 * minute's row one the database refuses, over and over: it is kept as U+FFFD instead.
 */
function storableName(name: string): string {
  return name.includes("\u0000") ? name.replaceAll("\u0000", "\uFFFD") : name;
}

function tallyOf(map: Record<string, Tally>, name: string): Tally {
  const key = storableName(name);
  let tally = map[key];
  if (tally === undefined) {
    tally = { requests: 0, tokens: 0, costUsd: 0 };
    map[key] = tally;
  }
  return tally;
}

function addTallies(into: Record<string, Tally>, from: Readonly<Record<string, Tally>>): void {
  for (const [name, t] of Object.entries(from)) {
    const tally = tallyOf(into, name);
    tally.requests += t.requests;
    tally.tokens += t.tokens;
    tally.costUsd += t.costUsd;
  }
}

/** Adds `from` into `into` (histograms add bucket by bucket). */
export function addBucket(into: MinuteBucket, from: MinuteBucket): void {
  into.requests += from.requests;
  into.errors += from.errors;
  into.inputTokens += from.inputTokens;
  into.outputTokens += from.outputTokens;
  into.costUsd += from.costUsd;
  for (let i = 0; i < into.latency.length; i++) into.latency[i] = (into.latency[i] ?? 0) + (from.latency[i] ?? 0);
  addTallies(into.keys, from.keys);
  addTallies(into.models, from.models);
  addTallies(into.tools, from.tools);
}

/** The `q` quantile (0..1) of a histogram in ms, interpolated within its bucket; 0 when it is empty. */
export function latencyQuantile(histogram: readonly number[], q: number): number {
  const total = histogram.reduce((a, b) => a + b, 0);
  if (total === 0) return 0;
  const rank = q * total;
  let seen = 0;
  for (let i = 0; i < histogram.length; i++) {
    const n = histogram[i] ?? 0;
    if (n > 0 && seen + n >= rank) {
      const low = i === 0 ? 0 : (LATENCY_BOUNDS_MS[i - 1] ?? 0);
      // The overflow bucket has no upper bound: its lower bound is the best estimate there is.
      const high = LATENCY_BOUNDS_MS[i] ?? low;
      return low + (high - low) * Math.min(1, Math.max(0, (rank - seen) / n));
    }
    seen += n;
  }
  return LATENCY_BOUNDS_MS[LATENCY_BOUNDS_MS.length - 1] ?? 0;
}

/** The busiest `cap` entries of a tally map, by requests then spend. */
export function capTallies(map: Readonly<Record<string, Tally>>, cap = TALLY_CAP): Record<string, Tally> {
  const entries = Object.entries(map);
  if (entries.length <= cap) return { ...map };
  entries.sort((a, b) => b[1].requests - a[1].requests || b[1].costUsd - a[1].costUsd);
  return Object.fromEntries(entries.slice(0, cap));
}

/** The key name recorded for a request without a virtual key. */
export const NO_KEY = "(no virtual key)";

/** This process's minute buckets not yet written, plus the current one. */
export class UsageHistory {
  /** Names this process's rows; a restart starts new rows, and readers add every node's rows up. */
  readonly nodeId = randomUUID();
  readonly #buckets = new Map<number, MinuteBucket>();
  readonly #dirty = new Set<number>();
  /**
   * The bucket the last event went to, already marked changed: a request records three events in its
   * minute, and the map and set lookups (keyed by a minute too large to be a small integer) were most of
   * their cost. Forgotten when the changed buckets are handed out.
   */
  #current: MinuteBucket | undefined;

  constructor(private readonly now: () => number = Date.now) {}

  #bucket(): MinuteBucket {
    const now = this.now();
    const current = this.#current;
    if (current !== undefined && now >= current.minute && now < current.minute + MINUTE_MS) return current;
    const minute = Math.floor(now / MINUTE_MS) * MINUTE_MS;
    let bucket = this.#buckets.get(minute);
    if (bucket === undefined) {
      bucket = emptyBucket(minute);
      this.#buckets.set(minute, bucket);
    }
    this.#dirty.add(minute);
    this.#current = bucket;
    return bucket;
  }

  /** A request's outcome (served or failed), once per request. */
  request(keyName: string, model: string, failed: boolean): void {
    const b = this.#bucket();
    b.requests++;
    if (failed) b.errors++;
    tallyOf(b.keys, keyName).requests++;
    tallyOf(b.models, model).requests++;
  }

  /** Tokens and spend of a provider answer. */
  usage(keyName: string, model: string, inputTokens: number, outputTokens: number, costUsd: number): void {
    const b = this.#bucket();
    b.inputTokens += inputTokens;
    b.outputTokens += outputTokens;
    b.costUsd += costUsd;
    addUsage(tallyOf(b.keys, keyName), inputTokens + outputTokens, costUsd);
    addUsage(tallyOf(b.models, model), inputTokens + outputTokens, costUsd);
  }

  /** The latency of one provider call, in ms. */
  latency(ms: number): void {
    const b = this.#bucket();
    let i = 0;
    while (i < LATENCY_BOUNDS_MS.length && ms > (LATENCY_BOUNDS_MS[i] ?? 0)) i++;
    b.latency[i] = (b.latency[i] ?? 0) + 1;
  }

  /** A tool call the gateway ran. */
  tool(name: string): void {
    tallyOf(this.#bucket().tools, name).requests++;
  }

  /**
   * The buckets changed since the last call, for writing; buckets of finished minutes are dropped from
   * memory once handed out (`keepMs` before now stays, as late events may still reach it). A failed write
   * hands them back with `restore`.
   */
  takeDirty(keepMs = MINUTE_MS): MinuteBucket[] {
    const out: MinuteBucket[] = [];
    this.#current = undefined;
    for (const minute of this.#dirty) {
      const bucket = this.#buckets.get(minute);
      if (bucket !== undefined) out.push(bucket);
    }
    this.#dirty.clear();
    const oldest = this.now() - keepMs - MINUTE_MS;
    for (const minute of this.#buckets.keys()) if (minute < oldest) this.#buckets.delete(minute);
    return out;
  }

  /** Marks buckets whose write failed as changed again, so the next flush retries them. */
  restore(buckets: readonly MinuteBucket[]): void {
    for (const bucket of buckets) {
      if (!this.#buckets.has(bucket.minute)) this.#buckets.set(bucket.minute, bucket);
      this.#dirty.add(bucket.minute);
    }
  }

  /** This process's buckets still in memory: fresher than their written rows. */
  inMemory(): readonly MinuteBucket[] {
    return [...this.#buckets.values()];
  }
}
