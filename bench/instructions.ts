/**
 * `npm run bench:instructions`: the machine instructions the gateway's main thread runs per JSON request,
 * counted by valgrind's callgrind, for a change too small to show through the machine's drift in req/s or
 * CPU time. Instruction counts hardly move with what else the machine is doing; what moves them from round to
 * round is when the garbage collector runs, so a round takes thousands of requests and the figure is a median.
 *
 * The gateway runs as `npm start` runs it (outside-processes.ts) under `valgrind --tool=callgrind`, instrumented
 * only while a round is counted (it starts and warms up at near full speed), in front of the bench's mock
 * upstream; autocannon sends BENCH_WARMUP requests (default 16000), then BENCH_ROUNDS rounds (default 4) of
 * BENCH_REQUESTS (default 4000) on 8 connections. The first round is left out of the median: it still ran
 * slower code. Only the main thread is counted: V8's helper threads (concurrent marking, compiling) vary with
 * timing. BENCH_INSTRUCTIONS_MAIN measures another build's `dist/main.js` too, after this one, and prints the
 * ratio. BENCH_DATABASE_URL runs the gateways on that PostgreSQL server, which gives the steadier figure: the
 * embedded database's periodic work runs on the main thread and lands in some rounds and not others. Needs
 * valgrind (`apt-get install -y valgrind`); takes two to three minutes a build.
 */
import autocannon from "autocannon";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { median, OUTSIDE_CHAT_BODY, OUTSIDE_HEADERS, OUTSIDE_PATH, startBundledChild, startServedGateway } from "./outside-processes.js";

const count = (name: string, fallback: number): number => {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive whole number, got ${String(process.env[name])}`);
  return value;
};
const WARMUP = count("BENCH_WARMUP", 16_000);
const REQUESTS = count("BENCH_REQUESTS", 4_000);
const ROUNDS = count("BENCH_ROUNDS", 4);
if (ROUNDS < 2) throw new Error("BENCH_ROUNDS must be at least 2: the first round is left out");
const DATABASE_URL = process.env["BENCH_DATABASE_URL"] || undefined;
const OTHER = process.env["BENCH_INSTRUCTIONS_MAIN"] || undefined;
if (OTHER !== undefined && !existsSync(OTHER)) throw new Error(`BENCH_INSTRUCTIONS_MAIN: no built gateway at ${OTHER}; build that checkout first (npm run build)`);
try {
  execFileSync("valgrind", ["--version"], { stdio: "ignore" });
} catch {
  throw new Error("valgrind is not installed: apt-get install -y valgrind");
}

const BUILD_DIR = fileURLToPath(new URL("../.tmp/bench-outside", import.meta.url));

/** The main thread's instructions per request in each round, for the build at `main` (this checkout's when undefined). */
async function measure(upstreamUrl: string, main: string | undefined): Promise<number[]> {
  const out = mkdtempSync(join(tmpdir(), "gw-callgrind-"));
  const gateway = await startServedGateway({
    upstreamUrl,
    main,
    databaseUrl: DATABASE_URL,
    wrapper: ["valgrind", "--quiet", "--tool=callgrind", "--instr-atstart=no", "--smc-check=all-non-file", "--separate-threads=yes", `--callgrind-out-file=${join(out, "cg")}`],
  });
  try {
    const pid = String(gateway.process.pid);
    const control = (...args: string[]): void => void execFileSync("callgrind_control", [...args, pid], { stdio: "ignore" });
    const load = async (amount: number): Promise<number> => {
      const result = await autocannon({ url: gateway.url + OUTSIDE_PATH, method: "POST", headers: OUTSIDE_HEADERS, body: OUTSIDE_CHAT_BODY, connections: 8, amount, timeout: 60 });
      const failed = result.non2xx + result.errors + result.timeouts;
      if (failed > 0) throw new Error(`${failed} of ${result.requests.total} answers were not 200s`);
      return result.requests.total;
    };
    await load(WARMUP);
    const rounds: number[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      control("-z");
      control("-i", "on");
      const requests = await load(REQUESTS);
      control("-i", "off");
      control("-d", `round${round}`);
      // Thread 1 is the main thread; a dump's file is named cg.<dump>-<thread>.
      const text = readFileSync(join(out, `cg.${round}-01`), "utf8");
      const total = Number(/^totals: (\d+)$/m.exec(text)?.[1]);
      if (!Number.isFinite(total)) throw new Error(`callgrind's dump for round ${round} has no totals line`);
      rounds.push(total / requests);
    }
    return rounds;
  } finally {
    await gateway.stop();
    rmSync(out, { recursive: true, force: true });
  }
}

const upstream = await startBundledChild("./upstream.ts", {}, BUILD_DIR);
try {
  const describe = (name: string, rounds: number[]): number => {
    const figure = median(rounds.slice(1));
    process.stdout.write(`${name}: ${(figure / 1000).toFixed(1)}k instructions per request on the main thread (rounds ${rounds.map((r) => (r / 1000).toFixed(1)).join(" ")}; the first left out)\n`);
    return figure;
  };
  const own = describe("this build", await measure(upstream.url, undefined));
  if (OTHER !== undefined) {
    const other = describe(resolve(OTHER), await measure(upstream.url, resolve(OTHER)));
    process.stdout.write(`this build against ${resolve(OTHER)}: ${(own / other).toFixed(3)}x its instructions per request\n`);
  }
} finally {
  await upstream.stop();
}
