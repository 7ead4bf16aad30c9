/**
 * The usage history in the database: each node's minute buckets (table usage_minute), written by the usage
 * flush, swept after RETENTION_MS, and read back as a series over 1 h, 24 h or 7 d with this node's
 * unwritten minutes taken from memory.
 */
import { UsageMinuteRecord, type Store } from "../store/index.js";
import { MINUTE_MS, addBucket, capTallies, emptyBucket, type MinuteBucket, type Tally, type UsageHistory } from "../telemetry/usage-history.js";

/** Minute buckets older than this are deleted. */
export const RETENTION_MS = 7 * 24 * 60 * MINUTE_MS;

/** The ranges a reader may ask for, with the width of one point of their series. */
export const HISTORY_RANGES = {
  "1h": { spanMs: 60 * MINUTE_MS, stepMs: MINUTE_MS },
  "24h": { spanMs: 24 * 60 * MINUTE_MS, stepMs: 15 * MINUTE_MS },
  "7d": { spanMs: RETENTION_MS, stepMs: 120 * MINUTE_MS },
} as const;

/** A range name. */
export type HistoryRange = keyof typeof HISTORY_RANGES;

/** A range's series: one bucket per step, oldest first, and the whole range's sum. */
export interface HistorySeries {
  stepMs: number;
  points: MinuteBucket[];
  total: MinuteBucket;
}

function bucketOf(rec: UsageMinuteRecord): MinuteBucket {
  return {
    minute: rec.minute.getTime(),
    requests: rec.requests,
    errors: rec.errors,
    inputTokens: rec.inputTokens,
    outputTokens: rec.outputTokens,
    costUsd: rec.costUsd,
    latency: [...rec.latency],
    keys: rec.keys,
    models: rec.models,
    tools: rec.tools,
  };
}

/** Writes, sweeps and reads the minute buckets. */
export class UsageHistoryStore {
  constructor(
    private readonly store: Store,
    private readonly history: UsageHistory,
    private readonly now: () => number = Date.now,
  ) {}

  /** Writes the buckets changed since the last write (each replaces its row); a failure hands them back and rethrows. */
  async write(): Promise<void> {
    const dirty = this.history.takeDirty();
    if (dirty.length === 0) return;
    try {
      await this.store.fork().upsertMany(
        UsageMinuteRecord,
        dirty.map((b) => ({
          nodeId: this.history.nodeId,
          minute: new Date(b.minute),
          requests: b.requests,
          errors: b.errors,
          inputTokens: b.inputTokens,
          outputTokens: b.outputTokens,
          costUsd: b.costUsd,
          latency: [...b.latency],
          keys: capTallies(b.keys),
          models: capTallies(b.models),
          tools: capTallies(b.tools),
        })),
      );
    } catch (err) {
      this.history.restore(dirty);
      throw err;
    }
  }

  /** Deletes every node's buckets older than the retention period; answers how many went. */
  async sweep(): Promise<number> {
    return this.store.fork().nativeDelete(UsageMinuteRecord, { minute: { $lt: new Date(this.now() - RETENTION_MS) } });
  }

  /** The series of `range` ending now, summed over every node. */
  async read(range: HistoryRange): Promise<HistorySeries> {
    const { spanMs, stepMs } = HISTORY_RANGES[range];
    const end = Math.floor(this.now() / stepMs) * stepMs + stepMs;
    const start = end - spanMs;
    const rows = await this.store.fork().find(UsageMinuteRecord, { minute: { $gte: new Date(start) } });
    const fresh = this.history.inMemory().filter((b) => b.minute >= start);
    const freshMinutes = new Set(fresh.map((b) => b.minute));
    const buckets = [
      ...rows.filter((r) => r.nodeId !== this.history.nodeId || !freshMinutes.has(r.minute.getTime())).map(bucketOf),
      ...fresh,
    ];
    const points: MinuteBucket[] = [];
    for (let t = start; t < end; t += stepMs) points.push(emptyBucket(t));
    const total = emptyBucket(start);
    for (const b of buckets) {
      const point = points[Math.floor((b.minute - start) / stepMs)];
      if (point === undefined) continue;
      addBucket(point, b);
      addBucket(total, b);
    }
    return { stepMs, points, total };
  }
}

/** The `n` busiest entries of a tally map, by spend then requests. */
export function topTallies(map: Readonly<Record<string, Tally>>, n: number): { name: string; tally: Tally }[] {
  return Object.entries(map)
    .map(([name, tally]) => ({ name, tally }))
    .sort((a, b) => b.tally.costUsd - a.tally.costUsd || b.tally.requests - a.tally.requests || b.tally.tokens - a.tally.tokens)
    .slice(0, n);
}
