/**
 * `npm run bench:mcp`: what `/mcp/<client>` adds to a `tools/call`. Starts the conformance-shaped MCP server
 * (test/fixtures/conformance-upstream.ts) over streamable HTTP in a process of its own, and the compiled
 * gateway (`dist/main.js` with the flags `npm start` gives it, embedded database) with that server as its MCP
 * client `up`. Then MCP_SESSIONS (default 8) SDK clients each call `test_simple_text` one call after another
 * for BENCH_SECONDS (default 10, after 2 s of warm-up): first against the server directly, then through the
 * gateway, then directly again and through the gateway again (the machine's drift weighs on both alike).
 * That is done twice: closed loop (each session sends its next call as soon as the last is answered), which
 * keeps every core busy, so that its latencies are mostly time spent queued behind other calls; and paced,
 * the sessions together sending MCP_RATE calls a second (default 400) on a fixed schedule, which leaves the
 * cores idle part of the time, so that its latencies are what a call takes: the added p50 the goal is judged
 * by, as the main bench's latency phase is for inference.
 * Prints the p50 and p99 of each call's time from send to result, the gateway's added p50, and the CPU time
 * the gateway and the server each spent per call (from /proc/<pid>/stat over the measured part), which is
 * steadier than latency when other work shares the machine. BENCH_PROFILE=1 starts the gateway with
 * `--cpu-prof` (100 µs sampling) writing into bench/profiles/mcp-relay/ (read it with bench/profile-account.ts).
 * Not a test: it asserts nothing, but every call must succeed.
 */
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { startMcpUpstream, waitClientHealthy } from "./mcp-upstream-process.js";
import { startServedGateway, type Served } from "./outside-processes.js";
import { cpuMs } from "./process-cpu.js";

const SESSIONS = Number(process.env["MCP_SESSIONS"] ?? 8);
const SECONDS = Number(process.env["BENCH_SECONDS"] ?? 10);
const RATE = Number(process.env["MCP_RATE"] ?? 400);
const WARM_UP_MS = 2_000;
const ROOT = new URL("..", import.meta.url).pathname;
const PROFILE = process.env["BENCH_PROFILE"] === "1";
const PROFILE_DIR = join(ROOT, "bench/profiles/mcp-relay");

/** What one load measured after its warm-up: each call's latency, and the CPU ms each watched process spent meanwhile. */
interface Measured {
  times: number[];
  cpu: number[];
}

/**
 * Calls the tool from `SESSIONS` sessions for `ms` after the warm-up, reading the CPU time of `pids` over the
 * measured part; with `rate`, the sessions together start `rate` calls a second on a fixed schedule (a call
 * answered late is followed by the next at once), else each calls again as soon as it has its answer.
 */
async function load(url: string, ms: number, pids: readonly (number | undefined)[], rate?: number): Promise<Measured> {
  const clients = await Promise.all(
    Array.from({ length: SESSIONS }, async () => {
      const client = new Client({ name: "bench", version: "1.0.0" });
      await client.connect(new StreamableHTTPClientTransport(new URL(url)));
      return client;
    }),
  );
  const times: number[] = [];
  const countFrom = Date.now() + WARM_UP_MS;
  const end = countFrom + ms;
  let cpuFrom: number[] = [];
  const cpuTo: number[] = [];
  const started = setTimeout(() => (cpuFrom = pids.map(cpuMs)), WARM_UP_MS);
  await Promise.all(
    clients.map(async (client, index) => {
      const interval = rate === undefined ? 0 : (1000 * SESSIONS) / rate;
      // Sessions spread over one interval, so that their calls do not arrive together.
      let due = performance.now() + (interval * index) / SESSIONS;
      while (Date.now() < end) {
        if (interval > 0) {
          const wait = due - performance.now();
          if (wait > 0) await new Promise((r) => setTimeout(r, wait));
          due += interval;
        }
        const sent = performance.now();
        const result = await client.callTool({ name: "test_simple_text", arguments: {} });
        if (result.isError === true) throw new Error(`the call failed: ${JSON.stringify(result.content)}`);
        if (Date.now() >= countFrom) times.push(performance.now() - sent);
      }
    }),
  );
  clearTimeout(started);
  cpuTo.push(...pids.map(cpuMs));
  await Promise.all(clients.map((client) => client.close()));
  return { times, cpu: cpuTo.map((to, i) => to - (cpuFrom[i] ?? NaN)) };
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

const { process: upstream, url: direct } = await startMcpUpstream();
let gateway: Served | undefined;
try {
  if (PROFILE) await mkdir(PROFILE_DIR, { recursive: true });
  const profileFlags = PROFILE ? ["--cpu-prof", "--cpu-prof-interval=100", `--cpu-prof-dir=${PROFILE_DIR}`] : [];
  gateway = await startServedGateway({
    config: { mcp: { client_configs: [{ name: "up", connection_type: "http", connection_string: direct, tools_to_execute: ["*"] }] } },
    nodeOptions: profileFlags,
  });
  const gatewayUrl = gateway.url;
  await waitClientHealthy(gatewayUrl, "up");
  const relayed = `${gatewayUrl}/mcp/up`;
  const pids = [upstream.pid, gateway.process.pid];
  for (const rate of [undefined, RATE]) {
    const runs = { direct: { times: [] as number[], cpu: [0, 0] }, relayed: { times: [] as number[], cpu: [0, 0] } };
    for (let round = 0; round < 2; round++) {
      for (const [name, url] of [["direct", direct], ["relayed", relayed]] as const) {
        const measured = await load(url, (SECONDS * 1000) / 2, pids, rate);
        runs[name].times.push(...measured.times);
        runs[name].cpu = runs[name].cpu.map((ms, i) => ms + (measured.cpu[i] ?? NaN));
      }
    }
    const figures = Object.fromEntries(
      Object.entries(runs).map(([name, { times, cpu }]) => {
        const sorted = [...times].sort((a, b) => a - b);
        const perCallUs = cpu.map((ms) => (ms * 1000) / sorted.length);
        return [name, { calls: sorted.length, p50: percentile(sorted, 50), p99: percentile(sorted, 99), upstreamUs: perCallUs[0] ?? NaN, gatewayUs: perCallUs[1] ?? NaN }];
      }),
    );
    const d = figures["direct"];
    const r = figures["relayed"];
    const how = rate === undefined ? "closed loop" : `paced at ${rate} calls/s in all`;
    console.log(`tools/call from ${SESSIONS} sessions, ${how}, ${SECONDS} s each way in two rounds:`);
    console.log(`  direct:          ${d?.calls} calls, p50 ${d?.p50.toFixed(3)} ms, p99 ${d?.p99.toFixed(3)} ms`);
    console.log(`  /mcp/<client>:   ${r?.calls} calls, p50 ${r?.p50.toFixed(3)} ms, p99 ${r?.p99.toFixed(3)} ms`);
    console.log(`  added by the gateway: p50 ${((r?.p50 ?? NaN) - (d?.p50 ?? NaN)).toFixed(3)} ms, p99 ${((r?.p99 ?? NaN) - (d?.p99 ?? NaN)).toFixed(3)} ms`);
    console.log(`  CPU per call: server ${d?.upstreamUs.toFixed(0)} µs direct, ${r?.upstreamUs.toFixed(0)} µs relayed; gateway ${r?.gatewayUs.toFixed(0)} µs relayed`);
  }
} finally {
  // The profile is written as the gateway exits, which stop() waits for.
  await gateway?.stop();
  upstream.kill("SIGTERM");
}
