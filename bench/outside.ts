/**
 * `npm run bench:outside`: the gateway measured from outside, the way a user compares it with a bare proxy.
 * Not a test: it prints figures and asserts nothing but that every answer was a 200.
 *
 * On loopback: the bench's mock upstream (upstream.ts: a fixed chat completion of about 600 bytes, or 50 SSE
 * chunks when asked to stream); the floor (floor.ts with BENCH_FLOOR_PARSE=1: a node:http server that reads the
 * body, `JSON.parse`s it and forwards the bytes over an undici keep-alive Pool); and the gateway exactly as
 * `npm start` runs it (`dist/main.js` with its node flags and environment, from a config file holding one
 * provider with one key and one virtual key, at its default log level, its stdout going to a file). No routing
 * rule, team, cache or tracing is configured.
 *
 * Each round starts the floor alone, measures it and stops it, then does the same with the gateway:
 * autocannon with 32 connections, 3 s of warm-up then BENCH_SECONDS (default 10) counted, the same POST
 * /v1/chat/completions; then 8 connections each streaming one 50-chunk answer after another (2 s of warm-up,
 * then BENCH_SECONDS): time to the first byte and streams completed per second. The peak RSS of each target's
 * process tree is sampled every 100 ms from its start, and its CPU time per request read from /proc. Three rounds
 * (BENCH_ROUNDS); the figures judged are the medians of the rounds' ratios of gateway to floor.
 * BENCH_DATABASE_URL adds, in each round, the gateway on that PostgreSQL server (in a schema of its own, dropped
 * at the end). BENCH_PROFILE=1 profiles the floor and each gateway (100 µs sampling) into
 * bench/profiles/outside/<target>/ (floor, gateway, gateway-pg), so that where each spends its CPU can be set side
 * by side: the first half of a profile is the throughput loop, most of the second the streams. Build first (`npm
 * run build`; the npm script does).
 */
import autocannon from "autocannon";
import { loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import { median, OUTSIDE_CHAT_BODY, OUTSIDE_HEADERS, OUTSIDE_PATH, OUTSIDE_STREAM_BODY, startBundledChild, startServedGateway, WatchedChildren, type Served } from "./outside-processes.js";
import { cpuMs } from "./process-cpu.js";
import { concurrentStreams, Errors, type StreamFigures, type StreamRequest } from "./stream-load.js";

const SECONDS = Number(process.env["BENCH_SECONDS"] ?? 10);
const ROUNDS = Number(process.env["BENCH_ROUNDS"] ?? 3);
if (!(SECONDS > 0) || !Number.isInteger(ROUNDS) || ROUNDS < 1) throw new Error("BENCH_SECONDS must be a positive number and BENCH_ROUNDS a positive integer");
const DATABASE_URL = process.env["BENCH_DATABASE_URL"] || undefined;
const PROFILE = process.env["BENCH_PROFILE"] === "1";
const WARMUP_SECONDS = 3;
const CONNECTIONS = 32;
const STREAM_CONNECTIONS = 8;
const STREAM_WARMUP_MS = 2_000;

const here = (file: string): string => fileURLToPath(new URL(file, import.meta.url));
const BUILD_DIR = here("../.tmp/bench-outside");
const STREAM_REQUEST: StreamRequest = { path: OUTSIDE_PATH, headers: OUTSIDE_HEADERS, body: OUTSIDE_STREAM_BODY };

/** A started target: its URL and the process whose tree is measured. */
type Target = Served;

/** What one target showed in one round. */
interface Figures {
  rps: number;
  cpuUsPerRequest: number;
  streams: StreamFigures;
  peakRssMiB: number | null;
}

const { peaks, watch } = new WatchedChildren();

/** The node flags that profile a target into bench/profiles/outside/<name>/ under BENCH_PROFILE=1. */
function profiling(name: string): string[] {
  return PROFILE ? ["--cpu-prof", "--cpu-prof-interval", "100", "--cpu-prof-dir", here(`./profiles/outside/${name}`)] : [];
}

/** A bundled bench child, its memory watched from its start; `profiled` names its profiles' folder. */
function startChild(file: string, env: Record<string, string>, profiled?: string): Promise<Target> {
  return startBundledChild(`./${file}`, env, BUILD_DIR, watch, profiled === undefined ? [] : profiling(profiled));
}

/** The gateway as `npm start` runs it, its memory watched from its start. */
function startGateway(name: string, upstreamUrl: string, databaseUrl: string | undefined): Promise<Target> {
  return startServedGateway({ upstreamUrl, databaseUrl, nodeOptions: profiling(name), spawned: watch });
}

/** autocannon's closed loop on `url` for `seconds`; the requests per second, after checking every answer was a 200. */
async function cannon(url: string, seconds: number, errors: Errors): Promise<{ rps: number; requests: number }> {
  const result = await autocannon({ url: url + OUTSIDE_PATH, method: "POST", headers: OUTSIDE_HEADERS, body: OUTSIDE_CHAT_BODY, connections: CONNECTIONS, duration: seconds });
  const failed = result.non2xx + result.errors + result.timeouts;
  if (failed > 0) errors.add(`${failed} of ${result.requests.total} answers were not 200s (${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts)`);
  return { rps: result.requests.total / result.duration, requests: result.requests.total };
}

/** One target's round: throughput, then streams, then stopped. */
async function measure(target: Target, errors: Errors): Promise<Figures> {
  try {
    await cannon(target.url, WARMUP_SECONDS, errors);
    const cpuBefore = cpuMs(target.process.pid);
    const { rps, requests } = await cannon(target.url, SECONDS, errors);
    const cpuUsPerRequest = ((cpuMs(target.process.pid) - cpuBefore) * 1000) / requests;
    const streams = await concurrentStreams(target.url, STREAM_REQUEST, STREAM_CONNECTIONS, STREAM_WARMUP_MS, SECONDS, errors);
    return { rps, cpuUsPerRequest, streams, peakRssMiB: peaks.peakOf(target.process.pid) };
  } finally {
    await target.stop();
  }
}

const fixed = (value: number | null, digits: number): string => (value === null || !Number.isFinite(value) ? "-" : value.toFixed(digits));

const errors = new Errors();
const upstream = await startChild("upstream.ts", {});
const gateways: { name: string; databaseUrl: string | undefined }[] = [
  { name: "gateway", databaseUrl: undefined },
  ...(DATABASE_URL ? [{ name: "gateway-pg", databaseUrl: DATABASE_URL }] : []),
];
const rounds: Record<string, Figures>[] = [];
try {
  for (let round = 1; round <= ROUNDS; round++) {
    const figures: Record<string, Figures> = {};
    process.stdout.write(`round ${round} of ${ROUNDS} (load average ${fixed(loadavg()[0] ?? NaN, 1)}): floor`);
    figures["floor"] = await measure(await startChild("floor.ts", { BENCH_UPSTREAM_URL: upstream.url, BENCH_FLOOR_PARSE: "1" }, "floor"), errors);
    for (const gateway of gateways) {
      process.stdout.write(`, ${gateway.name}`);
      figures[gateway.name] = await measure(await startGateway(gateway.name, upstream.url, gateway.databaseUrl), errors);
    }
    process.stdout.write("\n");
    rounds.push(figures);
  }
} finally {
  await upstream.stop();
  peaks.stop();
}

process.stdout.write(`\nnode ${process.version}, ${ROUNDS} rounds, ${WARMUP_SECONDS} s warm-up + ${SECONDS} s each, ${CONNECTIONS} connections; streams on ${STREAM_CONNECTIONS}\n`);
for (const target of ["floor", ...gateways.map((g) => g.name)]) {
  for (const [i, figures] of rounds.entries()) {
    const f = figures[target];
    if (f === undefined) continue;
    process.stdout.write(
      `${target.padEnd(10)} round ${i + 1}: ${fixed(f.rps, 0)} req/s, ${fixed(f.cpuUsPerRequest, 0)} µs CPU per request, streams: first byte p50 ${fixed(f.streams.p50, 3)} ms, ` +
        `${fixed(f.streams.streamsPerSecond, 0)} streams/s; peak RSS ${fixed(f.peakRssMiB, 0)} MiB\n`,
    );
  }
}
for (const gateway of gateways) {
  const ratio = (pick: (f: Figures) => number) => median(rounds.map((r) => pick(r[gateway.name] as Figures) / pick(r["floor"] as Figures)));
  process.stdout.write(
    `\n${gateway.name} against the floor, medians of ${ROUNDS} rounds: throughput ${fixed(ratio((f) => f.rps), 3)}x, CPU per request ${fixed(ratio((f) => f.cpuUsPerRequest), 2)}x, ` +
      `stream first byte ${fixed(ratio((f) => f.streams.p50), 2)}x, streams/s ${fixed(ratio((f) => f.streams.streamsPerSecond), 3)}x; ` +
      `peak RSS ${fixed(median(rounds.map((r) => r[gateway.name]?.peakRssMiB ?? NaN)), 0)} MiB\n`,
  );
}
if (errors.count > 0) {
  process.stdout.write(`\n${errors.count} failed requests: the figures are invalid\n${[...errors.samples].join("\n")}\n`);
  process.exitCode = 1;
}
