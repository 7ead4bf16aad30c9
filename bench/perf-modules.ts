/**
 * Where a gateway child's CPU goes by source module, from a Linux `perf` recording: unlike a V8
 * `.cpuprofile` (BENCH_PROFILE=1), whose samples on this kind of virtual machine land far more often in
 * system calls than their CPU time warrants (a response write showed as a far larger share of the busy
 * time than it has here), `perf record` samples on CPU time only, in every thread, kernel included.
 *
 * Record while a phase runs (V8 names its compiled code in /tmp/perf-<pid>.map with --perf-basic-prof):
 *
 *   NODE_OPTIONS=--perf-basic-prof BENCH_VARIANTS=gateway BENCH_PHASES=throughput npm run bench &
 *   perf record -F 1999 -g -p <pid of .tmp/bench/gateway.js, once its phase runs> -o /tmp/gw.perf -- sleep 6
 *   node --import tsx bench/perf-modules.ts /tmp/gw.perf .tmp/bench/gateway.js
 *
 * Each sample is charged to the innermost JavaScript frame on its stack (native and kernel code under it
 * counts for it): a line of the bundle names its source module, Node's own JavaScript is `node:<file>`, a
 * package is its name; a sample with no JavaScript on its stack (garbage collector threads, libuv, the
 * kernel between callbacks) is "(no JavaScript)". Inclusive shares count a sample once for every module on
 * its stack. Code V8 freed or moved may keep the name of what sat at its address before (WebAssembly
 * especially), so read a surprising package name against the frames around it.
 */
import { spawnSync } from "node:child_process";
import { moduleLocator, type ModuleLocator } from "./bundle-modules.js";

/** `JS:*name file:///path:line:column` as --perf-basic-prof names compiled code (lines and columns from 1). */
const JS_FRAME = /JS:\S*\s+(?:\S+\s+)?(\S+):(\d+):(\d+)/;

/** The module of one JavaScript frame's location. */
function placeOf(location: string, line: number, column: number, bundleName: string, locate: ModuleLocator): string {
  if (location.endsWith(bundleName)) return locate(line - 1, column - 1) || bundleName;
  if (location.startsWith("node:")) return location;
  const inPackage = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(location);
  return inPackage?.[1] ?? location;
}

function top(counts: Map<string, number>, total: number, rows: number): string[] {
  return [...counts]
    .sort((a, b) => b[1] - a[1])
    .slice(0, rows)
    .map(([place, count]) => `${((count / total) * 100).toFixed(2).padStart(6)}%  ${place}`);
}

function main(): void {
  const [data, bundleFile, rowsArg] = process.argv.slice(2);
  if (data === undefined || bundleFile === undefined) throw new Error("usage: perf-modules.ts <perf.data> <bundle.js> [rows, default 30]");
  const script = spawnSync("perf", ["script", "-i", data, "-F", "ip,sym"], { encoding: "utf8", maxBuffer: 1 << 30 });
  if (script.status !== 0) throw new Error(`perf script failed: ${script.stderr}`);
  const locate = moduleLocator(bundleFile);
  const bundleName = bundleFile.split("/").pop() ?? bundleFile;
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let total = 0;
  // perf script prints one stack per sample, innermost frame first, with a blank line between samples.
  for (const sample of script.stdout.split("\n\n")) {
    const frames = sample.split("\n").filter((line) => line.trim() !== "");
    if (frames.length === 0) continue;
    total++;
    let innermost: string | null = null;
    const seen = new Set<string>();
    for (const frame of frames) {
      const js = JS_FRAME.exec(frame);
      if (js?.[1] === undefined || js[2] === undefined || js[3] === undefined) continue;
      const place = placeOf(js[1].replace(/^file:\/\//, ""), Number(js[2]), Number(js[3]), bundleName, locate);
      innermost ??= place;
      if (!seen.has(place)) inclusive.set(place, (inclusive.get(place) ?? 0) + 1);
      seen.add(place);
    }
    const charged = innermost ?? "(no JavaScript)";
    self.set(charged, (self.get(charged) ?? 0) + 1);
  }
  const rows = Number(rowsArg ?? "30");
  console.log(`${total} samples`);
  console.log("self (innermost JavaScript frame):");
  for (const line of top(self, total, rows)) console.log(line);
  console.log("inclusive:");
  for (const line of top(inclusive, total, rows)) console.log(line);
}

main();
