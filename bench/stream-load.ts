/**
 * The bench's streaming client: answers streamed as SSE read to their end over an undici Pool, timing each
 * one's first body byte, one after another on each of a pool's connections. A failed stream is counted,
 * never timed.
 */
import { performance } from "node:perf_hooks";
import { Pool } from "undici";

/** Non-200s and failures of one target, with a few distinct messages to show. */
export class Errors {
  count = 0;
  readonly samples = new Set<string>();
  add(message: string): void {
    this.count++;
    if (this.samples.size < 5) this.samples.add(message.slice(0, 300));
  }
}

/** The value at quantile `q` (0-1) of ascending `sorted`; NaN when it is empty. */
export function percentile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? Number.NaN;
}

/** The POST that asks for a streamed answer. */
export interface StreamRequest {
  path: string;
  headers: Record<string, string>;
  body: string;
}

/** One streaming request read to its end; the time from send to its first body byte, or null when it failed. */
export async function streamOnce(pool: Pool, request: StreamRequest, errors: Errors): Promise<number | null> {
  try {
    const sent = performance.now();
    const res = await pool.request({ method: "POST", path: request.path, headers: request.headers, body: request.body });
    let first: number | null = null;
    let text = "";
    for await (const part of res.body) {
      first ??= performance.now();
      text += (part as Buffer).toString("utf8");
    }
    if (res.statusCode === 200 && first !== null && text.includes("data: [DONE]")) return first - sent;
    errors.add(`stream HTTP ${res.statusCode}: ${text.slice(0, 200)}`);
  } catch (err) {
    errors.add(`stream: ${String(err)}`);
  }
  return null;
}

/** What concurrentStreams found: first-byte times (ms) and the streams completed per second. */
export interface StreamFigures {
  p50: number;
  p99: number;
  streamsPerSecond: number;
  requests: number;
}

/**
 * `connections` workers streaming one answer after another: `warmupMs` uncounted, then `seconds` counted;
 * `measuring` is called as the counted part begins (to read a process's CPU time from there).
 */
export async function concurrentStreams(url: string, request: StreamRequest, connections: number, warmupMs: number, seconds: number, errors: Errors, measuring?: () => void): Promise<StreamFigures> {
  const pool = new Pool(url, { connections, pipelining: 1 });
  const loop = async (until: number, samples: number[] | null): Promise<void> => {
    await Promise.all(
      Array.from({ length: connections }, async () => {
        while (performance.now() < until) {
          const ttfb = await streamOnce(pool, request, errors);
          if (ttfb !== null) samples?.push(ttfb);
        }
      }),
    );
  };
  try {
    await loop(performance.now() + warmupMs, null);
    const samples: number[] = [];
    measuring?.();
    const started = performance.now();
    await loop(started + seconds * 1000, samples);
    const elapsed = performance.now() - started;
    const sorted = Float64Array.from(samples).sort();
    return { p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99), streamsPerSecond: (sorted.length * 1000) / elapsed, requests: sorted.length };
  } finally {
    await pool.close();
  }
}
