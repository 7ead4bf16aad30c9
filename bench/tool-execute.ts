/**
 * `npm run bench:tools`: what one `POST /v1/mcp/tool/execute` costs the gateway. Starts the conformance-shaped
 * MCP server (test/fixtures/conformance-upstream.ts) over streamable HTTP in a process of its own and the
 * compiled gateway (`dist/main.js` with the flags `npm start` gives it, embedded database) with that server
 * as its http client `up`: per-call (a fresh MCP session for each call, the default for http), or sticky with
 * `MCP_STICKY=1`. Eight callers then execute `up-test_simple_text` one call after another: 2 s of warm-up, then
 * three rounds of BENCH_SECONDS (default 8), each printing its calls and the gateway's CPU time per call (from
 * /proc/<pid>/stat). Not a test: it asserts nothing, but every call must succeed.
 */
import { Pool } from "undici";
import { startMcpUpstream, waitClientHealthy } from "./mcp-upstream-process.js";
import { startServedGateway } from "./outside-processes.js";
import { cpuMs } from "./process-cpu.js";

const SECONDS = Number(process.env["BENCH_SECONDS"] ?? 8);
const STICKY = process.env["MCP_STICKY"] === "1";
const CALLERS = 8;
const BODY = JSON.stringify({ id: "c1", type: "function", function: { name: "up-test_simple_text", arguments: "{}" } });

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

const { process: upstream, url } = await startMcpUpstream();
try {
  const gateway = await startServedGateway({
    config: { mcp: { client_configs: [{ name: "up", connection_type: "http", connection_string: url, tools_to_execute: ["*"], ...(STICKY ? { needs_session_stickiness: true } : {}) }] } },
  });
  const pool = new Pool(gateway.url, { connections: CALLERS });
  try {
    await waitClientHealthy(gateway.url, "up");
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
