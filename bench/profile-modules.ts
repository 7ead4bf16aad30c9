/**
 * How much of a target's busy time runs inside given source modules, from a `.cpuprofile` that
 * `BENCH_PROFILE=1` wrote and the esbuild bundle the bench ran (`.tmp/bench/<target>.js`): the bundle's
 * source map names each frame's module even though the whole gateway is one file. A sample counts once if any frame on its stack is in a matching module
 * (or in a package whose path matches), and is charged to the outermost such frame.
 *
 *   node --import tsx bench/profile-modules.ts <file.cpuprofile> <bundle.js> <module regex> [start fraction]
 *
 * For example the share of tracing in the traced gateway:
 *
 *   node --import tsx bench/profile-modules.ts bench/profiles/gateway-traced/<file>.cpuprofile .tmp/bench/gateway.js \
 *     'src/telemetry/(tracing|otlp-tracing|recording-tracer|otlp-protobuf|span-export-queue)\.ts|@opentelemetry/(?!api)'
 */
import { moduleLocator } from "./bundle-modules.js";
import { busyStacks } from "./cpu-profile.js";

function main(): void {
  const [file, bundleFile, pattern, startArg] = process.argv.slice(2);
  if (file === undefined || bundleFile === undefined || pattern === undefined) {
    throw new Error("usage: profile-modules.ts <file.cpuprofile> <bundle.js> <module regex> [start fraction, default 0.5]");
  }
  const locate = moduleLocator(bundleFile);
  const matches = new RegExp(pattern);
  const bundleName = bundleFile.split("/").pop() ?? bundleFile;
  const charged = new Map<string, number>();
  let busy = 0;
  let inside = 0;
  for (const stack of busyStacks(file, Number(startArg ?? "0.5"))) {
    busy++;
    let outermost: string | null = null;
    for (const node of stack) {
      const { url, lineNumber, columnNumber, functionName } = node.callFrame;
      const place = url.endsWith(bundleName) ? locate(lineNumber, columnNumber) : url.replace(/.*node_modules\//, "@").replace(/^@@/, "@");
      if (matches.test(place)) outermost = `${place} ${functionName || "(anonymous)"}`;
    }
    if (outermost === null) continue;
    inside++;
    charged.set(outermost, (charged.get(outermost) ?? 0) + 1);
  }
  console.log(`${busy} busy samples; ${((inside / busy) * 100).toFixed(2)}% inside modules matching ${pattern}`);
  for (const [place, count] of [...charged].sort((a, b) => b[1] - a[1]).slice(0, 20)) console.log(`${((count / busy) * 100).toFixed(2).padStart(6)}%  ${place}`);
}

main();
