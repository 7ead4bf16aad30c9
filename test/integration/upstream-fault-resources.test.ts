/**
 * A thousand requests to faulty upstreams leave nothing behind: the gateway runs as a child process, and
 * its open file descriptors (/proc/<pid>/fd) and its heap after a full collection (/metrics) come back
 * within 10% of where they were before the faults.
 */
import assert from "node:assert/strict";
import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import OpenAI from "openai";
import { Agent } from "undici";
import { FAULTS, startFaultyUpstream, type FaultyUpstream } from "../fixtures/faulty-upstream.js";
import { testDatabaseUrl } from "../helpers/app.js";
import { servingUrl, spawnGateway, type GatewayProcess } from "../helpers/gateway-process.js";
import { seedEmbeddedDatabase } from "../helpers/pglite-template.js";
import { createScratchDatabase, type ScratchDatabase } from "../helpers/scratch-database.js";
import { SKIP_IN_REPEATED_RUN } from "../helpers/repeated-run.js";

const REQUESTS = 1000;
const CONCURRENCY = 8;

let upstream: FaultyUpstream;
let dir: string;
let gw: GatewayProcess;
let url: string;
let scratch: ScratchDatabase | undefined;

before(async () => {
  upstream = await startFaultyUpstream();
  dir = await mkdtemp(join(tmpdir(), "gw-faults-"));
  const config = join(dir, "gw.json");
  const network = { base_url: upstream.url, default_request_timeout_in_seconds: 1, stream_idle_timeout_in_seconds: 1, max_response_bytes: 1_048_576 };
  await writeFile(
    config,
    JSON.stringify({
      providers: {
        faulty: { keys: [{ id: "f-1", value: "sk-f-1" }], network_config: network },
        healthy: { keys: [{ id: "h-1", value: "sk-h-1" }], network_config: { base_url: upstream.url } },
      },
    }),
  );
  scratch = testDatabaseUrl ? await createScratchDatabase(testDatabaseUrl) : undefined;
  if (!scratch) await seedEmbeddedDatabase(join(dir, "data"));
  gw = spawnGateway(
    process.execPath,
    ["--expose-gc", "--import", "tsx", "--import", "./test/fixtures/gc-on-signal.ts", "src/main.ts", "--config", config, "--port", "0", "--data-dir", join(dir, "data")],
    { GW_LOG_LEVEL: "info", ...(scratch ? { GW_DATABASE_URL: scratch.url } : {}) },
  );
  url = await servingUrl(gw);
});

after(async () => {
  if (gw && gw.child.exitCode === null) {
    gw.child.kill("SIGTERM");
    await gw.exited;
  }
  await scratch?.drop();
  await upstream?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function openFds(): Promise<number> {
  return (await readdir(`/proc/${gw.child.pid}/fd`)).length;
}

/** The heap in use after a full collection, as /metrics reports it. */
async function heapUsed(): Promise<number> {
  gw.child.kill("SIGUSR2");
  // The collection runs when the signal is handled; a scrape queued behind it sees the result.
  await new Promise((resolve) => setTimeout(resolve, 200));
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith("nodejs_heap_size_used_bytes "));
  assert.ok(line, "no nodejs_heap_size_used_bytes in /metrics");
  return Number(line.split(" ")[1]);
}

/** Runs `count` requests, each with a fault picked in turn, streamed every other time; returns how many failed as expected. */
async function storm(count: number): Promise<{ providerErrors: number; other: string[] }> {
  const agent = new Agent({ keepAliveTimeout: 1_000 });
  const client = new OpenAI({ apiKey: "unused", baseURL: `${url}/v1`, maxRetries: 0, timeout: 60_000, defaultHeaders: { authorization: null }, fetchOptions: { dispatcher: agent } as Record<string, unknown> });
  let next = 0;
  let providerErrors = 0;
  const other: string[] = [];
  const worker = async (): Promise<void> => {
    for (let i = next++; i < count; i = next++) {
      const fault = FAULTS[i % FAULTS.length] ?? "never-answers";
      const params = { model: `faulty/${fault}`, messages: [{ role: "user" as const, content: "hi" }] };
      try {
        if (i % 2 === 0) await client.chat.completions.create(params);
        else for await (const _chunk of await client.chat.completions.create({ ...params, stream: true })) void _chunk;
        other.push(`${fault}: succeeded`);
      } catch (err) {
        const type = err instanceof OpenAI.APIError ? (err.error as { type?: unknown } | undefined)?.type : undefined;
        if (typeof type === "string" && type.startsWith("provider_")) providerErrors++;
        else other.push(`${fault}: ${String(err)}`);
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  await agent.close();
  return { providerErrors, other };
}

/** Polls (bounded: 120 x 500 ms) until `check` holds, returning its last reading. */
async function settle<T>(read: () => Promise<T>, check: (value: T) => boolean): Promise<T> {
  let value = await read();
  for (let i = 0; i < 120 && !check(value); i++) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    value = await read();
  }
  return value;
}

test(`${REQUESTS} requests to faulty upstreams leave file descriptors and heap within 10% of where they started`, { skip: SKIP_IN_REPEATED_RUN }, async (t) => {
  // A first round warms up what is built once (modules, pools, caches), so the baseline is the steady state.
  const warm = await storm(FAULTS.length * 4);
  assert.deepEqual(warm.other, []);
  const fdsBefore = await settle(openFds, () => true);
  const heapBefore = await heapUsed();

  const run = await storm(REQUESTS);
  assert.deepEqual(run.other, [], "every faulty request ends as a provider_* error");
  assert.equal(run.providerErrors, REQUESTS);
  assert.equal(gw.child.exitCode, null, "the gateway is still running");

  // Closed sockets leave the descriptor table a moment after the last answer.
  const fdsAfter = await settle(openFds, (fds) => fds <= fdsBefore * 1.1);
  assert.ok(fdsAfter <= fdsBefore * 1.1, `open file descriptors grew from ${fdsBefore} to ${fdsAfter}`);
  const heapAfter = await settle(heapUsed, (heap) => heap <= heapBefore * 1.1);
  assert.ok(heapAfter <= heapBefore * 1.1, `heap grew from ${heapBefore} to ${heapAfter} bytes`);
  t.diagnostic(`open file descriptors ${fdsBefore} -> ${fdsAfter}, heap ${heapBefore} -> ${heapAfter} bytes`);
  const health = await fetch(`${url}/health`);
  assert.equal(health.status, 200);
});
