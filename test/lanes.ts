/**
 * Runs test lanes: `node --import tsx test/lanes.ts <lane>...` with the lanes `unit`, `integration` and
 * `slow`. The files of the named lanes run in parallel, as many at once as the machine has cores, each in a
 * process of its own (the runner's default); a file listed as exclusive runs alone, before them. Each run
 * prints its time. The files run compiled to JavaScript (compiled-tree.ts); `GW_TEST_TSX=1` runs the
 * TypeScript sources through tsx instead. `GW_TEST_NODE` names the node binary to run the files with
 * (default: this one), so one lane can run on another Node version. A file's process that runs longer than
 * GW_TEST_FILE_LIMIT_S seconds (default 900) is stopped as hung and named (file-watchdog.ts).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readdirSync, rmSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { exitCodeOf } from "./child-exit.js";
import { compileTree } from "./compiled-tree.js";
import { watchTestFiles } from "./file-watchdog.js";

const root = fileURLToPath(new URL("..", import.meta.url));

/** The longest a test file's process may run before it is stopped as hung (GW_TEST_FILE_LIMIT_S, default 15 minutes). */
const FILE_LIMIT_S = Number(process.env["GW_TEST_FILE_LIMIT_S"] || 900);
if (!(Number.isInteger(FILE_LIMIT_S) && FILE_LIMIT_S > 0)) throw new Error(`GW_TEST_FILE_LIMIT_S must be a whole number of seconds, got "${process.env["GW_TEST_FILE_LIMIT_S"]}"`);

/**
 * The slow lane: what builds the bundle or starts the built gateway, drives a browser, runs Prometheus, builds
 * clients in other languages, or loops over a large corpus or a long fault sequence. Kept out of `npm test`
 * so that a change's check is quick.
 */
const SLOW = new Set([
  "test/browser/dashboard.test.ts",
  "test/integration/oauth-browser.test.ts",
  "test/integration/per-user-flow.test.ts",
  "test/integration/per-user-identity.test.ts",
  "test/integration/per-user-session.test.ts",
  "test/integration/sso-flow-page.test.ts",
  "test/integration/sso-login.test.ts",
  "test/integration/npm-start.test.ts",
  "test/unit/serving-process.test.ts",
  "test/integration/metrics.test.ts",
  "test/integration/generated-clients.test.ts",
  "test/integration/bad-input-corpus.test.ts",
  "test/integration/upstream-fault-resources.test.ts",
]);

/**
 * Files that need the machine to themselves: they count a process's resources (file descriptors, sockets,
 * memory), or hold a cluster of nodes to a propagation bound stated for an idle cluster, which files running
 * beside them would disturb.
 */
const EXCLUSIVE = new Set([
  "test/integration/upstream-fault-resources.test.ts",
  "test/integration/cluster.test.ts",
  "test/integration/cluster-sso.test.ts",
  "test/integration/cluster-key-backoff.test.ts",
]);

/** The files that take longest start first, so that the last ones to finish are short and the lane ends sooner. */
const LONGEST_FIRST = [
  "test/integration/cluster-limits.test.ts",
  "test/integration/store.test.ts",
  "test/integration/embedded-database.test.ts",
  "test/integration/crash-consistency.test.ts",
  "test/integration/cluster-usage.test.ts",
  "test/integration/main.test.ts",
  "test/integration/cluster-pricing.test.ts",
  "test/integration/oauth-upstream-api.test.ts",
  "test/integration/route-health.test.ts",
  "test/integration/per-user-oauth.test.ts",
];

/** The test files under `dir`, relative to the repository root, sorted. */
function testFiles(dir: string): string[] {
  const found: string[] = [];
  const walk = (at: string): void => {
    for (const entry of readdirSync(join(root, at), { withFileTypes: true })) {
      const path = `${at}/${entry.name}`;
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith(".test.ts")) found.push(path);
    }
  };
  walk(dir);
  return found.sort();
}

/** The files of one lane. */
function laneFiles(lane: string): string[] {
  switch (lane) {
    case "unit":
      return testFiles("test/unit").filter((f) => !SLOW.has(f));
    case "integration":
      return testFiles("test/integration").filter((f) => !SLOW.has(f));
    case "slow":
      return [...SLOW].sort();
    default:
      throw new Error(`unknown lane "${lane}": use unit, integration or slow`);
  }
}

/** The test runner child of the group running now, stopped with the lanes when they are interrupted. */
let running: ChildProcess | undefined;

/**
 * Runs `files` through node's test runner at `concurrency`, from `tree` (a compiled tree's directory, or
 * undefined to run the sources through tsx); resolves with its exit code.
 */
function runFiles(files: readonly string[], concurrency: number, tree: string | undefined): Promise<number> {
  if (files.length === 0) return Promise.resolve(0);
  const node = process.env["GW_TEST_NODE"] || process.execPath;
  const loader = tree === undefined ? ["--import", "tsx"] : ["--enable-source-maps"];
  const paths = tree === undefined ? files : files.map((file) => join(tree, file.replace(/\.ts$/, ".js")));
  // As `npm start` runs the gateway: the embedded database's WebAssembly stays in V8's baseline compiler,
  // which the runner passes on to each file's process.
  const args = ["--liftoff-only", ...loader, "--test", `--test-concurrency=${concurrency}`, ...paths];
  running = spawn(node, args, { cwd: root, stdio: "inherit" });
  watchTestFiles(running, { limitS: FILE_LIMIT_S, everyMs: 5_000, report: (line) => process.stderr.write(line) });
  return exitCodeOf(running, (message) => process.stderr.write(message));
}

const lanes = process.argv.slice(2);
if (lanes.length === 0) {
  process.stderr.write("usage: node --import tsx test/lanes.ts <unit|integration|slow>...\n");
  process.exit(2);
}
const rank = (file: string): number => {
  const at = LONGEST_FIRST.indexOf(file);
  return at === -1 ? LONGEST_FIRST.length : at;
};
const files = [...new Set(lanes.flatMap(laneFiles))].sort((a, b) => rank(a) - rank(b));
const parallel = files.filter((f) => !EXCLUSIVE.has(f));
const alone = files.filter((f) => EXCLUSIVE.has(f));
const started = Date.now();
const tree = process.env["GW_TEST_TSX"] === "1" ? undefined : await compileTree(root);
if (tree !== undefined) {
  process.stdout.write(`== compiled the sources into ${tree.dir} in ${Date.now() - started} ms\n`);
  // An interrupted run (Ctrl-C, a CI timeout) stops its test runner and leaves no compiled tree behind.
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => {
      running?.kill(signal);
      rmSync(tree.dir, { recursive: true, force: true });
      process.exit(130);
    });
  }
}
// The files that run alone go first, so the runner's last summary is the lane's main one.
const codes: number[] = [];
for (const [group, concurrency, what] of [[alone, 1, "alone"], [parallel, availableParallelism(), "in parallel"]] as const) {
  const groupStarted = Date.now();
  codes.push(await runFiles(group, concurrency, tree?.dir));
  if (group.length > 0) process.stdout.write(`== ${group.length} files ${what} in ${Math.round((Date.now() - groupStarted) / 1000)} s\n`);
}
await tree?.remove();
const seconds = Math.round((Date.now() - started) / 1000);
const failed = codes.some((code) => code !== 0);
process.stdout.write(`== lane ${lanes.join("+")}: ${files.length} files in ${seconds} s with ${process.env["GW_TEST_NODE"] || process.execPath}${failed ? ", FAILED" : ""}\n`);
process.exit(failed ? 1 : 0);
