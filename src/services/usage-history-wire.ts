/** The usage history as GetUsageHistoryResponse: points with their percentiles and rates, totals, and the top keys, models and tools. */
import { invalidField } from "../errors.js";
import { latencyQuantile, type MinuteBucket, type Tally } from "../telemetry/usage-history.js";
import { HISTORY_RANGES, topTallies, type HistoryRange, type HistorySeries } from "../inference/usage-history-store.js";

/** Entries in each top list. */
const TOP_N = 5;

/** The range a request names; empty means the last hour, anything else unknown is a 400 naming the field. */
export function historyRangeOf(raw: string): HistoryRange {
  const range = raw === "" ? "1h" : raw;
  if (!Object.hasOwn(HISTORY_RANGES, range)) throw invalidField("range", `must be one of ${Object.keys(HISTORY_RANGES).join(", ")}, got "${raw}"`);
  return range as HistoryRange;
}

function pointOf(b: MinuteBucket, seconds: number) {
  return {
    start: new Date(b.minute).toISOString(),
    requests: BigInt(b.requests),
    errors: BigInt(b.errors),
    errorRatio: b.requests > 0 ? b.errors / b.requests : 0,
    requestsPerSecond: b.requests / seconds,
    p50LatencyMs: latencyQuantile(b.latency, 0.5),
    p95LatencyMs: latencyQuantile(b.latency, 0.95),
    inputTokens: BigInt(Math.round(b.inputTokens)),
    outputTokens: BigInt(Math.round(b.outputTokens)),
    costUsd: b.costUsd,
  };
}

function tallies(map: Readonly<Record<string, Tally>>) {
  return topTallies(map, TOP_N).map(({ name, tally }) => ({ name, requests: BigInt(tally.requests), tokens: BigInt(Math.round(tally.tokens)), costUsd: tally.costUsd }));
}

/** The response message of a series. */
export function usageHistoryMessage(range: HistoryRange, series: HistorySeries) {
  const stepSeconds = series.stepMs / 1000;
  return {
    range,
    stepSeconds,
    points: series.points.map((p) => pointOf(p, stepSeconds)),
    totals: pointOf(series.total, (series.points.length * series.stepMs) / 1000),
    topKeys: tallies(series.total.keys),
    topModels: tallies(series.total.models),
    topTools: tallies(series.total.tools),
  };
}
