/**
 * Soak: the real gateway (gateway.ts, embedded database) in front of the mock upstream (upstream.ts), both
 * child processes on loopback, driven at a steady rate for a long time (default 10 minutes at 50 requests/s)
 * with a mix of chat completions as JSON, streamed, with tools, and admin reads. Every 5 s it samples the
 * gateway's resident memory (/proc/<pid>/status) and heap in use (nodejs_heap_size_used_bytes on /metrics).
 * It reports the growth of both from the first minute after warm-up (minute 2 of a full run) to the last, and
 * every error; it exits 1 when either grows by 10% or more or any request failed.
 *
 *   npm run bench:soak                      10 minutes, 50 requests/s
 *   npm run bench:soak -- --duration 60 --rate 20
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readFile } from "node:fs/promises";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { Agent, request } from "undici";

const REPO = new URL("../", import.meta.url).pathname;
const VIRTUAL_KEY = "sk-gw-bench";
const SAMPLE_MS = 5_000;
/** Requests in flight beyond which a tick's requests count as errors rather than pile up without bound. */
const MAX_IN_FLIGHT = 500;
const GROWTH_LIMIT = 0.1;

const { values } = parseArgs({
  options: {
    duration: { type: "string", default: "600" },
    rate: { type: "string", default: "50" },
  },
});
const durationS = Number(values.duration);
const rate = Number(values.rate);
if (!(Number.isFinite(durationS) && durationS >= 10)) throw new Error(`--duration must be a number of seconds >= 10, got ${values.duration}`);
if (!(Number.isFinite(rate) && rate > 0 && rate <= 2_000)) throw new Error(`--rate must be a number of requests/s from 1 to 2000, got ${values.rate}`);
/** Warm-up excluded from the growth figures: 2 minutes of a full run, a fifth of a shorter one. */
const warmupS = Math.min(120, durationS / 5);

const children: ChildProcess[] = [];

/** Spawns `node --import tsx bench/<file>` and resolves with its child and port once it reports it. */
function startChild(file: string, env: Record<string, string>): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, ["--import", "tsx", `bench/${file}`], { cwd: REPO, env: { ...process.env, ...env }, stdio: ["pipe", "pipe", "inherit"] });
  children.push(child);
  return new Promise((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`${file} exited before reporting its port (code ${code})`)));
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).once("line", (line) => {
      const first = JSON.parse(line) as { port?: number; error?: string };
      if (first.port === undefined) reject(new Error(`${file} did not start: ${first.error ?? line}`));
      else resolve({ child, port: first.port });
    });
  });
}

function stopChildren(): void {
  // Each child exits when its stdin closes.
  for (const child of children) child.stdin?.end();
}
process.on("exit", stopChildren);

const upstream = await startChild("upstream.ts", {});
const gateway = await startChild("gateway.ts", { BENCH_UPSTREAM_URL: `http://127.0.0.1:${upstream.port}` });
const base = `http://127.0.0.1:${gateway.port}`;
const agent = new Agent({ connections: MAX_IN_FLIGHT, keepAliveTimeout: 30_000 });

const MESSAGES = [{ role: "user", content: "Explain keep-alive connections in two sentences." }];
const TOOLS = [{ type: "function", function: { name: "get_weather", description: "Weather of a city", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } }];

type Kind = "json" | "stream" | "tools" | "admin";
/** The mix, as a cycle of 20: 8 JSON, 6 streamed, 3 with tools, 3 admin reads. */
const MIX: Kind[] = ["json", "stream", "json", "tools", "stream", "json", "admin", "json", "stream", "tools", "json", "stream", "admin", "json", "stream", "json", "tools", "stream", "admin", "json"];
const ADMIN_PATHS = ["/api/governance/virtual-keys", "/api/v1/providers", "/api/mcp/clients"];

const counts: Record<Kind, number> = { json: 0, stream: 0, tools: 0, admin: 0 };
const errors = new Map<string, number>();
let inFlight = 0;
let sent = 0;

function recordError(what: string): void {
  errors.set(what, (errors.get(what) ?? 0) + 1);
}

async function chat(body: Record<string, unknown>, check: (text: string) => boolean, kind: Kind): Promise<void> {
  const res = await request(`${base}/v1/chat/completions`, {
    dispatcher: agent,
    method: "POST",
    headers: { "content-type": "application/json", "x-gw-vk": VIRTUAL_KEY },
    body: JSON.stringify({ model: "openai/gpt-4o-mini", messages: MESSAGES, ...body }),
  });
  const text = await res.body.text();
  if (res.statusCode !== 200) recordError(`${kind}: HTTP ${res.statusCode} ${text.slice(0, 120)}`);
  else if (!check(text)) recordError(`${kind}: unexpected answer ${text.slice(0, 120)}`);
}

async function one(kind: Kind, index: number): Promise<void> {
  if (kind === "json") return chat({}, (text) => text.includes('"finish_reason":"stop"'), kind);
  if (kind === "stream") return chat({ stream: true }, (text) => text.endsWith("data: [DONE]\n\n") && !text.includes('"error"'), kind);
  if (kind === "tools") return chat({ tools: TOOLS }, (text) => text.includes('"tool_calls"') && text.includes("get_weather"), kind);
  const path = ADMIN_PATHS[index % ADMIN_PATHS.length] ?? "/api/v1/providers";
  const res = await request(`${base}${path}`, { dispatcher: agent });
  await res.body.text();
  if (res.statusCode !== 200) recordError(`admin ${path}: HTTP ${res.statusCode}`);
}

function fire(): void {
  const index = sent++;
  const kind = MIX[index % MIX.length] ?? "json";
  counts[kind]++;
  if (inFlight >= MAX_IN_FLIGHT) {
    recordError(`more than ${MAX_IN_FLIGHT} requests in flight: the gateway is not keeping up`);
    return;
  }
  inFlight++;
  one(kind, index)
    .catch((err: unknown) => recordError(`${kind}: ${err instanceof Error ? err.message : String(err)}`))
    .finally(() => inFlight--);
}

interface Sample {
  atS: number;
  rss: number;
  heap: number;
}

async function sample(startedAt: number): Promise<Sample> {
  const status = await readFile(`/proc/${gateway.child.pid}/status`, "utf8");
  const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? "0");
  const res = await request(`${base}/metrics`, { dispatcher: agent });
  const metrics = await res.body.text();
  const heapLine = metrics.split("\n").find((line) => line.startsWith("nodejs_heap_size_used_bytes "));
  return { atS: (performance.now() - startedAt) / 1000, rss: rssKb * 1024, heap: Number(heapLine?.split(" ")[1] ?? "0") };
}

/** The median of the samples in [fromS, toS). */
function median(samples: Sample[], fromS: number, toS: number, pick: (s: Sample) => number): number {
  const values = samples.filter((s) => s.atS >= fromS && s.atS < toS).map(pick).sort((a, b) => a - b);
  return values[Math.floor(values.length / 2)] ?? Number.NaN;
}

const mb = (bytes: number) => `${(bytes / 1_048_576).toFixed(1)} MB`;
const pct = (ratio: number) => `${ratio >= 0 ? "+" : ""}${(ratio * 100).toFixed(1)}%`;

process.stdout.write(`soak: ${durationS} s at ${rate} requests/s against ${base} (warm-up ${warmupS} s excluded)\n`);
const startedAt = performance.now();
const samples: Sample[] = [];
const sampler = setInterval(() => {
  void sample(startedAt).then(
    (s) => {
      samples.push(s);
      process.stdout.write(`  ${s.atS.toFixed(0).padStart(4)} s  rss ${mb(s.rss)}  heap ${mb(s.heap)}  in flight ${inFlight}  errors ${[...errors.values()].reduce((a, b) => a + b, 0)}\n`);
    },
    (err: unknown) => recordError(`sample: ${String(err)}`),
  );
}, SAMPLE_MS);

// Open loop: each tick sends what the rate says is due by now, whatever the answers' latency.
await new Promise<void>((resolve) => {
  const ticker = setInterval(() => {
    const elapsedS = (performance.now() - startedAt) / 1000;
    if (elapsedS >= durationS) {
      clearInterval(ticker);
      resolve();
      return;
    }
    const due = Math.floor(elapsedS * rate);
    while (sent < due) fire();
  }, 10);
});
clearInterval(sampler);
for (let i = 0; i < 600 && inFlight > 0; i++) await new Promise((resolve) => setTimeout(resolve, 100));

// A minute-long window (or a fifth of a short run) on each side smooths out garbage collection.
const window = Math.min(60, durationS / 5);
const rssFrom = median(samples, warmupS, warmupS + window, (s) => s.rss);
const rssTo = median(samples, durationS - window, durationS + 1, (s) => s.rss);
const heapFrom = median(samples, warmupS, warmupS + window, (s) => s.heap);
const heapTo = median(samples, durationS - window, durationS + 1, (s) => s.heap);
const rssGrowth = rssTo / rssFrom - 1;
const heapGrowth = heapTo / heapFrom - 1;
const errorCount = [...errors.values()].reduce((a, b) => a + b, 0);

process.stdout.write(`\nrequests: ${sent} (json ${counts.json}, stream ${counts.stream}, tools ${counts.tools}, admin ${counts.admin})\n`);
process.stdout.write(`rss:  ${mb(rssFrom)} -> ${mb(rssTo)} (${pct(rssGrowth)})\n`);
process.stdout.write(`heap: ${mb(heapFrom)} -> ${mb(heapTo)} (${pct(heapGrowth)})\n`);
process.stdout.write(`errors: ${errorCount}\n`);
for (const [what, count] of errors) process.stdout.write(`  ${count} x ${what}\n`);
const met = errorCount === 0 && rssGrowth < GROWTH_LIMIT && heapGrowth < GROWTH_LIMIT;
process.stdout.write(`goal (RSS and heap growth under 10% after warm-up, no errors): ${met ? "met" : "NOT met"}\n`);
await agent.close();
stopChildren();
process.exit(met ? 0 : 1);
