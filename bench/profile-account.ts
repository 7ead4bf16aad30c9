/**
 * Where a target's CPU goes, from a `.cpuprofile` that `BENCH_PROFILE=1` wrote: every sample of the
 * measured part (the last half of the profile by default, where the throughput phase runs) is charged
 * to the innermost frame on its stack that a category below claims, so each microsecond counts once.
 * With the target's CPU per request from the same run, the shares become microseconds per request.
 *
 *   node --import tsx bench/profile-account.ts bench/profiles/gateway/<file>.cpuprofile [cpu µs per request] [start fraction] [end fraction]
 *
 * A profile of `bench/outside.ts` holds the throughput loop in its first half, after a start-up of a second or
 * two whose embedded database work would be charged to the requests: pass 0.1 0.45. The floor's profile from the
 * same run is read the same way, to set the two side by side.
 */
import { busyStacks, type ProfileNode } from "./cpu-profile.js";

/** A category and what claims a frame for it: its function name, or a part of its script's URL. */
interface Category {
  name: string;
  functions?: readonly string[];
  urls?: readonly string[];
}

/**
 * A function named here claims everything it calls that no function named here closer to the sample
 * claims ("routing" includes the rule evaluation it runs); a script URL claims only the samples that stop
 * in that script's own code.
 */
const CATEGORIES: readonly Category[] = [
  { name: "socket writes (system calls)", functions: ["writev", "writeBuffer", "writeUtf8String", "writeLatin1String"] },
  { name: "request JSON parse and checks", functions: ["parseJsonBody", "readJsonBodyWithText", "validateChatBody", "hasModel"] },
  { name: "answer JSON parse (usage, errors)", functions: ["parseJsonObject"] },
  { name: "SSE parsing and chunk translation", functions: ["parseSse", "translateChatEvents", "translateResponsesEvents", "withRawText"] },
  { name: "routing (rules, provider configs, balance, affinity)", functions: ["routeRequest", "balance", "withAffinity", "balanceDirections", "ruleVariables"] },
  { name: "key choice (health, backoffs, weights)", functions: ["orderKeys", "reuseSessionKey"] },
  { name: "budgets and rate limits (check, reserve, settle)", functions: ["exceeded", "reserve", "settle", "lazyWorstCase", "worstCase", "recordUsage"] },
  { name: "response cache (plan, lookup)", functions: ["cachePlan", "lookup", "cacheRequestHeaders"] },
  { name: "metrics and usage history", functions: ["flush", "attemptSucceeded", "final", "started", "ended", "recordSuccess", "labels", "cacheHit"] },
  { name: "routing log", functions: ["routed", "routingLogEntry"] },
  { name: "tracing", urls: ["@opentelemetry", "otlp-tracing", "/tracing."] },
  { name: "undici client (request out, response in)", urls: ["undici"] },
  { name: "Node HTTP server (parse, headers, response)", urls: ["node:_http_", "node:_http_common", "node:_http_incoming"] },
  { name: "garbage collection", functions: ["(garbage collector)"] },
  { name: "microtasks, timers and streams (Node internals)", urls: ["node:internal", "node:events", "node:net", "node:buffer", "node:timers"] },
];

const OTHER = "the gateway's own request handling (handler, services, glue)";
const NATIVE = "other native work (program, runtime)";

/** The category a function's name puts it in, wherever it is on the stack. */
function byFunction(node: ProfileNode): string | null {
  return CATEGORIES.find((category) => category.functions?.includes(node.callFrame.functionName))?.name ?? null;
}

/** The category of the code a sample stopped in, by its script: only the innermost frame is charged by URL. */
function byUrl(node: ProfileNode): string | null {
  const url = node.callFrame.url;
  return CATEGORIES.find((category) => category.urls?.some((part) => url.includes(part)))?.name ?? null;
}

function main(): void {
  const [file, cpuArg, startArg, endArg] = process.argv.slice(2);
  if (file === undefined) throw new Error("usage: profile-account.ts <file.cpuprofile> [cpu µs per request] [start fraction, default 0.5] [end fraction, default 1]");
  const cpuUs = cpuArg === undefined ? null : Number(cpuArg);
  const charged = new Map<string, number>();
  let busy = 0;
  for (const stack of busyStacks(file, Number(startArg ?? "0.5"), Number(endArg ?? "1"))) {
    const leaf = stack[0];
    if (leaf === undefined) continue;
    busy++;
    let category: string | null = null;
    for (const node of stack) {
      category = byFunction(node);
      if (category !== null) break;
    }
    const name = category ?? byUrl(leaf) ?? (leaf.callFrame.url === "" ? NATIVE : OTHER);
    charged.set(name, (charged.get(name) ?? 0) + 1);
  }
  console.log(`${busy} busy samples${cpuUs === null ? "" : `, ${cpuUs} µs CPU per request`}`);
  console.log(`| where | share |${cpuUs === null ? "" : " µs per request |"}`);
  console.log(`| - | - |${cpuUs === null ? "" : " - |"}`);
  for (const [name, count] of [...charged].sort((a, b) => b[1] - a[1])) {
    const share = count / busy;
    console.log(`| ${name} | ${(share * 100).toFixed(1)}% |${cpuUs === null ? "" : ` ${(share * cpuUs).toFixed(1)} |`}`);
  }
}

main();
