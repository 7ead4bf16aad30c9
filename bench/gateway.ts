/**
 * Bench child: the real gateway (createApp) on 127.0.0.1 (port 0) over a temporary data directory with
 * the embedded database, logging at "warn" to stderr, with provider openai (two keys) pointing at the
 * mock upstream (env BENCH_UPSTREAM_URL) and one virtual key, `sk-gw-bench`, whose rate limit is high
 * enough never to bite but makes governance run on every request. Env BENCH_VARIANT is the JSON of a
 * variant from run.ts: `{"name": ..., "appOptions": {...}, "logLevel"?, "databaseUrl"?}`: appOptions
 * are merged over the base AppOptions; `logLevel` other than warn writes the log, access lines included,
 * asynchronously to a file in the data directory, as the production logger writes to stdout; `databaseUrl`
 * runs on that PostgreSQL server in a schema of its own, dropped at the end; `cluster` `{schema, encryptionKey}`
 * makes the child one node of a cluster on that server: the nodes share the schema (run.ts drops it once every
 * node stopped) and the key, and the bench key also gets a key-level request limit, so the counters the nodes share run
 * on every request. `config` (the JSON of a config file, as config.json writes it) makes the child start as `npm start`
 * starts from a file: its sections are added to the bench's provider and virtual key (`virtualKey` fields go onto that
 * key: its team, its cache), the whole is checked by the config loader and turned into AppOptions by the same
 * functions, tracing included (telemetry.otlp), so a feature is measured configured the way a user configures it.
 * Its first stdout line is `{"port": <n>}`, or `{"error": <message>}` when it cannot start; it closes the app and
 * removes its data when its stdin closes or on SIGTERM/SIGINT.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { appOptionsFromConfig, createApp, type App, type AppOptions } from "../src/app.js";
import { parseConfig } from "../src/config/load-config.js";
import { dropSchema, randomSchemaName } from "../src/store/index.js";
import { inferenceOptionsFromFile } from "../src/services/inference/config.js";
import { batchedDestination, createLogger } from "../src/telemetry/logger.js";
import { otlpOptionsFrom } from "../src/telemetry/otlp-settings.js";
import { answerAllocationRequests } from "./allocation-meter.js";

/** The virtual key every bench request sends (run.ts sends the same). */
const BENCH_VIRTUAL_KEY = "sk-gw-bench";

interface Variant {
  name: string;
  appOptions: Partial<AppOptions>;
  routingRules?: number;
  logLevel?: string;
  databaseUrl?: string;
  cluster?: { schema: string; encryptionKey: string };
  /** A config file's sections besides the bench's own provider and key; set, the options come from the whole file. */
  config?: Record<string, unknown>;
  /** Fields added to the bench's virtual key in that file. */
  virtualKey?: Record<string, unknown>;
}

const upstream = process.env["BENCH_UPSTREAM_URL"];
if (!upstream) throw new Error("BENCH_UPSTREAM_URL is required");
const variant = JSON.parse(process.env["BENCH_VARIANT"] ?? '{"name":"gateway","appOptions":{}}') as Variant;

function providerKey(id: string, value: string): Record<string, unknown> {
  return { id, name: id, value };
}

/** Rules in the bench key's scope whose conditions read the model and the headers but never match. */
const routingRules = Array.from({ length: variant.routingRules ?? 0 }, (_, i) => ({
  id: `rr-bench-${i}`,
  name: `bench-${i}`,
  scope: "virtual_key",
  scope_id: "vk-bench",
  priority: i,
  cel_expression: `model == "never-${i}" || ("x-bench-rule-${i}" in headers && request > 200.0)`,
  targets: [{ provider: "openai", model: "gpt-4o" }],
}));

const providers = { openai: { keys: [providerKey("oa-1", "sk-upstream-1"), providerKey("oa-2", "sk-upstream-2")], network_config: { base_url: upstream } } };
const benchKey = {
  id: "vk-bench",
  name: "bench",
  value: BENCH_VIRTUAL_KEY,
  provider_configs: [
    {
      provider: "openai",
      allowed_models: ["*"],
      key_ids: ["*"],
      weight: 1,
      rate_limit: { token_max_limit: 1e15, token_reset_duration: "1h" },
    },
  ],
  ...(variant.cluster ? { rate_limit: { request_max_limit: 1e12, request_reset_duration: "1h" } } : {}),
  ...variant.virtualKey,
};

/** The AppOptions of a variant given as a config file, built as main.ts builds them from one (no environment, so no OTEL_* variable overrides it). */
function optionsFromConfig(config: Record<string, unknown>): Partial<AppOptions> {
  const governance = (config["governance"] ?? {}) as Record<string, unknown[] | undefined>;
  const file = parseConfig(
    {
      ...config,
      providers: { ...providers, ...(config["providers"] as Record<string, unknown> | undefined) },
      governance: { ...governance, virtual_keys: [benchKey, ...(governance["virtual_keys"] ?? [])], routing_rules: [...routingRules, ...(governance["routing_rules"] ?? [])] },
    },
    {},
  );
  const tracing = otlpOptionsFrom(file.telemetry.otlp, {});
  return { ...appOptionsFromConfig(file), ...(tracing ? { tracing } : {}) };
}

const dataDir = await mkdtemp(join(tmpdir(), "gw-bench-"));
const schema = variant.databaseUrl ? (variant.cluster?.schema ?? randomSchemaName()) : undefined;
const logLevel = variant.logLevel ?? "warn";
// The production logger's batched asynchronous destination, to a file instead of stdout.
const logDestination = logLevel === "warn" ? process.stderr : batchedDestination(join(dataDir, "gateway.log"));
let app: App | undefined;
let stopping: Promise<void> | undefined;

function stop(): Promise<void> {
  stopping ??= (async () => {
    // A wedged close must not keep the bench from finishing.
    setTimeout(() => process.exit(1), 15_000).unref();
    try {
      await app?.close();
    } finally {
      if (variant.databaseUrl && schema && !variant.cluster) await dropSchema(variant.databaseUrl, schema).catch(() => undefined);
      await rm(dataDir, { recursive: true, force: true });
    }
    process.exit(0);
  })();
  return stopping;
}

answerAllocationRequests();
process.stdin.on("end", () => void stop());
process.stdin.resume();
process.on("SIGTERM", () => void stop());
process.on("SIGINT", () => void stop());

try {
  app = await createApp({
    dataDir,
    host: "127.0.0.1",
    port: 0,
    // A fixed key keeps the "generated encryption key" warning out of the bench output.
    encryptionKey: variant.cluster?.encryptionKey ?? randomBytes(32).toString("hex"),
    logger: createLogger({ level: logLevel, destination: logDestination }),
    ...(variant.config ? optionsFromConfig(variant.config) : { inference: inferenceOptionsFromFile(providers, [benchKey], routingRules) }),
    ...(variant.databaseUrl ? { databaseUrl: variant.databaseUrl, databaseSchema: schema } : {}),
    ...variant.appOptions,
  });
} catch (err) {
  process.stderr.write(`gateway variant ${variant.name} failed to start: ${String(err)}\n`);
  // Where the bench reads the port, so the reason reaches its report.
  process.stdout.write(`${JSON.stringify({ error: err instanceof Error ? err.message : String(err) })}\n`);
  await rm(dataDir, { recursive: true, force: true });
  process.exit(1);
}
process.stdout.write(`${JSON.stringify({ port: app.port })}\n`);
