/**
 * Start-up time and memory of the compiled gateway, `node dist/main.js` with the flags and environment `npm start` gives it (run
 * `npm run build` first): the time from spawning it to its first 200 on GET /ready, and its RSS then and
 * after 5 s idle, plus its peak RSS (VmHWM). Scenarios: a first start in an empty data directory (the
 * embedded database is copied from the build's dist/pglite-template), a restart on that
 * directory, and, when BENCH_DATABASE_URL is set, starts on that PostgreSQL server in a schema of its own
 * (the first run applies the migrations; the schema is dropped at the end, so runs never meet another
 * run's encryption key). BENCH_RUNS (default 3) runs of each; one JSON line per run.
 * BENCH_DEV=1 adds restarts under `node --import tsx src/main.ts` (`npm run dev`) for comparison.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { dropSchema, randomSchemaName } from "../src/store/index.js";
import { SERVING_ENVIRONMENT, servingNodeFlags } from "../src/serving-environment.js";

// As `npm start` runs it, on the embedded database or on a server.
const MAIN_JS = new URL("../dist/main.js", import.meta.url).pathname;
const MAIN = [...servingNodeFlags(true), MAIN_JS];
const SERVER_MAIN = [...servingNodeFlags(false), MAIN_JS];
const DEV_MAIN = ["--import", "tsx", new URL("../src/main.ts", import.meta.url).pathname];
const RUNS = Number(process.env["BENCH_RUNS"] ?? 3);
const SERVER_URL = process.env["BENCH_DATABASE_URL"];
const DEV = process.env["BENCH_DEV"] === "1";
const IDLE_MS = 5_000;
const ENCRYPTION_KEY = randomBytes(32).toString("hex");

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** VmRSS and VmHWM of a process, in MiB. */
async function memoryOf(pid: number): Promise<{ rss: number; peak: number }> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN);
  return { rss: Math.round(kib("VmRSS") / 1024), peak: Math.round(kib("VmHWM") / 1024) };
}

/** One start: spawn, wait for /ready, measure, stop with SIGTERM. */
async function measure(scenario: string, dataDir: string, env: NodeJS.ProcessEnv, entry = MAIN): Promise<void> {
  const started = performance.now();
  const child = spawn(process.execPath, [...entry, "--port", "0", "--data-dir", dataDir], {
    env: { ...process.env, ...SERVING_ENVIRONMENT, GW_ENCRYPTION_KEY: ENCRYPTION_KEY, GW_DATABASE_URL: "", ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  let out = "";
  child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
  try {
    let url: string | undefined;
    let readyMs: number | undefined;
    // Bounded: 12000 polls of 10 ms (two minutes, a slow first initdb included).
    for (let i = 0; i < 12_000 && readyMs === undefined; i++) {
      url ??= /"url":"([^"]+)","msg":"port bound/.exec(out)?.[1];
      if (url !== undefined) {
        const res = await fetch(`${url}/ready`).catch(() => undefined);
        await res?.arrayBuffer();
        if (res?.status === 200) readyMs = performance.now() - started;
      }
      if (readyMs === undefined) await sleep(10);
    }
    if (readyMs === undefined || child.pid === undefined) throw new Error(`${scenario}: the gateway did not become ready:\n${out}`);
    const atReady = await memoryOf(child.pid);
    await sleep(IDLE_MS);
    const idle = await memoryOf(child.pid);
    const line = { scenario, ready_ms: Math.round(readyMs), rss_ready_mib: atReady.rss, rss_idle_mib: idle.rss, peak_rss_mib: idle.peak };
    process.stdout.write(`${JSON.stringify(line)}\n`);
  } finally {
    child.kill("SIGTERM");
    await exited;
  }
}

const dirs: string[] = [];
const schema = randomSchemaName();
try {
  for (let run = 0; run < RUNS; run++) {
    const dir = await mkdtemp(join(tmpdir(), "gw-startup-"));
    dirs.push(dir);
    await measure("embedded, first start", join(dir, "data"), {});
    await measure("embedded, restart", join(dir, "data"), {});
    if (DEV) await measure("embedded, restart, npm run dev", join(dir, "data"), {}, DEV_MAIN);
  }
  if (SERVER_URL) {
    for (let run = 0; run < RUNS; run++) {
      await measure("server", join(dirs[0] ?? tmpdir(), "server-data"), { GW_DATABASE_URL: SERVER_URL, GW_DATABASE_SCHEMA: schema }, SERVER_MAIN);
      if (DEV) await measure("server, npm run dev", join(dirs[0] ?? tmpdir(), "server-data"), { GW_DATABASE_URL: SERVER_URL, GW_DATABASE_SCHEMA: schema }, DEV_MAIN);
    }
  }
} finally {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  if (SERVER_URL) await dropSchema(SERVER_URL, schema);
}
