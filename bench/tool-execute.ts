/**
 * `npm run bench:tools`: what one `POST /v1/mcp/tool/execute` costs the gateway. Starts the conformance-shaped
 * MCP server (test/fixtures/conformance-upstream.ts) over streamable HTTP in a process of its own and the
 * compiled gateway (`dist/main.js` with the flags `npm start` gives it, embedded database) with that server
 * as its http client `up`: per-call (a fresh MCP session for each call, the default for http), or sticky with
 * `MCP_STICKY=1`. Eight callers then execute `up-test_simple_text` one call after another: 2 s of warm-up, then
 * three rounds of BENCH_SECONDS (default 8), each printing its calls and the gateway's CPU time per call (from
 * /proc/<pid>/stat). Not a test: it asserts nothing, but every call must succeed.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { Pool } from "undici";
import { startServedGateway } from "./outside-processes.js";
import { cpuMs } from "./process-cpu.js";

const ROOT = new URL("..", import.meta.url).pathname;
const SECONDS = Number(process.env["BENCH_SECONDS"] ?? 8);
const STICKY = process.env["MCP_STICKY"] === "1";
const CALLERS = 8;
const BODY = JSON.stringify({ id: "c1", type: "function", function: { name: "up-test_simple_text", arguments: "{}" } });

/** The first stdout line of `child` that parses as JSON with `field`. */
function firstJson(child: ChildProcess, field: string): Promise<string> {
  return new Promise((resolve, reject) => {
    if (child.stdout === null) return reject(new Error("no stdout"));
    createInterface({ input: child.stdout }).on("line", (line) => {
      try {
        const value = (JSON.parse(line) as Record<string, unknown>)[field];
        if (typeof value === "string") resolve(value);
      } catch {
        // A log line that is not JSON.
      }
    });
    child.once("exit", (code) => reject(new Error(`exited with ${code} before printing ${field}`)));
  });
}

/** Executes the tool from every caller until `ms` have passed; answers the calls made. */
async function execute(pool: Pool, ms: number): Promise<number> {
  let calls = 0;
  const end = Date.now() + ms;
  await Promise.all(
    Array.from({ length: CALLERS }, async () => {
      while (Date.now() < end) {
        const res = await pool.request({ method: "POST", path: "/v1/mcp/tool/execute", headers: { "content-type": "application/json" }, body: BODY });
        const text = await res.body.text();
        if (res.statusCode !== 200 || text.includes('"Error: ')) throw new Error(`the call failed: ${res.statusCode} ${text}`);
        calls++;
      }
    }),
  );
  return calls;
}

const upstream = spawn(process.execPath, ["--import", "tsx", join(ROOT, "test/fixtures/conformance-upstream.ts"), "--transport", "http"], { stdio: ["ignore", "pipe", "inherit"] });
try {
  const url = await firstJson(upstream, "url");
  const gateway = await startServedGateway({
    config: { mcp: { client_configs: [{ name: "up", connection_type: "http", connection_string: url, tools_to_execute: ["*"], ...(STICKY ? { needs_session_stickiness: true } : {}) }] } },
  });
  const pool = new Pool(gateway.url, { connections: CALLERS });
  try {
    // Bounded: 600 polls of 100 ms.
    for (let i = 0; i < 600; i++) {
      const res = await fetch(`${gateway.url}/api/mcp/clients`).catch(() => undefined);
      const body = res?.ok ? ((await res.json()) as { clients?: { name: string; state: string }[] }) : undefined;
      if (body?.clients?.some((c) => c.name === "up" && c.state === "healthy")) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    await execute(pool, 2000);
    console.log(`/v1/mcp/tool/execute from ${CALLERS} callers, closed loop, ${STICKY ? "sticky" : "per-call"} http client:`);
    for (let round = 1; round <= 3; round++) {
      const from = cpuMs(gateway.process.pid);
      const calls = await execute(pool, SECONDS * 1000);
      const used = cpuMs(gateway.process.pid) - from;
      console.log(`  round ${round}: ${calls} calls, gateway CPU ${((used * 1000) / calls).toFixed(0)} µs per call`);
    }
  } finally {
    await pool.close();
    await gateway.stop();
  }
} finally {
  upstream.kill();
}
