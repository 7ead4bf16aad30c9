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
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { exitCodeOf } from "./child-exit.js";
import { compileFile, compileTree } from "./compiled-tree.js";
import { readFileEnds } from "./file-ends.js";
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

/** The runs so far, numbering the files their file-ends reporters write into the scratch folder. */
let reports = 0;

/**
 * Runs `files` through node's test runner at `concurrency`, from `tree` (a compiled tree's directory, or
 * undefined to run the sources through tsx); resolves with its exit code. Names every file whose process ended
 * with a signal or a code of its own, and runs once more, alone, files a signal ended before any test reported
 * (file-ends.ts), their second run's code then standing for the group's.
 */
async function runFiles(files: readonly string[], concurrency: number, tree: string | undefined, again = true): Promise<number> {
  if (files.length === 0) return 0;
  const node = process.env["GW_TEST_NODE"] || process.execPath;
  const loader = tree === undefined ? ["--import", "tsx"] : ["--enable-source-maps"];
  const at = tree ?? root;
  const paths = tree === undefined ? files : files.map((file) => join(tree, file.replace(/\.ts$/, ".js")));
  const endsFile = join(scratch, `file-ends-${++reports}.jsonl`);
  const reporters = ["--test-reporter=spec", "--test-reporter-destination=stdout", `--test-reporter=${endsReporter}`, `--test-reporter-destination=${endsFile}`];
  // As `npm start` runs the gateway: the embedded database's WebAssembly stays in V8's baseline compiler,
  // which the runner passes on to each file's process.
  const args = ["--liftoff-only", ...loader, "--test", `--test-concurrency=${concurrency}`, ...reporters, ...paths];
  running = spawn(node, args, { cwd: root, stdio: "inherit" });
  const hung = new Set<string>();
  const laneName = (path: string): string => relative(at, resolve(root, path)).replace(/\.js$/, ".ts");
  const report = (line: string, file: string): void => {
    hung.add(laneName(file));
    process.stderr.write(line);
  };
  watchTestFiles(running, { limitS: FILE_LIMIT_S, everyMs: 5_000, report });
  const code = await exitCodeOf(running, (message) => process.stderr.write(message));
  let text = "";
  try {
    text = readFileSync(endsFile, "utf8");
    rmSync(endsFile, { force: true });
  } catch {
    // No report: the runner itself did not start or was stopped; its code says so.
  }
  const ends = readFileEnds(text, laneName, hung);
  for (const line of ends.lines) process.stderr.write(line);
  if (code === 0 || ends.again.length === 0 || !again) return code;
  process.stderr.write(`== running again, alone, ${ends.again.length} file(s) a signal ended before any test reported: ${ends.again.join(", ")}\n`);
  return runFiles(ends.again, 1, tree, false);
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
// The runners' file-ends reporter and what it writes. Node 20's runner loads a reporter before the `--import`
// hooks, so the reporter runs as JavaScript compiled for it even when the tests run through tsx.
const scratch = mkdtempSync(join(tmpdir(), "gw-lanes-"));
const endsReporter = await compileFile(join(root, "test/file-ends-reporter.ts"), scratch);
if (tree !== undefined) process.stdout.write(`== compiled the sources into ${tree.dir} in ${Date.now() - started} ms\n`);
// An interrupted run (Ctrl-C, a CI timeout) stops its test runner and leaves no compiled tree or scratch behind.
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    running?.kill(signal);
    for (const dir of [tree?.dir, scratch]) if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    process.exit(130);
  });
}
// The files that run alone go first, so the runner's last summary is the lane's main one.
const codes: number[] = [];
for (const [group, concurrency, what] of [[alone, 1, "alone"], [parallel, availableParallelism(), "in parallel"]] as const) {
  const groupStarted = Date.now();
  codes.push(await runFiles(group, concurrency, tree?.dir));
  if (group.length > 0) process.stdout.write(`== ${group.length} files ${what} in ${Math.round((Date.now() - groupStarted) / 1000)} s\n`);
}
await tree?.remove();
rmSync(scratch, { recursive: true, force: true });
const seconds = Math.round((Date.now() - started) / 1000);
const failed = codes.some((code) => code !== 0);
process.stdout.write(`== lane ${lanes.join("+")}: ${files.length} files in ${seconds} s with ${process.env["GW_TEST_NODE"] || process.execPath}${failed ? ", FAILED" : ""}\n`);
process.exit(failed ? 1 : 0);
