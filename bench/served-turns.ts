/**
 * `npm run bench:turns`: two served targets in turns, for a change whose effect is smaller than the machine's
 * drift between the rounds of `npm run bench:outside`. Not a test: it prints figures and asserts nothing but
 * that every answer was a 200.
 *
 * Two targets: A, the gateway as `npm start` runs it with BENCH_TURNS_A's node flags after the launcher's (a
 * later flag wins), or with BENCH_TURNS_FLOOR=1 the floor (floor.ts, parsing the body); B, the gateway with
 * BENCH_TURNS_B's flags. Both start and stay up for a share of the pairs; after 3 s of warm-up each, they take
 * the same load in slices of BENCH_SECONDS (default 2) in the order A B, B A, ...: autocannon's 32-connection
 * JSON load, or with BENCH_TURNS_STREAMS=1 eight connections each streaming 50-chunk answers. Each pair's ratio
 * of B to A is taken within seconds, so the machine's drift moves both sides of it; the figures judged are the
 * medians of the pairs' ratios. The BENCH_TURNS_PAIRS pairs (default 12) are shared between BENCH_TURNS_STARTS
 * starts of the two (default 2), A started first in one and B in the next: two processes of one build differ
 * by a few per cent, often in favour of whichever started first, and one start would read that difference as
 * the change's. BENCH_DATABASE_URL runs the gateways on that PostgreSQL server.
 * BENCH_TURNS_A_MAIN and BENCH_TURNS_B_MAIN run another build's `dist/main.js` as that side, with this checkout's
 * launcher flags: two commits in turns (docs/benchmark.md shows how to build one beside the checkout).
 * BENCH_TURNS_TRACED names the sides (`a`, `b` or `ab`) that trace every request and export the spans over
 * OTLP/HTTP to a no-op collector the bench starts; the other side's tracing is off whatever the environment says.
 */
import autocannon from "autocannon";
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { median, OUTSIDE_CHAT_BODY, OUTSIDE_HEADERS, OUTSIDE_PATH, OUTSIDE_STREAM_BODY, startBundledChild, startServedGateway, WatchedChildren, type Served } from "./outside-processes.js";
import { cpuMs } from "./process-cpu.js";
import { concurrentStreams, Errors, type StreamRequest } from "./stream-load.js";

const flags = (name: string): string[] => (process.env[name] ?? "").split(" ").filter((flag) => flag !== "");
const A_FLAGS = flags("BENCH_TURNS_A");
const B_FLAGS = flags("BENCH_TURNS_B");
const mainOf = (name: string): string | undefined => {
  const main = process.env[name] || undefined;
  if (main !== undefined && !existsSync(main)) throw new Error(`${name}: no built gateway at ${main}; build that checkout first (npm run build)`);
  return main === undefined ? undefined : resolve(main);
};
const A_MAIN = mainOf("BENCH_TURNS_A_MAIN");
const B_MAIN = mainOf("BENCH_TURNS_B_MAIN");
const FLOOR = process.env["BENCH_TURNS_FLOOR"] === "1";
const STREAMS = process.env["BENCH_TURNS_STREAMS"] === "1";
const PAIRS = Number(process.env["BENCH_TURNS_PAIRS"] ?? 12);
const STARTS = Number(process.env["BENCH_TURNS_STARTS"] ?? 2);
const SECONDS = Number(process.env["BENCH_SECONDS"] ?? 2);
const DATABASE_URL = process.env["BENCH_DATABASE_URL"] || undefined;
if (!Number.isInteger(PAIRS) || PAIRS < 1 || !(SECONDS > 0)) throw new Error("BENCH_TURNS_PAIRS must be a positive integer and BENCH_SECONDS a positive number");
if (!Number.isInteger(STARTS) || STARTS < 1 || PAIRS % STARTS !== 0) throw new Error(`BENCH_TURNS_STARTS must be a positive integer that divides BENCH_TURNS_PAIRS (${PAIRS}), got ${String(process.env["BENCH_TURNS_STARTS"])}`);
if (FLOOR && (A_FLAGS.length > 0 || A_MAIN !== undefined)) throw new Error("BENCH_TURNS_A and BENCH_TURNS_A_MAIN set up the gateway A: with BENCH_TURNS_FLOOR=1 A is the floor");
const TRACED = process.env["BENCH_TURNS_TRACED"] ?? "";
if (!["", "a", "b", "ab"].includes(TRACED)) throw new Error(`BENCH_TURNS_TRACED must be a, b or ab (the sides that trace), got "${TRACED}"`);
if (FLOOR && TRACED.includes("a")) throw new Error("BENCH_TURNS_TRACED names A, which BENCH_TURNS_FLOOR=1 makes the floor: it has no tracing");

const BUILD_DIR = fileURLToPath(new URL("../.tmp/bench-outside", import.meta.url));
const STREAM_REQUEST: StreamRequest = { path: OUTSIDE_PATH, headers: OUTSIDE_HEADERS, body: OUTSIDE_STREAM_BODY };

/** One slice's figures: work done per second, CPU per unit of work (a request or a stream), and its latency. */
interface Slice {
  perSecond: number;
  cpuUs: number;
  /** The JSON load's p99 latency, or a stream's p50 time to first byte, in ms. */
  latencyMs: number;
}

const { peaks, watch } = new WatchedChildren();

/** One slice of load on `target`. */
async function slice(target: Served, seconds: number, errors: Errors): Promise<Slice> {
  if (STREAMS) {
    let cpuBefore = Number.NaN;
    const figures = await concurrentStreams(target.url, STREAM_REQUEST, 8, 500, seconds, errors, () => (cpuBefore = cpuMs(target.process.pid)));
    return { perSecond: figures.streamsPerSecond, cpuUs: ((cpuMs(target.process.pid) - cpuBefore) * 1000) / figures.requests, latencyMs: figures.p50 };
  }
  const cpuBefore = cpuMs(target.process.pid);
  const result = await autocannon({ url: target.url + OUTSIDE_PATH, method: "POST", headers: OUTSIDE_HEADERS, body: OUTSIDE_CHAT_BODY, connections: 32, duration: seconds });
  const failed = result.non2xx + result.errors + result.timeouts;
  if (failed > 0) errors.add(`${failed} of ${result.requests.total} answers were not 200s`);
  return { perSecond: result.requests.total / result.duration, cpuUs: ((cpuMs(target.process.pid) - cpuBefore) * 1000) / result.requests.total, latencyMs: result.latency.p99 };
}

const errors = new Errors();
const upstream = await startBundledChild("./upstream.ts", {}, BUILD_DIR);
const collector = TRACED === "" ? undefined : await startBundledChild("./collector.ts", {}, BUILD_DIR);
/** A side's tracing: every request's spans to the collector, or none (a caller's OTEL_* endpoints set aside). */
const tracingEnv = (side: "a" | "b"): Record<string, string> | undefined =>
  collector === undefined
    ? undefined
    : TRACED.includes(side)
      ? { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "", OTEL_TRACES_SAMPLER: "always_on" }
      : { OTEL_EXPORTER_OTLP_ENDPOINT: "", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "" };
const targets: Served[] = [];
/** Starts side A: the floor or a gateway. */
const startA = (): Promise<Served> =>
  FLOOR
    ? startBundledChild("./floor.ts", { BENCH_UPSTREAM_URL: upstream.url, BENCH_FLOOR_PARSE: "1" }, BUILD_DIR, watch)
    : startServedGateway({ upstreamUrl: upstream.url, databaseUrl: DATABASE_URL, nodeOptions: A_FLAGS, main: A_MAIN, env: tracingEnv("a"), spawned: watch });
const startB = (): Promise<Served> => startServedGateway({ upstreamUrl: upstream.url, databaseUrl: DATABASE_URL, nodeOptions: B_FLAGS, main: B_MAIN, env: tracingEnv("b"), spawned: watch });

/** A start's pairs of slices, and which side it started first. */
interface Start {
  aFirst: boolean;
  a: Slice[];
  b: Slice[];
}

/** Starts both sides (A first when `aFirst`), warms them up, runs `pairs` pairs and stops them; the sides' peak RSS goes to `rss`. */
async function run(aFirst: boolean, pairs: number, rss: { a: number[]; b: number[] }): Promise<Start> {
  const first = await (aFirst ? startA() : startB());
  targets.push(first);
  const second = await (aFirst ? startB() : startA());
  targets.push(second);
  const [a, b] = aFirst ? [first, second] : [second, first];
  const start: Start = { aFirst, a: [], b: [] };
  await slice(a, 3, errors);
  await slice(b, 3, errors);
  for (let pair = 0; pair < pairs; pair++) {
    // A B, then B A: neither side always follows the other.
    if (pair % 2 === 0) {
      start.a.push(await slice(a, SECONDS, errors));
      start.b.push(await slice(b, SECONDS, errors));
    } else {
      start.b.push(await slice(b, SECONDS, errors));
      start.a.push(await slice(a, SECONDS, errors));
    }
  }
  rss.a.push(peaks.peakOf(a.process.pid) ?? Number.NaN);
  rss.b.push(peaks.peakOf(b.process.pid) ?? Number.NaN);
  for (const target of targets.splice(0)) await target.stop();
  return start;
}

try {
  const rss = { a: [] as number[], b: [] as number[] };
  const starts: Start[] = [];
  for (let index = 0; index < STARTS; index++) starts.push(await run(index % 2 === 0, PAIRS / STARTS, rss));
  const slices = { a: starts.flatMap((start) => start.a), b: starts.flatMap((start) => start.b) };
  const ratiosOf = (of: readonly Start[], pick: (s: Slice) => number): number[] => of.flatMap((start) => start.a.map((s, i) => pick(start.b[i] as Slice) / pick(s)));
  const unit = STREAMS ? "streams" : "requests";
  const describe = (name: string, own: Slice[], peak: number[], given: string) =>
    `${name} ${given}: ${median(own.map((s) => s.perSecond)).toFixed(0)} ${unit}/s, ${median(own.map((s) => s.cpuUs)).toFixed(1)} µs CPU per ${unit.slice(0, -1)}, ` +
    `${STREAMS ? "first byte p50" : "p99"} ${median(own.map((s) => s.latencyMs)).toFixed(1)} ms, peak RSS ${Math.max(...peak).toFixed(0)} MiB (medians of ${PAIRS} slices)\n`;
  const gateway = (main: string | undefined, flags: string[], side: "a" | "b"): string =>
    `the gateway${main === undefined ? "" : ` of ${main}`}${flags.length > 0 ? ` with ${flags.join(" ")}` : ""}${TRACED.includes(side) ? ", tracing every request" : ""}`;
  process.stdout.write(describe("A", slices.a, rss.a, FLOOR ? "the floor" : gateway(A_MAIN, A_FLAGS, "a")));
  process.stdout.write(describe("B", slices.b, rss.b, gateway(B_MAIN, B_FLAGS, "b")));
  const perSecond = ratiosOf(starts, (s) => s.perSecond);
  const cpu = ratiosOf(starts, (s) => s.cpuUs);
  const starting = STARTS > 1 ? ` over ${STARTS} starts` : "";
  process.stdout.write(`B against A, medians of ${PAIRS} pairs${starting}: ${unit}/s ${median(perSecond).toFixed(3)}x (pairs ${perSecond.map((r) => r.toFixed(2)).join(" ")})\n`);
  process.stdout.write(`  CPU per ${unit.slice(0, -1)} ${median(cpu).toFixed(3)}x (pairs ${cpu.map((r) => r.toFixed(2)).join(" ")})\n`);
  if (STARTS > 1)
    for (const aFirst of [true, false]) {
      const of = starts.filter((start) => start.aFirst === aFirst);
      process.stdout.write(
        `  started ${aFirst ? "A" : "B"} first (${of.length * (PAIRS / STARTS)} pairs): ${unit}/s ${median(ratiosOf(of, (s) => s.perSecond)).toFixed(3)}x, CPU ${median(ratiosOf(of, (s) => s.cpuUs)).toFixed(3)}x\n`,
      );
    }
} finally {
  for (const target of targets) await target.stop();
  await upstream.stop();
  await collector?.stop();
  peaks.stop();
}
if (errors.count > 0) {
  process.stdout.write(`\n${errors.count} failures (slices with non-200 answers, failed streams): the figures are invalid\n${[...errors.samples].join("\n")}\n`);
  process.exitCode = 1;
}
