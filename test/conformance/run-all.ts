/**
 * Runs every MCP conformance run of `npm run test:conformance`, as many at once as the machine has cores:
 * the auth scenarios against the gateway as a client (run.ts), then the server scenarios direct, through
 * `/mcp/<client>` over http, sse and stdio, and through the aggregated `/mcp` (run-server.ts). Each run's
 * output is printed whole when it ends, with its time; the exit status fails when any run failed.
 */
import { spawn } from "node:child_process";
import { availableParallelism } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { exitCodeOf } from "../child-exit.js";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..");

/** Each run: a name and the arguments after `node --import tsx`. */
const RUNS: readonly (readonly [string, readonly string[]])[] = [
  ["auth scenarios, the gateway as a client", [join(here, "run.ts")]],
  ["server scenarios, direct", [join(here, "run-server.ts")]],
  ["server scenarios through /mcp/<client>, http", [join(here, "run-server.ts"), "--through-gateway", "http"]],
  ["server scenarios through /mcp/<client>, sse", [join(here, "run-server.ts"), "--through-gateway", "sse"]],
  ["server scenarios through /mcp/<client>, stdio", [join(here, "run-server.ts"), "--through-gateway", "stdio"]],
  ["server scenarios through the aggregated /mcp", [join(here, "run-server.ts"), "--through-gateway", "http", "--aggregated"]],
];

/** Runs one, its output kept; resolves with its exit code and output. */
function run(args: readonly string[]): Promise<{ code: number; output: string }> {
  const child = spawn(process.execPath, ["--import", "tsx", ...args], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  return exitCodeOf(child, (message) => (output += message)).then((code) => ({ code, output }));
}

if (process.argv.length > 2) {
  process.stderr.write("run-all.ts takes no arguments: to pass the suite some, run test/conformance/run.ts or run-server.ts itself\n");
  process.exit(2);
}

const started = Date.now();
const failed: string[] = [];
let next = 0;
const worker = async (): Promise<void> => {
  while (next < RUNS.length) {
    const [name, args] = RUNS[next++] as (typeof RUNS)[number];
    const runStarted = Date.now();
    const { code, output } = await run(args);
    const seconds = Math.round((Date.now() - runStarted) / 1000);
    process.stdout.write(`== conformance: ${name} (${seconds} s${code === 0 ? "" : `, FAILED with ${code}`})\n${output}`);
    if (code !== 0) failed.push(name);
  }
};
await Promise.all(Array.from({ length: Math.min(availableParallelism(), RUNS.length) }, worker));
process.stdout.write(`== conformance: ${RUNS.length} runs in ${Math.round((Date.now() - started) / 1000)} s${failed.length > 0 ? `; failed: ${failed.join("; ")}` : ""}\n`);
process.exit(failed.length > 0 ? 1 : 0);
