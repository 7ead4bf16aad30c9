/**
 * The processes the benches that look at the gateway from outside start (`bench/outside.ts`, `bench/served-turns.ts`,
 * `bench/allocation-sites.ts`, `bench/mcp-relay.ts`): bundled bench children (the mock upstream, the floor), and
 * the gateway exactly as `npm start` runs it (`dist/main.js` with the node flags and environment `bin/gw-serve`
 * gives it on its database) from a config file, by default one provider with one key and one virtual key, at its
 * default log level, its stdout going to a file. Build first (`npm run build`).
 */
import { spawn, type ChildProcess, type StdioOptions } from "node:child_process";
import { randomBytes } from "node:crypto";
import { closeSync, openSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { buildServerBundle } from "../src/build-bundle.js";
import { SERVING_ENVIRONMENT, servingNodeFlags } from "../src/serving-environment.js";
import { dropSchema, randomSchemaName } from "../src/store/index.js";
import { TreeRssPeaks } from "./process-tree.js";

const MAIN = fileURLToPath(new URL("../dist/main.js", import.meta.url));
const START_TIMEOUT_MS = 120_000;

/** The virtual key the served gateway's config holds. */
export const SERVED_VIRTUAL_KEY = "sk-gw-outside";

/** The path the outside benches load. */
export const OUTSIDE_PATH = "/v1/chat/completions";
/** The headers of every loaded request: JSON, and the served gateway's virtual key. */
export const OUTSIDE_HEADERS: Readonly<Record<string, string>> = { "content-type": "application/json", authorization: `Bearer ${SERVED_VIRTUAL_KEY}` };
const OUTSIDE_MESSAGES = [
  { role: "system", content: "You are a concise assistant." },
  { role: "user", content: "Explain in two sentences why connection pooling matters for an API gateway." },
];
/** The JSON load's body: a short chat completion the mock upstream answers with about 600 bytes. */
export const OUTSIDE_CHAT_BODY = JSON.stringify({ model: "gpt-4o-mini", messages: OUTSIDE_MESSAGES, temperature: 0.2, max_tokens: 160 });
/** The streaming load's body: the mock upstream answers it with 50 SSE chunks. */
export const OUTSIDE_STREAM_BODY = JSON.stringify({ model: "gpt-4o-mini", messages: OUTSIDE_MESSAGES, stream: true });

/** A started process that serves HTTP: its URL and process. */
export interface Served {
  url: string;
  process: ChildProcess;
  /** Stops the process and removes what it left (its data, its schema on a server). */
  stop(): Promise<void>;
}

/** How to start it: the default config for an upstream, or a config of its own. */
export type ServedGatewayOptions = ServedGatewaySettings &
  (
    | {
        /** The provider upstream of the default config (one provider, one key, the virtual key SERVED_VIRTUAL_KEY). */
        upstreamUrl: string;
      }
    | {
        /** The config file's content in place of the default config. */
        config: Record<string, unknown>;
      }
  );

/** What every start may set. */
interface ServedGatewaySettings {
  /** The built gateway to run in place of this checkout's `dist/main.js` (another commit's build, to compare). */
  main?: string | undefined;
  /** A PostgreSQL server to run on, in a schema of its own; the embedded database when undefined. */
  databaseUrl?: string | undefined;
  /** Node options put after the serving flags, before `dist/main.js` (a profiler, a preload). */
  nodeOptions?: readonly string[];
  /** Environment variables set for the child over this process's (tracing's OTEL_* variables, say). */
  env?: Readonly<Record<string, string>>;
  /** Adds an IPC channel to the child (for a preloaded module that takes commands). */
  ipc?: boolean;
  /** Told of the child as soon as it is spawned (to watch its memory, to stop it on SIGINT). */
  spawned?: (child: ChildProcess) => void;
  /** A command that runs node, given before it (an instrumenting tool and its options). */
  wrapper?: readonly string[];
}

/** The config file: one provider with one key, one virtual key, nothing else. */
function configFile(upstreamUrl: string): string {
  return JSON.stringify({
    providers: { openai: { keys: [{ id: "oa-1", name: "oa-1", value: "sk-upstream-1" }], network_config: { base_url: upstreamUrl } } },
    governance: {
      virtual_keys: [{ id: "vk-outside", name: "outside", value: SERVED_VIRTUAL_KEY, provider_configs: [{ provider: "openai", allowed_models: ["*"], key_ids: ["*"], weight: 1 }] }],
    },
  });
}

/** The config file a start asks for: its own, or the default one for its upstream. */
function configOf(options: ServedGatewayOptions): string {
  return "config" in options ? JSON.stringify(options.config) : configFile(options.upstreamUrl);
}

/** Resolves once `child` has exited (at once when it already has). */
function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once("exit", () => resolve()));
}

/** SIGTERM, then SIGKILL after 20 s; resolves once the process is gone. */
async function stopProcess(child: ChildProcess): Promise<void> {
  const done = exited(child);
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
  await done;
  clearTimeout(timer);
}

/**
 * Bundles the bench child `file` (a path relative to this folder) into `buildDir`, spawns it with `env` added,
 * and resolves with its URL from its first stdout line, `{"port": n}`; it stops when its stdin closes.
 */
export async function startBundledChild(
  file: string,
  env: Record<string, string>,
  buildDir: string,
  spawned?: (child: ChildProcess) => void,
  nodeOptions: readonly string[] = [],
): Promise<Served> {
  await buildServerBundle([fileURLToPath(new URL(file, import.meta.url))], buildDir);
  const child = spawn(process.execPath, [...nodeOptions, join(buildDir, file.replace(/^\.\//, "").replace(/\.ts$/, ".js"))], { env: { ...process.env, ...env }, stdio: ["pipe", "pipe", "inherit"] });
  spawned?.(child);
  const first = await new Promise<string>((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`${file} exited before reporting its port (code ${code})`)));
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).once("line", resolve);
  });
  const { port } = JSON.parse(first) as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    process: child,
    stop: async () => {
      const done = exited(child);
      child.stdin?.end();
      await done;
    },
  };
}

/** Starts the gateway on port 0 and resolves once it answers /ready. */
export async function startServedGateway(options: ServedGatewayOptions): Promise<Served> {
  const { databaseUrl } = options;
  const dir = await mkdtemp(join(tmpdir(), "gw-served-"));
  const config = join(dir, "config.json");
  const logFile = join(dir, "stdout.log");
  await writeFile(config, configOf(options));
  const schema = databaseUrl === undefined ? undefined : randomSchemaName();
  const out = openSync(logFile, "w");
  const stdio: StdioOptions = options.ipc === true ? ["ignore", out, "inherit", "ipc"] : ["ignore", out, "inherit"];
  const args = [...servingNodeFlags(databaseUrl === undefined), ...(options.nodeOptions ?? []), options.main ?? MAIN, "--config", config, "--port", "0", "--data-dir", join(dir, "data")];
  const [command, ...wrapperArgs] = [...(options.wrapper ?? []), process.execPath];
  const child = spawn(command as string, [...wrapperArgs, ...args], {
    env: {
      ...process.env,
      ...options.env,
      ...SERVING_ENVIRONMENT,
      GW_ENCRYPTION_KEY: randomBytes(32).toString("hex"),
      GW_DATABASE_URL: databaseUrl ?? "",
      ...(schema ? { GW_DATABASE_SCHEMA: schema } : {}),
    },
    stdio,
  });
  closeSync(out);
  options.spawned?.(child);
  const stop = async () => {
    await stopProcess(child);
    if (databaseUrl !== undefined && schema !== undefined) await dropSchema(databaseUrl, schema).catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  };
  // Bounded: polls every 20 ms until START_TIMEOUT_MS.
  for (const until = Date.now() + START_TIMEOUT_MS; Date.now() < until && child.exitCode === null; await sleep(20)) {
    const url = /"url":"([^"]+)","msg":"port bound/.exec(await readFile(logFile, "utf8"))?.[1];
    if (url === undefined) continue;
    const ready = await fetch(`${url}/ready`).then(
      async (res) => (await res.arrayBuffer(), res.status === 200),
      () => false,
    );
    if (ready) return { url, process: child, stop };
  }
  const log = await readFile(logFile, "utf8").catch(() => "");
  await stop();
  throw new Error(`the gateway did not become ready within ${START_TIMEOUT_MS / 1000} s:\n${log.slice(-2000)}`);
}

/**
 * The children a bench starts: each stopped on SIGINT while it runs, and its process tree's peak RSS sampled
 * every 100 ms from its start. Pass `watch` as a start's `spawned`.
 */
export class WatchedChildren {
  readonly peaks = new TreeRssPeaks(100);
  private readonly running = new Set<ChildProcess>();

  constructor() {
    process.on("SIGINT", () => {
      for (const child of this.running) child.kill("SIGTERM");
      process.exit(130);
    });
  }

  readonly watch = (child: ChildProcess): void => {
    this.running.add(child);
    child.once("exit", () => this.running.delete(child));
    this.peaks.watch(child.pid);
  };
}

/** The median of `values` (NaN for none). */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}
