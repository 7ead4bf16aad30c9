/**
 * `npm run bench:allocation-sites`: where the gateway's heap allocations come from, per request, for a JSON
 * answer and for a 50-chunk stream. Allocation drives the garbage collector's share of CPU and the heap's
 * growth, and unlike req/s or CPU time it hardly moves with the machine's speed, so a change's effect on it
 * can be read from one run.
 *
 * The gateway runs as `npm start` runs it (outside-processes.ts) in front of the bench's mock upstream, with
 * V8's sampling heap profiler preloaded (allocation-sampler.ts). After a warm-up, the profiler samples
 * BENCH_REQUESTS requests (default 10000; a tenth as many streams), counting objects already collected too,
 * and the figures are its samples' bytes divided by the requests: in all, by function (named by the
 * function's first line in its source, through the bundle's source map) and by module. Sampling estimates:
 * sites of under about 100 bytes a request are noise. BENCH_DATABASE_URL runs the gateway on that
 * PostgreSQL server instead of the embedded database. BENCH_ALLOCATION_PROMOTED=1 leaves out the objects the
 * young generation's collections freed: the rest is what requests promote to the old generation. Build first
 * (`npm run build`; the npm script does).
 */
import autocannon from "autocannon";
import { once } from "node:events";
import { existsSync, readFileSync } from "node:fs";
import { SourceMap } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";
import { buildServerBundle } from "../src/build-bundle.js";
import { OUTSIDE_CHAT_BODY, OUTSIDE_HEADERS, OUTSIDE_PATH, OUTSIDE_STREAM_BODY, startBundledChild, startServedGateway, type Served } from "./outside-processes.js";

const REQUESTS = Number(process.env["BENCH_REQUESTS"] ?? 10_000);
const TOP = Number(process.env["BENCH_TOP"] ?? 30);
if (!Number.isInteger(REQUESTS) || REQUESTS < 100 || !Number.isInteger(TOP) || TOP < 1) throw new Error("BENCH_REQUESTS must be a whole number of at least 100 and BENCH_TOP a positive whole number");
const DATABASE_URL = process.env["BENCH_DATABASE_URL"] || undefined;
/** Read by the sampler in the gateway, which inherits this environment. */
const PROMOTED = process.env["BENCH_ALLOCATION_PROMOTED"] === "1";

const here = (file: string): string => fileURLToPath(new URL(file, import.meta.url));
const BUILD_DIR = here("../.tmp/bench-allocation");

/** One kind of request sampled: its body, its load and how many to warm up with. */
interface Kind {
  name: string;
  body: string;
  connections: number;
  warmup: number;
  requests: number;
}

const KINDS: readonly Kind[] = [
  { name: "JSON answer", body: OUTSIDE_CHAT_BODY, connections: 32, warmup: 20_000, requests: REQUESTS },
  { name: "50-chunk stream", body: OUTSIDE_STREAM_BODY, connections: 8, warmup: 3_000, requests: Math.max(100, Math.round(REQUESTS / 10)) },
];

/** A node of a V8 sampling heap profile. */
interface HeapNode {
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  selfSize: number;
  children: HeapNode[];
}

/** Sends `message` to the gateway's sampler and resolves with its answer; fails if the gateway exits first. */
async function ask(gateway: Served, message: object): Promise<unknown> {
  const waiting = new AbortController();
  const answered = once(gateway.process, "message", { signal: waiting.signal });
  const exited = once(gateway.process, "exit", { signal: waiting.signal }).then(([code]: unknown[]) => {
    throw new Error(`the gateway exited (code ${String(code)}) before its sampler answered ${JSON.stringify(message)}`);
  });
  gateway.process.send(message);
  try {
    const [answer] = (await Promise.race([answered, exited])) as [unknown];
    return answer;
  } finally {
    waiting.abort();
    // The loser is rejected by the abort: nothing waits on it.
    answered.catch(() => undefined);
    exited.catch(() => undefined);
  }
}

/** Sends `amount` requests of `kind`; throws when any answer was not a 200. */
async function load(gateway: Served, kind: Kind, amount: number): Promise<void> {
  const result = await autocannon({
    url: gateway.url + OUTSIDE_PATH,
    method: "POST",
    headers: OUTSIDE_HEADERS,
    body: kind.body,
    connections: kind.connections,
    amount,
  });
  const failed = result.non2xx + result.errors + result.timeouts;
  if (failed > 0) throw new Error(`${failed} of ${result.requests.total} ${kind.name} requests were not 200s`);
}

/** Names a profile frame: a bundle's position by the source module and line the bundle's source map gives. */
function framer(): (frame: HeapNode["callFrame"]) => { site: string; module: string } {
  const maps = new Map<string, SourceMap | null>();
  return (frame) => {
    const name = frame.functionName || "(anonymous)";
    if (!frame.url.startsWith("file://")) return { site: `${name} ${frame.url || "(native)"}`, module: frame.url || "(native)" };
    const file = fileURLToPath(frame.url);
    let map = maps.get(file);
    if (map === undefined) {
      map = existsSync(`${file}.map`) ? new SourceMap(JSON.parse(readFileSync(`${file}.map`, "utf8")) as ConstructorParameters<typeof SourceMap>[0]) : null;
      maps.set(file, map);
    }
    // Node's typing says an entry is always found; an empty object comes back when it is not.
    const entry = map?.findEntry(frame.lineNumber, frame.columnNumber) as { originalSource?: string; originalLine?: number } | undefined;
    if (entry?.originalSource === undefined) return { site: `${name} ${file}`, module: file };
    const module = entry.originalSource.replace(/^(?:\.\.?\/)+/, "");
    return { site: `${name} ${module}:${(entry.originalLine ?? 0) + 1}`, module };
  };
}

/** Prints the bytes per request of a profile: in all, by site and by module. */
function report(kind: Kind, head: HeapNode): void {
  const name = framer();
  const bySite = new Map<string, number>();
  const byModule = new Map<string, number>();
  let total = 0;
  const walk = (node: HeapNode): void => {
    const { site, module } = name(node.callFrame);
    total += node.selfSize;
    bySite.set(site, (bySite.get(site) ?? 0) + node.selfSize);
    byModule.set(module, (byModule.get(module) ?? 0) + node.selfSize);
    for (const child of node.children) walk(child);
  };
  walk(head);
  const perRequest = (bytes: number): string => (bytes / kind.requests).toFixed(0).padStart(7);
  const top = (counts: Map<string, number>): string =>
    [...counts]
      .sort((a, b) => b[1] - a[1])
      .slice(0, TOP)
      .map(([what, bytes]) => `${perRequest(bytes)}  ${what}`)
      .join("\n");
  process.stdout.write(`\n${kind.name}: ${perRequest(total).trim()} bytes ${PROMOTED ? "promoted to the old generation" : "allocated"} per request (${kind.requests} sampled)\n\nby function (bytes per request):\n${top(bySite)}\n\nby module:\n${top(byModule)}\n`);
}

await buildServerBundle([here("./allocation-sampler.ts")], BUILD_DIR);
const upstream = await startBundledChild("./upstream.ts", {}, BUILD_DIR);
let gateway: Served | undefined;
try {
  gateway = await startServedGateway({ upstreamUrl: upstream.url, databaseUrl: DATABASE_URL, nodeOptions: ["--import", pathToFileURL(`${BUILD_DIR}/allocation-sampler.js`).href], ipc: true });
  process.stdout.write(`node ${process.version}, the gateway on ${DATABASE_URL === undefined ? "the embedded database" : "a PostgreSQL server"}\n`);
  for (const kind of KINDS) {
    await load(gateway, kind, kind.warmup);
    await ask(gateway, { start: true });
    await load(gateway, kind, kind.requests);
    const file = `${BUILD_DIR}/${kind.name.replace(/\W+/g, "-")}.heapprofile`;
    await ask(gateway, { stop: file });
    report(kind, (JSON.parse(readFileSync(file, "utf8")) as { head: HeapNode }).head);
  }
} finally {
  await gateway?.stop();
  await upstream.stop();
}
