/**
 * `npm run bench`: what the gateway costs over a bare proxy and over no proxy at all. Not a test:
 * it prints figures and asserts nothing.
 *
 * Process tree (loopback only): this parent is the load generator; it spawns `upstream.ts` (a mock
 * OpenAI upstream answering at once), `floor.ts` twice (a minimal undici pass-through proxy, the least any
 * proxy can cost: `floor` only pipes, `floor-json` also parses the request JSON as any gateway must, and
 * is the floor every ratio is taken against), `floor-duties.ts` (floor-json plus only what the throughput goal
 * asks of every request: a virtual key, a rate limit and a budget, the answer parsed for its usage, metrics and
 * an access line at `info`, with the gateway's own parts) and one `gateway.ts` per entry of GATEWAY_VARIANTS (the real
 * app, governance on every request through the virtual key `sk-gw-bench`; `gateway-traced` also traces
 * every request and exports the spans to `collector.ts`, a no-op OTLP/HTTP collector), and for the features phase one
 * `gateway.ts` at a time per feature beside an all-off one. Each child runs bundled by esbuild, as `npm start` runs
 * the gateway, not under tsx, whose per-closure function naming production does not pay. Every target gets the same POST /v1/chat/completions
 * (model "gpt-4o-mini") and is measured in turn, alone, as:
 *
 * 1. throughput: closed loop, 32 connections (undici Pool, pipelining 1), 2 s warm-up, then
 *    BENCH_SECONDS (default 10) counted: requests/s, and the CPU time the target process itself spent
 *    per request (from /proc/<pid>/stat), steadier than req/s when other work shares the machine.
 *    The floors and gateways also report the JavaScript heap they allocated per request
 *    (allocation-meter.ts), which drives their garbage collection and how far their heap grows.
 * 2. latency: open loop at 500 req/s scheduled by the clock (a send never waits for a reply), 1 s
 *    warm-up, then 500 x BENCH_SECONDS requests: p50/p99 from each request's send to its last body byte.
 *    "Added" latency is the target's figure minus direct's. `max lag` is how late the generator sent
 *    behind schedule: a large one means the generator itself was saturated.
 * 3. streaming: sequential `"stream": true` requests of 50 chunks (1000 warm-up, 1000 counted): p50/p99
 *    time to the first body byte.
 * 4. concurrent streaming: STREAM_CONNECTIONS (8) connections each streaming one answer after another,
 *    2 s warm-up then BENCH_SECONDS: time to first byte p50/p99 and streams completed per second.
 * 5. cache hits (gateways only): the closed loop of 1 with `x-gw-cache: direct`, so every request after
 *    the first is answered from the response cache without an upstream call (each counted answer must
 *    carry `x-gw-cache: hit-direct`): requests/s, reported as a multiple of the floor's pass-through
 *    throughput of phase 1.
 * 6. tracing's cost (when both `gateway` and `gateway-traced` run the throughput phase): the closed loop of 1
 *    against the two in turn, one-second slices in the order A B B A repeated (2 x BENCH_SECONDS in all), so
 *    the machine's drift between minutes weighs on both alike: throughput and CPU per request of each.
 * 7. the duties' cost (when the throughput phase runs): floor-json and floor-duties take turns the same way.
 * 8. cache hits against the floor (when `gateway` runs the cache-hit phase): floor-json's pass-through and the
 *    gateway's cache hits take turns the same way, so the hits' multiple of the floor comes from the same
 *    seconds of the machine rather than from phases minutes apart.
 * 9. memory: peak RSS of each target's whole process tree (the process and every descendant, their
 *    VmRSS summed, sampled every 100 ms from its start to the end of its measurements; the direct target's
 *    tree is the mock upstream).
 * Each figure is printed as a ratio to the floor and to direct; latencies also as added milliseconds.
 * The targets are stopped once measured, before the features phase starts.
 *
 * 10. features: what each optional feature costs when it is the only one on. A gateway is started from a
 *    config file (gateway.ts's provider and virtual key, with the load balancer off and nothing else configured:
 *    the all-off gateway), then, one after another, a gateway with one feature configured in that file the way a
 *    user configures it (features(): routing rules that never match, one that does, a team and customer with limits,
 *    the direct response cache missing on every request, complexity tiers, session affinity, the load balancer,
 *    tracing at sample ratio 1, 0.1 and 0, dimension headers, guardrails). Each takes turns with an all-off gateway
 *    started beside it, as in 6 (the same POST, closed loop; what turns a feature on in a request, such as its
 *    headers, is sent to the feature's side only), and both are stopped before the next pair starts, so at most two
 *    gateways are up. The pair is of one age: a gateway kept up for the whole phase went on getting cheaper per
 *    request for minutes, so every feature started after it looked dearer than it was. Each feature is measured
 *    as BENCH_FEATURE_PAIRS such pairs (default 2), each taking BENCH_SECONDS of slices, every second one started
 *    and led the other way round: two processes of one build can differ by several percent in CPU per request for
 *    their whole lives, so each further pair shrinks what one process's luck weighs, and no side always starts or
 *    leads. The first feature, `none`, configures nothing: its figures are the measure's own spread, to read the
 *    others against. It prints
 *    `feature <name>: throughput <x>% of all-off, CPU per request <y>x`, or why a feature was not measured: a
 *    gateway that does not start with its configuration, or a feature that, configured, lets through a request
 *    it should refuse (not applied to this request path yet). A feature nobody configured must cost nothing; one
 *    that is configured should cost little.
 *
 * Every response must be a 200 with a complete body; anything else is counted as an error and a run
 * with errors is invalid (exit code 1). Figures go to stdout as tables and to bench/last-run.json.
 * The machine has 2 cores shared by the generator, the upstream and the target, so compare ratios
 * between targets of one run rather than absolute figures between machines.
 *
 * Env: BENCH_SECONDS (default 10), BENCH_PHASES (a comma-separated subset of throughput, latency,
 * streaming, concurrent-streams, cache-hit, features; default all; with features alone no floor or variant
 * starts), BENCH_VARIANTS (a comma-separated subset of the gateway variants; default all; direct and the floors
 * always run when a phase of theirs does), BENCH_FEATURES (a comma-separated subset of the features phase's features;
 * default all), BENCH_DATABASE_URL (adds the gateway on that PostgreSQL server, in a
 * schema of its own), BENCH_CLUSTER=1 (with BENCH_DATABASE_URL: also two gateway nodes sharing one schema there, their
 * budget and rate-limit counters shared, loaded round-robin by the bench's own client; throughput per node is
 * reported next to the single node's, with each node's CPU per request), BENCH_PROFILE=1 starts the gateway
 * children, floor-json and floor-duties with `--cpu-prof` (100 µs sampling) writing into bench/profiles/<target>/ (one file
 * per thread; the main thread's is the largest; the features phase's gateways too), BENCH_NODE_FLAGS (space-separated node or V8 flags given to
 * every gateway child after those `npm start` gives the gateway, none to the floors: what a memory or compiler
 * setting changes, measured against the same floors).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import { createInterface } from "node:readline";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { Pool } from "undici";
import { buildServerBundle } from "../src/build-bundle.js";
import { SERVING_ENVIRONMENT, servingNodeFlags } from "../src/serving-environment.js";
import { dropSchema, randomSchemaName } from "../src/store/index.js";
import { cpuMs } from "./process-cpu.js";
import { TreeRssPeaks } from "./process-tree.js";
import { concurrentStreams, Errors, percentile, streamOnce, type StreamFigures, type StreamRequest } from "./stream-load.js";

/**
 * A way of starting the gateway; `appOptions` (JSON) is merged over gateway.ts's base AppOptions,
 * `logLevel` (default warn) and `databaseUrl` are read by gateway.ts.
 */
interface GatewayVariant {
  name: string;
  description: string;
  appOptions: Record<string, unknown>;
  /** How many routing rules gateway.ts puts in the bench key's scope (none matches, so all run). */
  routingRules?: number;
  logLevel?: string;
  databaseUrl?: string;
  /** Export every request's spans (sample ratio 1) to the bench's no-op OTLP collector. */
  traced?: boolean;
}

const DATABASE_URL = process.env["BENCH_DATABASE_URL"] || undefined;
const CLUSTER = process.env["BENCH_CLUSTER"] === "1";
if (CLUSTER && DATABASE_URL === undefined) throw new Error("BENCH_CLUSTER=1 needs BENCH_DATABASE_URL: the nodes share a PostgreSQL server");

/** Every gateway configuration measured, each in its own child. */
const GATEWAY_VARIANTS: readonly GatewayVariant[] = [
  { name: "gateway", description: "defaults: governance, metrics recording, logs at warn", appOptions: {} },
  // The default log level writes an access line per request: what a deployment left at its defaults pays.
  { name: "gateway-info", description: "the same with the access log at info (to a file)", appOptions: {}, logLevel: "info" },
  // The same gateway with metric samples dropped before they are queued: the difference is what recording costs.
  { name: "no-metrics", description: "metrics recording off (telemetry.recording false)", appOptions: { telemetry: { recording: false } } },
  // Every request evaluates 100 compiled CEL conditions that do not match: what routing rules cost.
  { name: "rules-100", description: "defaults plus 100 routing rules in the key's scope, none matching", appOptions: {}, routingRules: 100 },
  // The defaults plus tracing of every request, exported over OTLP/HTTP to a local no-op collector: the
  // difference from `gateway` is what tracing costs when it is on (off, the gateway loads no SDK at all).
  { name: "gateway-traced", description: "the defaults with OpenTelemetry tracing on (sample ratio 1, OTLP/HTTP to a local no-op collector)", appOptions: {}, traced: true },
  // The same gateway with both load balancer levels off: the difference is what adaptive selection costs.
  {
    name: "balancer-off",
    description: "defaults with the adaptive load balancer off (load_balancer_config: both levels false)",
    appOptions: { loadBalancer: { directionSelectionEnabled: false, routeSelectionEnabled: false, appendFallbacksToPinned: false, rerouteFailedDirections: false, pruneFailedFallbacks: false } },
  },
  ...(DATABASE_URL ? [{ name: "gateway-pg", description: "defaults, on the PostgreSQL server of BENCH_DATABASE_URL", appOptions: {}, databaseUrl: DATABASE_URL }] : []),
];

/** The measurements of each target, in the order they run. */
const PHASES = ["throughput", "latency", "streaming", "concurrent-streams", "cache-hit", "features"] as const;
type Phase = (typeof PHASES)[number];

const SELECTED_PHASES = subset("BENCH_PHASES", PHASES);
const SELECTED_VARIANTS = subset(
  "BENCH_VARIANTS",
  GATEWAY_VARIANTS.map((variant) => variant.name),
);

const SECONDS = positiveNumber("BENCH_SECONDS", 10);
/** Pairs of gateways measured per feature: an even number, so that as many start each way round. */
const FEATURE_PAIRS = Number(process.env["BENCH_FEATURE_PAIRS"] || 2);
if (!Number.isInteger(FEATURE_PAIRS) || FEATURE_PAIRS < 2 || FEATURE_PAIRS % 2 !== 0) throw new Error(`BENCH_FEATURE_PAIRS must be an even whole number of at least 2, got "${process.env["BENCH_FEATURE_PAIRS"]}"`);
const PROFILE = process.env["BENCH_PROFILE"] === "1";
const WARMUP_MS = 2_000;
const CONNECTIONS = 32;
const RATE = 500;
const LATENCY_WARMUP = RATE;
const LATENCY_COUNT = Math.round(RATE * SECONDS);
// Streaming code runs only in this phase: a short warm-up measured V8 compiling it (the first streams'
// p99 was far above the steady one, the floor's too), not the steady state.
const STREAM_WARMUP = 1_000;
const STREAM_COUNT = 1_000;
const STREAM_CONNECTIONS = 8;
const RSS_SAMPLE_MS = 100;
const START_TIMEOUT_MS = 120_000;
const EXIT_TIMEOUT_MS = 20_000;

const HEADERS = { "content-type": "application/json", authorization: "Bearer sk-gw-bench" };
/** The same request, asking the gateway's response cache to answer it. */
const CACHED_HEADERS = { ...HEADERS, "x-gw-cache": "direct" };
const MESSAGES = [
  { role: "system", content: "You are a concise assistant for backend engineers." },
  { role: "user", content: "Explain in three sentences why keep-alive connections matter for an API gateway in front of model providers." },
];
const CHAT_BODY = JSON.stringify({ model: "gpt-4o-mini", messages: MESSAGES, temperature: 0.2, max_tokens: 160 });
const STREAM_BODY = JSON.stringify({ model: "gpt-4o-mini", messages: MESSAGES, temperature: 0.2, max_tokens: 160, stream: true });
const PATH = "/v1/chat/completions";
const STREAM_REQUEST: StreamRequest = { path: PATH, headers: HEADERS, body: STREAM_BODY };

const here = (file: string): string => fileURLToPath(new URL(file, import.meta.url));
const REPO = here("..");
const PROFILE_DIR = here("./profiles");
const LAST_RUN = here("./last-run.json");
const BUILD_DIR = here("../.tmp/bench");

/** The names a comma-separated env variable picks out of `all` (all when unset); an unknown name stops the run. */
function subset<T extends string>(name: string, all: readonly T[]): ReadonlySet<T> {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === "") return new Set(all);
  const picked = raw.split(",").map((entry) => entry.trim());
  const unknown = picked.filter((entry) => !(all as readonly string[]).includes(entry));
  if (unknown.length > 0) throw new Error(`${name} names ${unknown.join(", ")}; pick from ${all.join(", ")}`);
  return new Set(picked as T[]);
}

function positiveNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!(Number.isFinite(value) && value > 0)) throw new Error(`${name} must be a positive number of seconds, got "${raw}"`);
  return value;
}

// ---------------------------------------------------------------------------------------------------
// Children

interface Child {
  name: string;
  process: ChildProcess;
  url: string;
  /** The child's next stdout line after its port line (an answer to a line written to its stdin). */
  nextLine(): Promise<string>;
}

/** Counts the heap bytes a child allocates between start and stop (see allocation-meter.ts). */
interface AllocationMeter {
  start(): void;
  stop(): Promise<number>;
}

/** The allocation meter of a child that answers alloc-start / alloc-stop (the floors and the gateways). */
function allocationMeter(child: Child): AllocationMeter {
  return {
    start: () => void child.process.stdin?.write("alloc-start\n"),
    stop: async () => {
      const answer = child.nextLine();
      child.process.stdin?.write("alloc-stop\n");
      const { allocatedBytes } = JSON.parse(await answer) as { allocatedBytes: number };
      return allocatedBytes;
    },
  };
}

const children: ChildProcess[] = [];

const bundles = new Map<string, Promise<string>>();

/** Bundles a child's entry file (once) the way `npm run build` bundles the gateway; resolves with the bundle's path. */
function bundle(file: string): Promise<string> {
  let built = bundles.get(file);
  if (built === undefined) {
    const outfile = `${BUILD_DIR}/${file.replace(/^\.\//, "").replace(/\.ts$/, ".js")}`;
    // With the build's own options: its packages inside, what it imports on demand (the migrator) split off.
    built = buildServerBundle([here(file)], BUILD_DIR).then(() => outfile);
    bundles.set(file, built);
  }
  return built;
}

/** Spawns `node <bundle of file>` and resolves with its URL once its first stdout line names the port. */
async function startChild(name: string, file: string, env: Record<string, string>, nodeArgs: string[] = []): Promise<Child> {
  const child = spawn(process.execPath, [...nodeArgs, await bundle(file)], {
    cwd: REPO,
    env: { ...process.env, ...env },
    // The child exits when its stdin closes, so it cannot outlive this process even if we are killed.
    stdio: ["pipe", "pipe", "inherit"],
  });
  children.push(child);
  // Watched from the moment it exists, so start-up peaks count too.
  peaks.watch(child.pid);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not report its port within ${START_TIMEOUT_MS / 1000} s`)), START_TIMEOUT_MS);
    const onExit = (code: number | null, signal: string | null) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited before reporting its port (code ${code}, signal ${signal})`));
    };
    child.once("exit", onExit);
    child.once("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
    const waiting: ((line: string) => void)[] = [];
    const nextLine = (): Promise<string> => new Promise((resolveLine) => waiting.push(resolveLine));
    let reported = false;
    lines.on("line", (line) => {
      if (reported) {
        const waiter = waiting.shift();
        if (waiter !== undefined) waiter(line);
        else process.stderr.write(`[${name}] ${line}\n`);
        return;
      }
      reported = true;
      clearTimeout(timer);
      child.off("exit", onExit);
      let first: { port?: number; error?: string };
      try {
        first = JSON.parse(line) as { port?: number; error?: string };
      } catch {
        reject(new Error(`${name}'s first stdout line is not {"port": n}: ${line}`));
        return;
      }
      if (first.port === undefined) reject(new Error(first.error ?? `${name}'s first stdout line is not {"port": n}: ${line}`));
      else resolve({ name, process: child, url: `http://127.0.0.1:${first.port}`, nextLine });
    });
  });
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.stdin?.end();
  const timer = setTimeout(() => child.kill("SIGKILL"), EXIT_TIMEOUT_MS);
  await exited;
  clearTimeout(timer);
}

let stopping: Promise<void> | undefined;
function stopAll(): Promise<void> {
  stopping ??= Promise.all(children.map(stopChild)).then(() => undefined);
  return stopping;
}

process.on("SIGINT", () => {
  process.stderr.write("\ninterrupted: stopping the children\n");
  void stopAll().finally(() => process.exit(130));
});

/** The process trees of every child, sampled for the whole run. */
const peaks = new TreeRssPeaks(RSS_SAMPLE_MS);

// ---------------------------------------------------------------------------------------------------
// Measurements

/** How a request of a loop is sent and what its answer must show. */
interface RequestShape {
  /** The request's headers, or what gives each request its own (requests that must differ one from the next). */
  headers: Record<string, string> | (() => Record<string, string>);
  /** What gives each request its own body; CHAT_BODY when absent. */
  body?: () => string;
  /** The `x-gw-cache` answer header every counted request must carry; undefined checks nothing. */
  cache?: string;
}

const PLAIN: RequestShape = { headers: HEADERS };
const CACHE_HIT: RequestShape = { headers: CACHED_HEADERS, cache: "hit-direct" };

/** One non-streaming request read to its end; true when it was a 200 (with the cache header `shape` expects). */
async function chat(pool: Pool, errors: Errors, shape: RequestShape = PLAIN): Promise<boolean> {
  try {
    const headers = typeof shape.headers === "function" ? shape.headers() : shape.headers;
    const res = await pool.request({ method: "POST", path: PATH, headers, body: shape.body?.() ?? CHAT_BODY });
    const body = await res.body.arrayBuffer();
    const cache = res.headers["x-gw-cache"];
    if (res.statusCode === 200 && body.byteLength > 0 && (shape.cache === undefined || cache === shape.cache)) return true;
    if (res.statusCode === 200) errors.add(`x-gw-cache: ${String(cache)}, expected ${shape.cache ?? ""}`);
    else errors.add(`HTTP ${res.statusCode}: ${Buffer.from(body).toString("utf8")}`);
  } catch (err) {
    errors.add(String(err));
  }
  return false;
}

/** CONNECTIONS workers sending one request after another on `pool` until `until`; the 200s counted. */
async function closedLoop(pool: Pool, until: number, errors: Errors, shape: RequestShape): Promise<number> {
  let ok = 0;
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (performance.now() < until) if (await chat(pool, errors, shape)) ok++;
    }),
  );
  return ok;
}

/** What a closed-loop phase measures of its target. */
interface ThroughputFigures {
  rps: number;
  requests: number;
  cpuUsPerRequest: number;
  allocatedBytesPerRequest: number;
}

/** Closed loop: CONNECTIONS workers each sending the next request when the previous one is answered. */
async function throughput(url: string, pid: number | undefined, errors: Errors, shape: RequestShape = PLAIN, meter?: AllocationMeter): Promise<ThroughputFigures> {
  const pool = new Pool(url, { connections: CONNECTIONS, pipelining: 1 });
  try {
    // The first cached requests of the warm-up are misses that fill the cache: they are not errors.
    if (shape.cache !== undefined) await chat(pool, new Errors(), { headers: shape.headers });
    await closedLoop(pool, performance.now() + WARMUP_MS, errors, shape);
    meter?.start();
    const cpuBefore = cpuMs(pid);
    const started = performance.now();
    const requests = await closedLoop(pool, started + SECONDS * 1000, errors, shape);
    const elapsed = performance.now() - started;
    const cpuUsPerRequest = ((cpuMs(pid) - cpuBefore) * 1000) / requests;
    const allocatedBytesPerRequest = meter === undefined ? Number.NaN : (await meter.stop()) / requests;
    return { rps: (requests * 1000) / elapsed, requests, cpuUsPerRequest, allocatedBytesPerRequest };
  } finally {
    await pool.close();
  }
}

/** Throughput figures of one target. */
type Figures = { rps: number; requests: number; cpuUsPerRequest: number };

/** A target of the turn-taking loop, and the requests it is sent (phase 1's when no shape is given). */
interface Turn {
  url: string;
  pid: number | undefined;
  shape?: RequestShape;
}

/**
 * A closed loop against two targets taking turns in one-second slices, in the order A B B A repeated: a
 * machine that speeds up or slows down during the measurement weighs on both alike, where measuring one
 * after the other charges the drift to whichever came second. 2 x SECONDS slices in all.
 */
async function interleavedThroughput(a: Turn, b: Turn, errors: Errors, slices = 2 * SECONDS): Promise<{ a: Figures; b: Figures }> {
  const targets = [a, b].map((target) => ({ ...target, shape: target.shape ?? PLAIN, pool: new Pool(target.url, { connections: CONNECTIONS, pipelining: 1 }), requests: 0, ms: 0, cpuMs: 0 }));
  try {
    for (const target of targets) {
      // A cached shape's first request is the miss that fills the cache: not an error.
      if (target.shape.cache !== undefined) await chat(target.pool, new Errors(), { headers: target.shape.headers });
      await closedLoop(target.pool, performance.now() + WARMUP_MS, errors, target.shape);
    }
    for (let slice = 0; slice < slices; slice++) {
      const target = targets[slice % 4 === 0 || slice % 4 === 3 ? 0 : 1];
      if (target === undefined) continue;
      const cpuBefore = cpuMs(target.pid);
      const started = performance.now();
      target.requests += await closedLoop(target.pool, started + 1_000, errors, target.shape);
      target.ms += performance.now() - started;
      target.cpuMs += cpuMs(target.pid) - cpuBefore;
    }
    const [first, second] = targets.map((t): Figures => ({ rps: (t.requests * 1000) / t.ms, requests: t.requests, cpuUsPerRequest: (t.cpuMs * 1000) / t.requests }));
    if (first === undefined || second === undefined) throw new Error("two targets are required");
    return { a: first, b: second };
  } finally {
    await Promise.all(targets.map((target) => target.pool.close()));
  }
}

/** Two targets' figures from taking turns, with the errors they met. */
interface TurnsResult {
  a: Figures;
  b: Figures;
  errors: number;
  errorSamples: string[];
}

/**
 * Runs interleavedThroughput over `slices` one-second slices as phase `selected` (announced as `label`, `what`);
 * null when that phase is not picked.
 */
async function inTurns(label: string, selected: Phase, what: string, a: Turn, b: Turn, slices = 2 * SECONDS): Promise<TurnsResult | null> {
  const errors = new Errors();
  const run = await phase(label, selected, `${what} in 1 s slices (${WARMUP_MS / 1000} s warm-up each + ${slices} s)`, () => interleavedThroughput(a, b, errors, slices), null);
  return run === null ? null : { ...run, errors: errors.count, errorSamples: [...errors.samples] };
}

/** Prints a measurement's error count (marking the run invalid when any) and its samples. */
function reportErrors(label: string, count: number, samples: readonly string[]): void {
  console.log(`${label} errors: ${count}${count > 0 ? "  <- INVALID RUN" : ""}`);
  for (const sample of samples) console.log(`  ${label}: ${sample}`);
}

/** Closed loop over several nodes: worker i sends to node i mod n, as a round-robin load balancer would. */
async function clusterThroughput(urls: readonly string[], pids: readonly (number | undefined)[], errors: Errors): Promise<{ rps: number; perNode: number[]; cpuUsPerRequest: number[] }> {
  const pools = urls.map((url) => new Pool(url, { connections: Math.ceil(CONNECTIONS / urls.length), pipelining: 1 }));
  const loop = async (until: number, count: Errors): Promise<number[]> => {
    const done = urls.map(() => 0);
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async (_, worker) => {
        const node = worker % pools.length;
        while (performance.now() < until) if (await chat(pools[node] as Pool, count)) done[node] = (done[node] ?? 0) + 1;
      }),
    );
    return done;
  };
  try {
    await loop(performance.now() + WARMUP_MS, errors);
    const cpuBefore = pids.map(cpuMs);
    const started = performance.now();
    const done = await loop(started + SECONDS * 1000, errors);
    const elapsed = performance.now() - started;
    const perNode = done.map((n) => (n * 1000) / elapsed);
    // Each node's CPU per request it served: the cost the shared counters add, whatever the core count.
    const cpuUsPerRequest = pids.map((pid, i) => ((cpuMs(pid) - (cpuBefore[i] ?? Number.NaN)) * 1000) / (done[i] ?? Number.NaN));
    return { rps: perNode.reduce((a, b) => a + b, 0), perNode, cpuUsPerRequest };
  } finally {
    await Promise.all(pools.map((pool) => pool.close()));
  }
}

/** Open loop: request i is sent at start + i/RATE whatever the replies do; latency is send to last byte. */
async function openLoop(pool: Pool, count: number, errors: Errors): Promise<{ latencies: Float64Array; maxLagMs: number }> {
  const interval = 1000 / RATE;
  const latencies = new Float64Array(count);
  let measured = 0;
  let maxLagMs = 0;
  const pending: Promise<void>[] = [];
  const one = async (): Promise<void> => {
    const sent = performance.now();
    if (await chat(pool, errors)) latencies[measured++] = performance.now() - sent;
  };
  const start = performance.now() + 5;
  let sent = 0;
  while (sent < count) {
    const now = performance.now();
    while (sent < count && start + sent * interval <= now) {
      maxLagMs = Math.max(maxLagMs, now - (start + sent * interval));
      sent++;
      pending.push(one());
    }
    if (sent < count) await sleep(Math.max(0, start + sent * interval - performance.now()));
  }
  await Promise.all(pending);
  return { latencies: latencies.slice(0, measured).sort(), maxLagMs };
}

async function latency(url: string, errors: Errors): Promise<{ p50: number; p99: number; maxLagMs: number; requests: number }> {
  // Enough connections that the pool never queues at this rate unless the target stalls.
  const pool = new Pool(url, { connections: 64, pipelining: 1 });
  try {
    await openLoop(pool, LATENCY_WARMUP, errors);
    const { latencies, maxLagMs } = await openLoop(pool, LATENCY_COUNT, errors);
    return { p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99), maxLagMs, requests: latencies.length };
  } finally {
    await pool.close();
  }
}

async function streaming(url: string, errors: Errors): Promise<{ p50: number; p99: number; requests: number }> {
  const pool = new Pool(url, { connections: 1, pipelining: 1 });
  try {
    for (let i = 0; i < STREAM_WARMUP; i++) await streamOnce(pool, STREAM_REQUEST, errors);
    const samples: number[] = [];
    for (let i = 0; i < STREAM_COUNT; i++) {
      const ttfb = await streamOnce(pool, STREAM_REQUEST, errors);
      if (ttfb !== null) samples.push(ttfb);
    }
    const sorted = Float64Array.from(samples).sort();
    return { p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99), requests: sorted.length };
  } finally {
    await pool.close();
  }
}

/** STREAM_CONNECTIONS workers streaming one answer after another: first-byte times and streams per second. */
function concurrentStreaming(url: string, errors: Errors): Promise<StreamFigures> {
  return concurrentStreams(url, STREAM_REQUEST, STREAM_CONNECTIONS, WARMUP_MS, SECONDS, errors);
}

// ---------------------------------------------------------------------------------------------------
// Run and report

interface TargetResult {
  name: string;
  /**
   * `floor` is the JSON-parsing floor every ratio is taken against; `pipe` the floor that only pipes;
   * `duties` the floor that also does what the throughput goal asks of every request (floor-duties.ts).
   */
  kind: "direct" | "pipe" | "floor" | "duties" | "gateway";
  description: string;
  /**
   * cpuUsPerRequest: CPU the target process (alone, not the upstream behind it) spent per counted request;
   * allocatedBytesPerRequest: JavaScript heap it allocated per counted request (NaN for direct).
   */
  throughput: ThroughputFigures;
  latencyMs: { p50: number; p99: number; maxLagMs: number; requests: number };
  streamTtfbMs: { p50: number; p99: number; requests: number };
  concurrentStreams: { p50: number; p99: number; streamsPerSecond: number; requests: number };
  /** Closed-loop throughput of requests the response cache answers; null for targets without a cache. */
  cacheHits: ThroughputFigures | null;
  /** Peak RSS of the target's whole process tree. */
  peakRssMiB: number | null;
  errors: number;
  errorSamples: string[];
}

/**
 * Runs `run` when `selected` is among the phases picked, announcing `label` and pausing after it so one
 * phase's tail does not skew the next; else answers `skipped`.
 */
async function phase<T>(target: string, selected: Phase, label: string, run: () => Promise<T>, skipped: T): Promise<T> {
  if (!SELECTED_PHASES.has(selected)) return skipped;
  process.stderr.write(`${target}: ${label}...\n`);
  const result = await run();
  await sleep(500);
  return result;
}

const NOT_RUN: ThroughputFigures = { rps: Number.NaN, requests: 0, cpuUsPerRequest: Number.NaN, allocatedBytesPerRequest: Number.NaN };

async function measure(target: { name: string; kind: TargetResult["kind"]; description: string; url: string; pid: number | undefined; meter?: AllocationMeter }): Promise<TargetResult> {
  const errors = new Errors();
  const name = target.name;
  const rps = await phase(name, "throughput", `throughput (${WARMUP_MS / 1000} s warm-up + ${SECONDS} s)`, () => throughput(target.url, target.pid, errors, PLAIN, target.meter), NOT_RUN);
  const lat = await phase(name, "latency", `latency at ${RATE} req/s (${LATENCY_WARMUP} warm-up + ${LATENCY_COUNT})`, () => latency(target.url, errors), {
    p50: Number.NaN,
    p99: Number.NaN,
    maxLagMs: Number.NaN,
    requests: 0,
  });
  const ttfb = await phase(name, "streaming", `streaming time to first byte (${STREAM_WARMUP} warm-up + ${STREAM_COUNT})`, () => streaming(target.url, errors), {
    p50: Number.NaN,
    p99: Number.NaN,
    requests: 0,
  });
  const concurrent = await phase(
    name,
    "concurrent-streams",
    `${STREAM_CONNECTIONS} concurrent streams (${WARMUP_MS / 1000} s warm-up + ${SECONDS} s)`,
    () => concurrentStreaming(target.url, errors),
    { p50: Number.NaN, p99: Number.NaN, streamsPerSecond: Number.NaN, requests: 0 },
  );
  // Only a gateway has a response cache; the floors would just pass the header through.
  const cacheHits =
    target.kind !== "gateway"
      ? null
      : await phase(name, "cache-hit", `cache hits (${WARMUP_MS / 1000} s warm-up + ${SECONDS} s)`, () => throughput(target.url, target.pid, errors, CACHE_HIT, target.meter), null);
  return {
    name: target.name,
    kind: target.kind,
    description: target.description,
    throughput: rps,
    latencyMs: lat,
    streamTtfbMs: ttfb,
    concurrentStreams: concurrent,
    cacheHits,
    peakRssMiB: null,
    errors: errors.count,
    errorSamples: [...errors.samples],
  };
}

const fmt = (value: number | null, digits = 2): string => (value === null || !Number.isFinite(value) ? "-" : value.toFixed(digits));
const signed = (value: number, digits = 2): string => (Number.isFinite(value) ? `${value >= 0 ? "+" : ""}${value.toFixed(digits)}` : "-");
const pct = (ratio: number): string => (Number.isFinite(ratio) ? `${(ratio * 100).toFixed(1)}%` : "-");

/** Aligns rows under a header: first column left, the others right. */
function table(head: string[], rows: string[][]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join("   ");
  return [line(head), widths.map((w) => "-".repeat(w)).join("   "), ...rows.map(line)].join("\n");
}

/** The 1-minute load average: other work on the machine skews every figure. */
const load = (): number => loadavg()[0] ?? Number.NaN;

/** The machine's cores and load: other work on it skews every figure. */
function conditions(loadAtStart: number): string {
  const busy = loadAtStart > 0.5 ? "  <- the machine was busy before the bench: figures are skewed" : "";
  return `${availableParallelism()} cores, 1-min load average ${loadAtStart.toFixed(2)} at start, ${load().toFixed(2)} at end${busy}`;
}

function report(results: TargetResult[], loadAtStart: number): void {
  const direct = results.find((r) => r.kind === "direct");
  const floor = results.find((r) => r.kind === "floor");
  if (!direct || !floor) throw new Error("direct and floor results are required");
  console.log(
    `\nnode ${process.version}, ${SECONDS} s per phase, ${CONNECTIONS} connections closed loop, ${RATE} req/s open loop, ` +
      `${STREAM_COUNT} sequential streams, ${STREAM_CONNECTIONS} concurrent streams; ratios are to floor-json (the floor that parses the request JSON)`,
  );
  console.log(`${conditions(loadAtStart)}\n`);
  // One row per figure, one column per target, so more gateway variants only widen it a little.
  const row = (label: string, cell: (r: TargetResult) => string): string[] => [label, ...results.map(cell)];
  // Every figure as a ratio to the floor and to a direct call; latencies also as differences,
  // since the goal is stated in added milliseconds.
  const times = (value: number | null, base: number | null): string =>
    value !== null && base !== null && Number.isFinite(value / base) ? `${(value / base).toFixed(2)}x` : "-";
  const ratios = (value: (r: TargetResult) => number | null): string[][] => [
    row("  ÷ floor", (r) => times(value(r), value(floor))),
    row("  ÷ direct", (r) => times(value(r), value(direct))),
  ];
  const differences = (value: (r: TargetResult) => number): string[][] => [
    row("  added (minus direct)", (r) => signed(value(r) - value(direct), 3)),
    row("  over floor", (r) => signed(value(r) - value(floor), 3)),
  ];
  const p50 = (r: TargetResult): number => r.latencyMs.p50;
  const p99 = (r: TargetResult): number => r.latencyMs.p99;
  const ttfb50 = (r: TargetResult): number => r.streamTtfbMs.p50;
  const ttfb99 = (r: TargetResult): number => r.streamTtfbMs.p99;
  const cttfb50 = (r: TargetResult): number => r.concurrentStreams.p50;
  const cttfb99 = (r: TargetResult): number => r.concurrentStreams.p99;
  const streamsPerSecond = (r: TargetResult): number => r.concurrentStreams.streamsPerSecond;
  console.log(
    table(
      ["figure", ...results.map((r) => r.name)],
      [
        row("throughput req/s", (r) => fmt(r.throughput.rps, 0)),
        row("  ÷ floor", (r) => pct(r.throughput.rps / floor.throughput.rps)),
        row("  ÷ direct", (r) => pct(r.throughput.rps / direct.throughput.rps)),
        row("CPU µs/request (target process)", (r) => fmt(r.throughput.cpuUsPerRequest, 0)),
        ...ratios((r) => r.throughput.cpuUsPerRequest),
        row("heap KiB allocated/request", (r) => fmt(r.throughput.allocatedBytesPerRequest / 1024, 1)),
        row(`latency p50 ms @${RATE}/s`, (r) => fmt(p50(r), 3)),
        ...ratios(p50),
        ...differences(p50),
        row(`latency p99 ms @${RATE}/s`, (r) => fmt(p99(r), 3)),
        ...ratios(p99),
        ...differences(p99),
        row("  generator max lag ms", (r) => fmt(r.latencyMs.maxLagMs, 1)),
        row("stream first byte p50 ms", (r) => fmt(ttfb50(r), 3)),
        ...ratios(ttfb50),
        ...differences(ttfb50),
        row("stream first byte p99 ms", (r) => fmt(ttfb99(r), 3)),
        ...ratios(ttfb99),
        ...differences(ttfb99),
        row(`${STREAM_CONNECTIONS} streams: first byte p50 ms`, (r) => fmt(cttfb50(r), 3)),
        ...ratios(cttfb50),
        row(`${STREAM_CONNECTIONS} streams: first byte p99 ms`, (r) => fmt(cttfb99(r), 3)),
        ...ratios(cttfb99),
        row(`${STREAM_CONNECTIONS} streams: streams/s`, (r) => fmt(streamsPerSecond(r), 0)),
        row("  ÷ floor", (r) => pct(streamsPerSecond(r) / streamsPerSecond(floor))),
        row("cache-hit throughput req/s", (r) => fmt(r.cacheHits?.rps ?? null, 0)),
        row("  ÷ floor pass-through", (r) => (r.cacheHits === null ? "-" : times(r.cacheHits.rps, floor.throughput.rps))),
        row("  heap KiB allocated/hit", (r) => fmt((r.cacheHits?.allocatedBytesPerRequest ?? Number.NaN) / 1024, 1)),
        row("peak RSS MiB (process tree)", (r) => fmt(r.peakRssMiB, 0)),
        ...ratios((r) => r.peakRssMiB),
        row("errors", (r) => String(r.errors)),
      ],
    ),
  );
  console.log("");
  for (const r of results.filter((result) => result.kind === "gateway")) {
    console.log(
      `${r.name}: throughput ${pct(r.throughput.rps / floor.throughput.rps)} of floor, ` +
        `${(r.throughput.cpuUsPerRequest / floor.throughput.cpuUsPerRequest).toFixed(1)}x the floor's CPU per request; added p50 ${signed(r.latencyMs.p50 - direct.latencyMs.p50, 3)} ms ` +
        `(${signed(r.latencyMs.p50 - floor.latencyMs.p50, 3)} ms over floor); ${STREAM_CONNECTIONS} streams: first byte p50 ` +
        `${times(cttfb50(r), cttfb50(floor))} the floor's, ${pct(streamsPerSecond(r) / streamsPerSecond(floor))} of its streams/s; ` +
        `peak RSS ${fmt(r.peakRssMiB, 0)} MiB`,
    );
    if (r.cacheHits !== null) {
      console.log(
        `${r.name}: cache hits ${fmt(r.cacheHits.rps, 0)} req/s, ${times(r.cacheHits.rps, floor.throughput.rps)} the floor's pass-through ` +
          `${fmt(floor.throughput.rps, 0)} req/s, ${fmt(r.cacheHits.cpuUsPerRequest, 0)} µs CPU per hit`,
      );
    }
  }
  const errors = results.reduce((sum, r) => sum + r.errors, 0);
  console.log(`errors: ${errors}${errors > 0 ? "  <- INVALID RUN" : ""}`);
  for (const r of results) for (const sample of r.errorSamples) console.log(`  ${r.name}: ${sample}`);
}

/** BENCH_NODE_FLAGS: node or V8 flags after those `npm start` gives the gateway (a later flag wins). */
const BENCH_NODE_FLAGS = (process.env["BENCH_NODE_FLAGS"] ?? "").split(" ").filter((flag) => flag !== "");

/** The node flags a gateway child runs with: those `npm start` gives the gateway on its database, then BENCH_NODE_FLAGS. */
function gatewayNodeFlags(variant: Record<string, unknown>): string[] {
  return [...servingNodeFlags(variant["databaseUrl"] === undefined), ...BENCH_NODE_FLAGS];
}

/**
 * The node flags that profile a child under BENCH_PROFILE=1: one directory per target (node writes one
 * profile per thread), sampled every 100 µs, as a request's CPU time is short.
 */
function profileArgs(name: string): string[] {
  return PROFILE ? ["--cpu-prof", "--cpu-prof-interval=100", `--cpu-prof-dir=${PROFILE_DIR}/${name}`] : [];
}

/** Starts a gateway.ts child configured by `variant` (its BENCH_VARIANT, see gateway.ts) with the gateway's node flags. */
function startGateway(name: string, gatewayEnv: Record<string, string>, variant: Record<string, unknown>): Promise<Child> {
  return startChild(name, "./gateway.ts", { ...gatewayEnv, BENCH_VARIANT: JSON.stringify({ name, ...variant }) }, [...gatewayNodeFlags(variant), ...profileArgs(name)]);
}

/** Runs the template maker of `npm run build` into `dir` (the gateway bundle's DEFAULT_TEMPLATE_DIR). */
async function makeTemplate(dir: string): Promise<void> {
  mkdirSync(BUILD_DIR, { recursive: true });
  const maker = spawn(process.execPath, ["--import", "tsx", "src/store/embedded-template-cli.ts", dir], { cwd: REPO, stdio: ["ignore", "inherit", "inherit"] });
  const code = await new Promise<number | null>((resolve, reject) => {
    maker.once("error", reject);
    maker.once("exit", resolve);
  });
  if (code !== 0) throw new Error(`making the embedded database template in ${dir} failed (exit code ${code})`);
}

// ---------------------------------------------------------------------------------------------------
// Features: each optional feature alone against the same gateway with every one of them off

/** The load balancer's five toggles off: adaptive selection is one of the features measured. */
const BALANCER_OFF = { direction_selection_enabled: false, route_selection_enabled: false, append_fallbacks_to_pinned: false, reroute_failed_directions: false, prune_failed_fallbacks: false };

/** The all-off gateway's config file, besides gateway.ts's provider and virtual key; each feature's sections replace its own. */
const ALL_OFF_CONFIG: Record<string, unknown> = { load_balancer_config: BALANCER_OFF };

/** One optional feature: how a user turns it on, and what a request that uses it sends. */
interface Feature {
  name: string;
  /** How it is configured, for the report. */
  description: string;
  /** Config-file sections over ALL_OFF_CONFIG, as config.json writes them. */
  config?: Record<string, unknown>;
  /** Fields of the bench's virtual key in that file. */
  virtualKey?: Record<string, unknown>;
  /** Header sets the feature's requests add, one request after another: how a request asks for it. The all-off gateway gets none. */
  headers?: readonly Record<string, string>[];
  /** What gives each request its body, on both sides: the work asked is the same, only the gateway differs. */
  body?: () => string;
  /** The `x-gw-cache` answer header the feature's answers must carry. */
  cache?: string;
  /** A body the feature refuses once it acts on requests: sent once first; answered by the upstream, the feature is not measured. */
  refused?: string;
}

/** How the all-off gateway is configured, for the report. */
const ALL_OFF = "the bench's provider and virtual key from a config file, load balancer off, nothing else configured";

/** Routing rules the routing-rules feature adds: a few, as a deployment has. */
const GUARD_RULES = 4;
/** Distinct session ids the session-affinity feature sends. */
const SESSIONS = 4;
const KEY_SCOPE = { scope: "virtual_key", scope_id: "vk-bench" };
/** Where a matching rule sends the bench's request: where it would go anyway. */
const SAME_TARGET = [{ provider: "openai", model: "gpt-4o-mini" }];
/** Large enough never to refuse a request of the run. */
const GROUP_LIMITS = {
  budget: { max_limit: 1e9, reset_duration: "1M" },
  rate_limit: { request_max_limit: 1e12, request_reset_duration: "1h", token_max_limit: 1e15, token_reset_duration: "1h" },
};

/** CHAT_BODY split where a number goes, so that no two requests are the same (a cache that must always miss). */
const [BEFORE_NUMBER = "", AFTER_NUMBER = ""] = JSON.stringify({
  model: "gpt-4o-mini",
  messages: MESSAGES.map((message, i) => (i === MESSAGES.length - 1 ? { ...message, content: `${message.content} (request {n})` } : message)),
  temperature: 0.2,
  max_tokens: 160,
}).split("{n}");
let numbered = 0;
const numberedBody = (): string => `${BEFORE_NUMBER}${++numbered}${AFTER_NUMBER}`;

/** The mock upstream's completion id (upstream.ts): an answer carrying it came from the upstream. */
const UPSTREAM_ANSWER_ID = "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT";

/** Every feature measured, in order; `collectorUrl` is the no-op OTLP collector's. */
function features(collectorUrl: string): Feature[] {
  const tracing = (ratio: number): Feature => ({
    name: `tracing-${ratio}`,
    description: `telemetry.otlp {endpoint: the no-op collector, sample_ratio: ${ratio}}`,
    config: { telemetry: { otlp: { endpoint: collectorUrl, sample_ratio: ratio } } },
  });
  return [
    { name: "none", description: "nothing: a second all-off gateway, the measure's own spread", config: {} },
    {
      name: "routing-rules",
      description: `${GUARD_RULES} enabled routing rules, half in the key's scope and half global, each needing a header the bench never sends`,
      config: {
        governance: {
          routing_rules: Array.from({ length: GUARD_RULES }, (_, i) => ({
            id: `rr-guard-${i}`,
            name: `guard-${i}`,
            ...(i % 2 === 0 ? KEY_SCOPE : {}),
            priority: i,
            cel_expression: `"x-bench-tier" in headers && headers["x-bench-tier"] == "tier-${i}"`,
            targets: [{ provider: "openai", model: "gpt-4o" }],
          })),
        },
      },
    },
    {
      name: "routing-rule-match",
      description: `one rule in the key's scope, model == "gpt-4o-mini", routing to openai/gpt-4o-mini`,
      config: { governance: { routing_rules: [{ id: "rr-match", name: "match", ...KEY_SCOPE, cel_expression: `model == "gpt-4o-mini"`, targets: SAME_TARGET }] } },
    },
    {
      name: "hierarchy",
      description: "the key in a team of a customer, each with a monthly budget and request and token rate limits",
      config: { governance: { customers: [{ id: "cu-bench", name: "bench customer", ...GROUP_LIMITS }], teams: [{ id: "team-bench", name: "bench team", customer_id: "cu-bench", ...GROUP_LIMITS }] } },
      virtualKey: { team_id: "team-bench" },
    },
    {
      name: "cache-direct",
      description: "the key's cache {mode: direct, ttl: 1h}, every request's body unique, so each is a miss whose answer is stored",
      virtualKey: { cache: { mode: "direct", ttl: "1h" } },
      body: numberedBody,
      cache: "miss",
    },
    {
      name: "complexity",
      description: "routing.complexity semantic (the mock's embeddings, examples for each tier) and a rule in the key's scope reading complexity_tier",
      config: {
        routing: {
          complexity: {
            mechanism: "semantic",
            embedding: { provider: "openai", model: "text-embedding-3-small" },
            examples: { SIMPLE: ["hello", "what time is it"], MEDIUM: ["summarise this article in five bullet points"], COMPLEX: ["design a fault tolerant distributed database"] },
          },
        },
        governance: { routing_rules: [{ id: "rr-complex", name: "complex", ...KEY_SCOPE, cel_expression: `complexity_tier == "COMPLEX"`, targets: SAME_TARGET }] },
      },
    },
    {
      name: "session-affinity",
      description: `every request sends x-gw-session-id, ${SESSIONS} distinct ids in turn`,
      headers: Array.from({ length: SESSIONS }, (_, i) => ({ "x-gw-session-id": `bench-session-${i}` })),
    },
    {
      name: "load-balancing",
      description: "load_balancer_config's defaults (direction and route selection on), one provider with two keys",
      config: { load_balancer_config: {} },
    },
    tracing(1),
    tracing(0.1),
    tracing(0),
    {
      name: "dimension-headers",
      description: "client.prometheus_labels [team, app], every request sending x-gw-dim-team and x-gw-dim-app",
      config: { client: { prometheus_labels: ["team", "app"] } },
      headers: [{ "x-gw-dim-team": "platform", "x-gw-dim-app": "bench" }],
    },
    piiGuardrail("guardrails", ["input", "output"]),
    piiGuardrail("guardrail-pii-input", ["input"]),
  ];
}

/** A global `pii` guardrail on `stages`, action block; its check that it applies is a request with an e-mail address, refused. */
function piiGuardrail(name: string, stages: string[]): Feature {
  return {
    name,
    description: `a global pii guardrail on the ${stages.join(" and ")} stage${stages.length > 1 ? "s" : ""}, action block`,
    config: { guardrails: [{ id: "gr-bench", name: "bench-pii", stages, check: { type: "pii", pii: {} }, action: "block" }] },
    refused: JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "Write to me at jane.doe@example.com about it." }], max_tokens: 160 }),
  };
}

/** The features BENCH_FEATURES picks (all by default); the collector's address does not change their names. */
const SELECTED_FEATURES = subset(
  "BENCH_FEATURES",
  features("").map((feature) => feature.name),
);

/** What one feature cost against the all-off gateway, from taking turns; or why it was not measured. */
type FeatureOutcome =
  | { name: string; description: string; notMeasured: string }
  | {
      name: string;
      description: string;
      allOff: Figures;
      feature: Figures;
      throughputRatio: number;
      cpuRatio: number;
      peakRssMiB: number | null;
      /** The peak RSS of the all-off gateway it took turns with. */
      allOffPeakRssMiB: number | null;
      errors: number;
      errorSamples: string[];
    };

/** The features phase's findings, as last-run.json keeps them. */
interface FeaturesRun {
  allOff: { description: string };
  features: FeatureOutcome[];
}

/** Whether the gateway at `url` passes `body` on to the upstream (a 200 carrying the upstream's answer) rather than refusing it. */
async function passesThrough(url: string, body: string): Promise<boolean> {
  const pool = new Pool(url, { connections: 1 });
  try {
    const res = await pool.request({ method: "POST", path: PATH, headers: HEADERS, body });
    const text = await res.body.text();
    return res.statusCode === 200 && text.includes(UPSTREAM_ANSWER_ID);
  } finally {
    await pool.close();
  }
}

/**
 * The all-off gateway and the gateway with `feature` on take turns, over `slices` one-second slices; the side
 * that `allOffLeads` names warms up first and takes the first slice.
 */
async function measureFeature(feature: Feature, allOff: Child, child: Child, slices: number, allOffLeads: boolean): Promise<FeatureOutcome> {
  const { name, description } = feature;
  if (feature.refused !== undefined && (await passesThrough(child.url, feature.refused))) {
    return { name, description, notMeasured: "configured, but not applied to /v1/chat/completions yet: a request it should refuse was answered by the upstream" };
  }
  // Built once, so the generator's own work per request is the same on both sides.
  const headerSets = feature.headers?.map((extra) => ({ ...HEADERS, ...extra }));
  let next = 0;
  const headers = headerSets === undefined ? HEADERS : () => headerSets[next++ % headerSets.length] ?? HEADERS;
  const body = feature.body === undefined ? {} : { body: feature.body };
  const offTurn: Turn = { url: allOff.url, pid: allOff.process.pid, shape: { headers: HEADERS, ...body } };
  const onTurn: Turn = { url: child.url, pid: child.process.pid, shape: { headers, ...body, ...(feature.cache === undefined ? {} : { cache: feature.cache }) } };
  const run = allOffLeads
    ? await inTurns(`all-off, ${child.name}`, "features", "taking turns", offTurn, onTurn, slices)
    : await inTurns(`${child.name}, all-off`, "features", "taking turns", onTurn, offTurn, slices);
  if (run === null) throw new Error("the features phase is not selected");
  const [off, on] = allOffLeads ? [run.a, run.b] : [run.b, run.a];
  return {
    name,
    description,
    allOff: off,
    feature: on,
    throughputRatio: on.rps / off.rps,
    cpuRatio: on.cpuUsPerRequest / off.cpuUsPerRequest,
    peakRssMiB: null,
    allOffPeakRssMiB: null,
    errors: run.errors,
    errorSamples: run.errorSamples,
  };
}

/** Two measures' figures of one target as one: their requests, time and CPU added up. */
function addFigures(x: Figures, y: Figures): Figures {
  const requests = x.requests + y.requests;
  const ms = (x.requests * 1000) / x.rps + (y.requests * 1000) / y.rps;
  return { rps: (requests * 1000) / ms, requests, cpuUsPerRequest: (x.cpuUsPerRequest * x.requests + y.cpuUsPerRequest * y.requests) / requests };
}

/** Two of a feature's measures (pairs, or pairs already joined) as one outcome; one not measured makes the feature not measured. */
function joinedPairs(first: FeatureOutcome, second: FeatureOutcome): FeatureOutcome {
  if ("notMeasured" in first) return first;
  if ("notMeasured" in second) return second;
  const allOff = addFigures(first.allOff, second.allOff);
  const feature = addFigures(first.feature, second.feature);
  const peak = (x: number | null, y: number | null): number | null => (x === null ? y : y === null ? x : Math.max(x, y));
  return {
    ...first,
    allOff,
    feature,
    throughputRatio: feature.rps / allOff.rps,
    cpuRatio: feature.cpuUsPerRequest / allOff.cpuUsPerRequest,
    peakRssMiB: peak(first.peakRssMiB, second.peakRssMiB),
    allOffPeakRssMiB: peak(first.allOffPeakRssMiB, second.allOffPeakRssMiB),
    errors: first.errors + second.errors,
    errorSamples: [...first.errorSamples, ...second.errorSamples],
  };
}

/**
 * Per feature, starts an all-off gateway and one with the feature on, lets them take turns and stops both before
 * the next pair starts, so no more than two gateways are up at once; then does the same with the two started in
 * the other order, FEATURE_PAIRS pairs in all. Each pair takes SECONDS of slices, the side started first leading.
 */
async function measureFeatures(gatewayEnv: Record<string, string>, collectorUrl: string): Promise<FeaturesRun> {
  const start = (name: string, feature: Feature | null): Promise<Child> =>
    startGateway(name, gatewayEnv, { appOptions: {}, config: { ...ALL_OFF_CONFIG, ...feature?.config }, virtualKey: feature?.virtualKey });
  const outcomes: FeatureOutcome[] = [];
  for (const feature of features(collectorUrl).filter((candidate) => SELECTED_FEATURES.has(candidate.name))) {
    let joined: FeatureOutcome | undefined;
    for (let index = 0; index < FEATURE_PAIRS; index++) {
      const allOffFirst = index % 2 === 0;
      process.stderr.write(`features: starting an all-off gateway and one with ${feature.name}, ${allOffFirst ? "all-off" : feature.name} first...\n`);
      const pair = await measurePair(feature, allOffFirst, start);
      if (!("notMeasured" in pair)) process.stderr.write(`features: ${feature.name}, ${allOffFirst ? "all-off" : feature.name} first: throughput ${pct(pair.throughputRatio)} of all-off, CPU per request ${fmt(pair.cpuRatio)}x\n`);
      joined = joined === undefined ? pair : joinedPairs(joined, pair);
    }
    if (joined !== undefined) outcomes.push(joined);
  }
  return { allOff: { description: ALL_OFF }, features: outcomes };
}

/**
 * Starts an all-off gateway and one with `feature`, in the order given, measures them in turns over SECONDS
 * slices (the one started first leading them), and stops both.
 */
async function measurePair(feature: Feature, allOffFirst: boolean, start: (name: string, feature: Feature | null) => Promise<Child>): Promise<FeatureOutcome> {
  const started: Child[] = [];
  try {
    let allOff: Child | undefined;
    let child: Child | undefined;
    for (const side of allOffFirst ? ["all-off", "feature"] : ["feature", "all-off"]) {
      if (side === "all-off") {
        allOff = await start("all-off", null);
        started.push(allOff);
        continue;
      }
      try {
        child = await start(`feature-${feature.name}`, feature);
        started.push(child);
      } catch (err) {
        return { name: feature.name, description: feature.description, notMeasured: `not configurable yet (${err instanceof Error ? err.message : String(err)})` };
      }
    }
    if (allOff === undefined || child === undefined) throw new Error("both gateways of a pair start before it is measured");
    const outcome = await measureFeature(feature, allOff, child, SECONDS, allOffFirst);
    // Read before they stop: what a gateway holds while closing is no part of serving.
    if ("peakRssMiB" in outcome) {
      outcome.peakRssMiB = peaks.peakOf(child.process.pid);
      outcome.allOffPeakRssMiB = peaks.peakOf(allOff.process.pid);
    }
    return outcome;
  } finally {
    for (const child of started.reverse()) await stopChild(child.process);
  }
}

/** Prints one line per feature; answers the phase's error count. */
function reportFeatures(run: FeaturesRun, loadAtStart: number | null): number {
  if (loadAtStart !== null) console.log(`\nnode ${process.version}, ${CONNECTIONS} connections closed loop; ${conditions(loadAtStart)}`);
  console.log(`\nfeatures, each alone against an all-off gateway of its own age (${run.allOff.description}), taking turns in 1 s slices (${FEATURE_PAIRS} pairs of ${SECONDS} s per feature, half of them with each side started first):`);
  let errors = 0;
  const samples: string[] = [];
  for (const outcome of run.features) {
    if ("notMeasured" in outcome) {
      console.log(`${outcome.name}: ${outcome.notMeasured}`);
      continue;
    }
    console.log(`feature ${outcome.name}: throughput ${pct(outcome.throughputRatio)} of all-off, CPU per request ${fmt(outcome.cpuRatio)}x`);
    errors += outcome.errors;
    samples.push(...outcome.errorSamples.map((sample) => `${outcome.name}: ${sample}`));
  }
  const cached = run.features.find((outcome) => outcome.name === "cache-direct");
  if (cached !== undefined && "peakRssMiB" in cached) {
    // Every miss is stored: whether memory stays bounded shows in the process tree's peak, not in req/s.
    console.log(
      `cache-direct: ${cached.feature.requests} misses in the counted slices, each answer cached; peak RSS ${fmt(cached.peakRssMiB, 0)} MiB, the all-off gateway's ${fmt(cached.allOffPeakRssMiB, 0)} MiB`,
    );
  }
  reportErrors("features", errors, samples);
  return errors;
}

/** What the phases that measure each target alone, and the turns taken between them, found. */
interface TargetsRun {
  results: TargetResult[];
  cluster: { rps: number; perNode: number[]; cpuUsPerRequest: number[]; errors: number; errorSamples: string[] } | null;
  dutiesInTurns: { floor: Figures; duties: Figures; errors: number; errorSamples: string[] } | null;
  tracingInTurns: { untraced: Figures; traced: Figures; errors: number; errorSamples: string[] } | null;
  cacheHitsInTurns: { floor: Figures; hits: Figures; errors: number; errorSamples: string[] } | null;
}

/** Starts the floors and the gateway variants, measures each, has them take turns, and stops them. */
async function measureTargets(upstream: Child, gatewayEnv: Record<string, string>, tracing: Record<string, unknown>): Promise<TargetsRun> {
  const env = { BENCH_UPSTREAM_URL: upstream.url };
  process.stderr.write(`starting the floors and ${SELECTED_VARIANTS.size} gateway variant(s) (the embedded database takes a few seconds)...\n`);
  const starting = [
    startChild("floor", "./floor.ts", env),
    startChild("floor-json", "./floor.ts", { ...env, BENCH_FLOOR_PARSE: "1" }, profileArgs("floor-json")),
    startChild("floor-duties", "./floor-duties.ts", env, profileArgs("floor-duties")),
    ...GATEWAY_VARIANTS.filter((variant) => SELECTED_VARIANTS.has(variant.name)).map((variant) =>
      startGateway(variant.name, gatewayEnv, {
        appOptions: variant.traced ? { ...variant.appOptions, tracing } : variant.appOptions,
        routingRules: variant.routingRules,
        logLevel: variant.logLevel,
        databaseUrl: variant.databaseUrl,
      }),
    ),
  ];
  const started = await Promise.all(starting);
  const [pipe, floor, duties, ...gateways] = started;
  if (!pipe || !floor || !duties) throw new Error("the floors did not start");
  // Started after the others, so the single node and the cluster do not contend for the CPU while starting.
  const cluster = CLUSTER && DATABASE_URL !== undefined ? { schema: randomSchemaName(), encryptionKey: randomBytes(32).toString("hex") } : null;
  clusterSchema = cluster?.schema ?? null;
  const clusterNodes =
    cluster === null
      ? []
      : await Promise.all(
          ["cluster-a", "cluster-b"].map((name) => startGateway(name, gatewayEnv, { appOptions: {}, databaseUrl: DATABASE_URL, cluster })),
        );
  const targets = [
    { name: "direct", kind: "direct" as const, description: "the mock upstream itself", url: upstream.url, pid: upstream.process.pid },
    { name: "floor", kind: "pipe" as const, description: "minimal undici pass-through proxy", url: pipe.url, pid: pipe.process.pid, meter: allocationMeter(pipe) },
    { name: "floor-json", kind: "floor" as const, description: "the same, parsing the request JSON first", url: floor.url, pid: floor.process.pid, meter: allocationMeter(floor) },
    { name: "floor-duties", kind: "duties" as const, description: "floor-json plus a key, limits, the answer's usage, metrics and an access line", url: duties.url, pid: duties.process.pid, meter: allocationMeter(duties) },
    ...gateways.map((g) => ({
      name: g.name,
      kind: "gateway" as const,
      description: GATEWAY_VARIANTS.find((v) => v.name === g.name)?.description ?? "",
      url: g.url,
      pid: g.process.pid,
      meter: allocationMeter(g),
    })),
  ];
  const results: TargetResult[] = [];
  for (const target of targets) {
    results.push(await measure(target));
    await sleep(1_000);
  }
  // What the goal's duties cost by themselves, with the machine's drift cancelled: the two floors take turns.
  const floorJson = targets.find((t) => t.kind === "floor");
  const floorDuties = targets.find((t) => t.kind === "duties");
  const dutiesRun = floorJson !== undefined && floorDuties !== undefined ? await inTurns("floor-json, floor-duties", "throughput", "taking turns", floorJson, floorDuties) : null;
  // Tracing's cost measured with the machine's drift cancelled: untraced and traced take turns.
  const untraced = targets.find((t) => t.name === "gateway");
  const traced = targets.find((t) => t.name === "gateway-traced");
  const tracingRun = untraced !== undefined && traced !== undefined ? await inTurns("gateway, gateway-traced", "throughput", "taking turns", untraced, traced) : null;
  // The cache's goal measured the same way: the floor's pass-through and the gateway's hits take turns.
  const hitsRun =
    untraced !== undefined && floorJson !== undefined
      ? await inTurns("floor-json, gateway", "cache-hit", "pass-through and cache hits taking turns", floorJson, { ...untraced, shape: CACHE_HIT })
      : null;
  let clusterResult: TargetsRun["cluster"] = null;
  if (clusterNodes.length > 0 && SELECTED_PHASES.has("throughput")) {
    const errors = new Errors();
    const run = await phase("cluster", "throughput", `two nodes round-robin (${WARMUP_MS / 1000} s warm-up + ${SECONDS} s)`, () => clusterThroughput(clusterNodes.map((n) => n.url), clusterNodes.map((n) => n.process.pid), errors), { rps: Number.NaN, perNode: [], cpuUsPerRequest: [] });
    clusterResult = { ...run, errors: errors.count, errorSamples: [...errors.samples] };
  }
  for (const [i, target] of targets.entries()) {
    const result = results[i];
    // Read before they stop: what a process holds while closing is no part of serving.
    // The direct target's process is the mock upstream: its RSS is what no proxy at all costs.
    if (result) result.peakRssMiB = peaks.peakOf(target.pid);
  }
  // Stopped before anything else runs, so later phases measure beside no idle gateway.
  await Promise.all([...started, ...clusterNodes].map((child) => stopChild(child.process)));
  return {
    results,
    cluster: clusterResult,
    dutiesInTurns: dutiesRun && { floor: dutiesRun.a, duties: dutiesRun.b, errors: dutiesRun.errors, errorSamples: dutiesRun.errorSamples },
    tracingInTurns: tracingRun && { untraced: tracingRun.a, traced: tracingRun.b, errors: tracingRun.errors, errorSamples: tracingRun.errorSamples },
    cacheHitsInTurns: hitsRun && { floor: hitsRun.a, hits: hitsRun.b, errors: hitsRun.errors, errorSamples: hitsRun.errorSamples },
  };
}

/** Prints what measureTargets found; answers its error count. */
function reportTargets(run: TargetsRun, loadAtStart: number): number {
  const { results, cluster: clusterResult, tracingInTurns: tracingCost, dutiesInTurns, cacheHitsInTurns: hitsInTurns } = run;
  report(results, loadAtStart);
  if (clusterResult !== null) {
    const single = results.find((r) => r.name === "gateway-pg");
    const nodes = clusterResult.perNode.map((rps, i) => `node ${i + 1} ${fmt(rps, 0)} req/s at ${fmt(clusterResult.cpuUsPerRequest[i] ?? Number.NaN, 0)} µs CPU each`).join(", ");
    console.log(`cluster of 2 on PostgreSQL, round-robin: ${fmt(clusterResult.rps, 0)} req/s in all (${nodes}); one node (gateway-pg): ${single ? `${fmt(single.throughput.rps, 0)} req/s at ${fmt(single.throughput.cpuUsPerRequest, 0)} µs CPU each` : "not run (BENCH_VARIANTS)"}`);
    reportErrors("cluster", clusterResult.errors, clusterResult.errorSamples);
  }
  if (tracingCost !== null) {
    const { untraced: off, traced: on } = tracingCost;
    console.log(
      `tracing, the two gateways taking turns: traced ${fmt(on.rps, 0)} req/s at ${fmt(on.cpuUsPerRequest, 0)} µs CPU, untraced ${fmt(off.rps, 0)} req/s at ` +
        `${fmt(off.cpuUsPerRequest, 0)} µs: throughput ${pct(on.rps / off.rps)} of the untraced, CPU per request ${fmt(on.cpuUsPerRequest / off.cpuUsPerRequest)}x`,
    );
    reportErrors("tracing", tracingCost.errors, tracingCost.errorSamples);
  }
  if (dutiesInTurns !== null) {
    const { floor: bare, duties: dutiful } = dutiesInTurns;
    console.log(
      `floor-duties, taking turns with floor-json: ${fmt(dutiful.rps, 0)} req/s at ${fmt(dutiful.cpuUsPerRequest, 0)} µs CPU, floor-json ${fmt(bare.rps, 0)} req/s ` +
        `at ${fmt(bare.cpuUsPerRequest, 0)} µs: throughput ${pct(dutiful.rps / bare.rps)} of the floor's, CPU per request ${fmt(dutiful.cpuUsPerRequest / bare.cpuUsPerRequest)}x`,
    );
    reportErrors("floor turns", dutiesInTurns.errors, dutiesInTurns.errorSamples);
  }
  if (hitsInTurns !== null) {
    const { floor: pass, hits } = hitsInTurns;
    console.log(
      `cache hits, taking turns with floor-json's pass-through: ${fmt(hits.rps, 0)} hits/s at ${fmt(hits.cpuUsPerRequest, 0)} µs CPU, pass-through ${fmt(pass.rps, 0)} req/s ` +
        `at ${fmt(pass.cpuUsPerRequest, 0)} µs: ${fmt(hits.rps / pass.rps)}x the floor's pass-through`,
    );
    reportErrors("cache-hit turns", hitsInTurns.errors, hitsInTurns.errorSamples);
  }
  return results.reduce((sum, r) => sum + r.errors, 0) + (clusterResult?.errors ?? 0) + (tracingCost?.errors ?? 0) + (hitsInTurns?.errors ?? 0) + (dutiesInTurns?.errors ?? 0);
}

async function main(): Promise<void> {
  const loadAtStart = load();
  if (PROFILE) mkdirSync(PROFILE_DIR, { recursive: true });
  const [upstream, collector] = await Promise.all([startChild("upstream", "./upstream.ts", {}), startChild("collector", "./collector.ts", {})]);
  // The gateways start with the environment `npm start` gives the gateway; the floors and the upstream without it.
  const gatewayEnv = { ...SERVING_ENVIRONMENT, BENCH_UPSTREAM_URL: upstream.url };
  const tracing = { url: `${collector.url}/v1/traces`, headers: {}, serviceName: "gw-bench", sampler: "always_on", sampleRatio: 1, captureContent: false };
  // A built gateway's first start copies the migrated template `npm run build` leaves beside the bundle
  // instead of running initdb (slow and memory-hungry, in a child process); the bench's
  // bundles get the same template, so peak RSS is the running gateway's, not a one-off initdb's.
  process.stderr.write("making the embedded database's migrated template for the gateway bundles...\n");
  await makeTemplate(`${BUILD_DIR}/pglite-template`);
  const targets = PHASES.some((p) => p !== "features" && SELECTED_PHASES.has(p)) ? await measureTargets(upstream, gatewayEnv, tracing) : null;
  const features = SELECTED_PHASES.has("features") ? await measureFeatures(gatewayEnv, collector.url) : null;
  peaks.stop();
  let errors = 0;
  if (targets !== null) errors += reportTargets(targets, loadAtStart);
  // The conditions line is the targets' table's when that ran.
  if (features !== null) errors += reportFeatures(features, targets === null ? loadAtStart : null);
  writeFileSync(
    LAST_RUN,
    `${JSON.stringify(
      {
        at: new Date().toISOString(),
        node: process.version,
        cores: availableParallelism(),
        loadAverage: { atStart: loadAtStart, atEnd: load() },
        settings: { phases: [...SELECTED_PHASES], seconds: SECONDS, warmupMs: WARMUP_MS, connections: CONNECTIONS, rate: RATE, latencyCount: LATENCY_COUNT, streamCount: STREAM_COUNT, streamConnections: STREAM_CONNECTIONS },
        results: targets?.results ?? [],
        cluster: targets?.cluster ?? null,
        dutiesInTurns: targets?.dutiesInTurns ?? null,
        tracingInTurns: targets?.tracingInTurns ?? null,
        cacheHitsInTurns: targets?.cacheHitsInTurns ?? null,
        features,
        errors,
        valid: errors === 0,
      },
      null,
      2,
    )}\n`,
  );
  console.log(`figures written to ${LAST_RUN}`);
  if (errors > 0) process.exitCode = 1;
}

/** The cluster nodes' shared schema, dropped once they stopped. */
let clusterSchema: string | null = null;

try {
  await main();
} catch (err) {
  process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
} finally {
  await stopAll();
  if (clusterSchema !== null && DATABASE_URL !== undefined) await dropSchema(DATABASE_URL, clusterSchema).catch(() => undefined);
}
