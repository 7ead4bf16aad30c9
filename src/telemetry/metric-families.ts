/**
 * Counter and histogram families that aggregate per label set. prom-client validates and hashes the
 * label object on every inc() and observe(), which was the largest single cost of recording; here a
 * label set is resolved once into a LabelSet (its capped labels and a string key) and every sample is
 * a Map lookup on that key plus a few additions. The families implement the shape prom-client's
 * Registry formats (name, help, type, get()), so the exposition text is still prom-client's.
 */

/** Label name -> value, in exposition order. */
export type Labels = Record<string, string>;

/** A resolved label set: the labels as exposed and the key that identifies the series. */
export interface LabelSet {
  readonly labels: Labels;
  readonly key: string;
}

/** One line of a family's exposition, as prom-client's Registry formats it. */
interface ExposedValue {
  value: number;
  labels: Record<string, string | number>;
  metricName?: string;
}

/** What prom-client's Registry reads from a registered metric. */
interface ExposedMetric {
  name: string;
  help: string;
  type: "counter" | "histogram";
  values: ExposedValue[];
  aggregator: "sum";
}

/** Appends one value to a series key; the length prefix keeps any two distinct value lists apart. */
export function appendKey(key: string, value: string): string {
  return `${key}${value.length}:${value}`;
}

/** A counter: one running total per label set. */
export class CounterFamily {
  readonly type = "counter";
  private readonly series = new Map<string, { labels: Labels; value: number }>();

  constructor(
    readonly name: string,
    readonly help: string,
    /** The label names in exposition order (read by tests and tools the way prom-client exposes them). */
    readonly labelNames: readonly string[],
  ) {}

  /** Adds `value` (finite and >= 0, checked by the caller) to the series of `set`. */
  inc(set: LabelSet, value = 1): void {
    const series = this.series.get(set.key);
    if (series === undefined) this.series.set(set.key, { labels: set.labels, value });
    else series.value += value;
  }

  /** The family as prom-client's Registry formats it. */
  get(): ExposedMetric {
    const values: ExposedValue[] = [];
    for (const s of this.series.values()) values.push({ value: s.value, labels: s.labels });
    return { name: this.name, help: this.help, type: this.type, values, aggregator: "sum" };
  }
}

/** One histogram series: per-bucket counts (not cumulative), the sum and the count. */
interface HistogramSeries {
  labels: Labels;
  counts: Float64Array;
  sum: number;
  count: number;
}

/** A histogram with fixed upper bounds; +Inf is implied. */
export class HistogramFamily {
  readonly type = "histogram";
  private readonly series = new Map<string, HistogramSeries>();

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
    /** Upper bounds, ascending. */
    readonly buckets: readonly number[],
  ) {}

  /** Counts `value` (finite, checked by the caller) `times` times in the series of `set`. */
  observe(set: LabelSet, value: number, times = 1): void {
    let series = this.series.get(set.key);
    if (series === undefined) {
      series = { labels: set.labels, counts: new Float64Array(this.buckets.length), sum: 0, count: 0 };
      this.series.set(set.key, series);
    }
    const buckets = this.buckets;
    for (let i = 0; i < buckets.length; i++) {
      if (value <= (buckets[i] as number)) {
        series.counts[i] = (series.counts[i] as number) + times;
        break;
      }
    }
    series.sum += value * times;
    series.count += times;
  }

  /** The family as prom-client's Registry formats it: cumulative buckets, +Inf, then _sum and _count per series. */
  get(): ExposedMetric {
    const values: ExposedValue[] = [];
    const bucketName = `${this.name}_bucket`;
    for (const s of this.series.values()) {
      let cumulative = 0;
      for (let i = 0; i < this.buckets.length; i++) {
        cumulative += s.counts[i] as number;
        values.push({ metricName: bucketName, labels: { ...s.labels, le: this.buckets[i] as number }, value: cumulative });
      }
      values.push({ metricName: bucketName, labels: { ...s.labels, le: "+Inf" }, value: s.count });
      values.push({ metricName: `${this.name}_sum`, labels: s.labels, value: s.sum });
      values.push({ metricName: `${this.name}_count`, labels: s.labels, value: s.count });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: "sum" };
  }
}
