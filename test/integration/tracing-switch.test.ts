/**
 * Tracing's on and off switch as a deployment sets it: the gateway process with the standard OTEL_*
 * variables exports to the collector they name (service name and headers included) and flushes on
 * SIGTERM; with OTEL_SDK_DISABLED it exports nothing.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { servingUrl, spawnMain } from "../helpers/gateway-process.js";
import { startOtlpReceiver, type OtlpReceiver } from "../helpers/otlp-receiver.js";
import { seedEmbeddedDatabase } from "../helpers/pglite-template.js";

let dir: string;
let receiver: OtlpReceiver;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "gw-tracing-"));
  receiver = await startOtlpReceiver();
});

after(async () => {
  await receiver?.close();
  await rm(dir, { recursive: true, force: true });
});

/** Runs the gateway with `env` (and `args`), sends GET /health with a caller trace id, and stops it with SIGTERM. */
async function runOnce(name: string, env: NodeJS.ProcessEnv, traceId: string, args: string[] = []): Promise<void> {
  const dataDir = join(dir, name);
  await seedEmbeddedDatabase(dataDir);
  const gw = spawnMain(["--port", "0", "--data-dir", dataDir, ...args], env);
  try {
    const url = await servingUrl(gw);
    const res = await fetch(`${url}/health`, { headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` } });
    assert.equal(res.status, 200);
  } finally {
    gw.child.kill("SIGTERM");
  }
  assert.equal(await gw.exited, 0, gw.output());
}

test("exports to the collector named by OTEL_EXPORTER_OTLP_ENDPOINT, with OTEL_SERVICE_NAME and OTEL_EXPORTER_OTLP_HEADERS, flushing on SIGTERM", async () => {
  const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
  await runOnce("on", { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SERVICE_NAME: "gw-env", OTEL_EXPORTER_OTLP_HEADERS: "x-tenant=team%20a" }, traceId);
  // The batch waits 5 s before it exports; only the flush at the graceful stop gets the span out this soon.
  const span = receiver.spans.find((s) => s.traceId === traceId);
  assert.ok(span, "the span was not exported by the time the gateway exited");
  assert.equal(span.name, "GET /health");
  assert.equal(span.serviceName, "gw-env");
  assert.ok(receiver.requests.some((r) => r.headers["x-tenant"] === "team a"));
});

test("exports to the collector of telemetry.otlp in the config file, with its headers", async () => {
  const traceId = "6bf92f3577b34da6a3ce929d0e0e4738";
  const config = join(dir, "tracing.json");
  await writeFile(config, JSON.stringify({ telemetry: { otlp: { endpoint: receiver.url, headers: { "x-file-token": "env.TRACE_TOKEN" }, sample_ratio: 1 } } }));
  await runOnce("file", { TRACE_TOKEN: "from-env" }, traceId, ["--config", config]);
  const span = receiver.spans.find((s) => s.traceId === traceId);
  assert.ok(span, "the span was not exported by the time the gateway exited");
  assert.equal(span.serviceName, "gw");
  assert.ok(receiver.requests.some((r) => r.headers["x-file-token"] === "from-env"));
});

test("exports nothing with OTEL_SDK_DISABLED=true", async () => {
  const traceId = "5bf92f3577b34da6a3ce929d0e0e4737";
  await runOnce("disabled", { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SDK_DISABLED: "true" }, traceId);
  assert.equal(receiver.spans.filter((s) => s.traceId === traceId).length, 0);
});
