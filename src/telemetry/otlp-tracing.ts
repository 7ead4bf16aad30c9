/**
 * Tracing over OTLP/HTTP (protobuf), started only when tracing is configured: the gateway's recording
 * tracer, the bounded batch queue, and one HTTP connection pool to the collector. Ending a span only
 * encodes it into the batch that is filling; a slow or unreachable collector costs spans, never a
 * request. Lost spans are counted and logged at most once a minute. The W3C propagator is the only
 * OpenTelemetry module beyond the API that is loaded, and only here.
 */
import { ROOT_CONTEXT, defaultTextMapGetter, type Context } from "@opentelemetry/api";
import { Pool } from "undici";
import type { Logger } from "./logger.js";
import type { ExportIdentity, SpanBatch } from "./otlp-protobuf.js";
import { RecordingTracer, samplerFor, type SamplerName } from "./recording-tracer.js";
import { SpanExportQueue } from "./span-export-queue.js";
import type { Tracing } from "./tracing.js";

export { SAMPLER_NAMES, type SamplerName } from "./recording-tracer.js";

/** Where and how traces are exported; main.ts builds it from OTEL_* variables and telemetry.otlp. */
export interface OtlpTracingOptions {
  /** The full OTLP/HTTP traces URL (…/v1/traces). */
  url: string;
  headers: Record<string, string>;
  serviceName: string;
  sampler: SamplerName;
  /** The ratio of the *traceidratio samplers, 0..1. */
  sampleRatio: number;
  /** Record prompt and completion text on spans. */
  captureContent: boolean;
  /** Spans kept while the collector is slow; more are dropped (default 2048). */
  maxQueueSize?: number;
  /** How often lost spans are reported (default one minute). */
  dropReportIntervalMs?: number;
  /** How long ended spans wait to be exported in a batch (default 5 s; tests shorten it). */
  exportDelayMs?: number;
  /** How long connecting, then the collector's answer, may each take before the batch is lost (default 10 s). */
  exportTimeoutMs?: number;
}

const DEFAULT_QUEUE = 2048;
const MAX_BATCH = 512;
const EXPORT_TIMEOUT_MS = 10_000;
const SHUTDOWN_LIMIT_MS = 5_000;

/** Starts tracing: spans recorded in memory and exported in batches over OTLP/HTTP. */
export async function startOtlpTracing(options: OtlpTracingOptions, logger: Logger, version: string): Promise<Tracing> {
  const { W3CTraceContextPropagator } = await import("@opentelemetry/core");
  const ratio = Math.min(1, Math.max(0, options.sampleRatio));
  const losses = new LossCounter(logger, options.dropReportIntervalMs ?? 60_000);
  const identity: ExportIdentity = {
    resource: { "service.name": options.serviceName, "service.version": version, "telemetry.sdk.language": "nodejs", "process.pid": process.pid },
    scopeName: "gw",
    scopeVersion: version,
  };
  const collector = new CollectorClient(options.url, options.headers, identity, options.exportTimeoutMs ?? EXPORT_TIMEOUT_MS);
  const maxQueueSize = options.maxQueueSize ?? DEFAULT_QUEUE;
  const queue = new SpanExportQueue((batch) => collector.send(batch), (count, reason) => losses.add(count, reason), {
    maxQueueSize,
    maxBatchSize: Math.min(MAX_BATCH, maxQueueSize),
    delayMs: options.exportDelayMs ?? 5000,
  });
  const tracer = new RecordingTracer(queue.add, samplerFor(options.sampler, ratio));
  const propagator = new W3CTraceContextPropagator();
  let stopping: Promise<void> | undefined;
  logger.info({ url: redactedUrl(options.url), sampler: options.sampler, sample_ratio: ratio, service_name: options.serviceName }, "tracing: exporting spans over OTLP/HTTP");
  return {
    tracer,
    propagator,
    captureContent: options.captureContent,
    extract(headers): Context {
      if (headers["traceparent"] === undefined) return ROOT_CONTEXT;
      return propagator.extract(ROOT_CONTEXT, headers, defaultTextMapGetter);
    },
    shutdown() {
      stopping ??= (async () => {
        let timer: NodeJS.Timeout | undefined;
        const limit = new Promise<void>((resolve) => {
          timer = setTimeout(resolve, SHUTDOWN_LIMIT_MS);
          timer.unref();
        });
        await Promise.race([queue.close(Date.now() + SHUTDOWN_LIMIT_MS).catch(() => undefined), limit]);
        clearTimeout(timer);
        await collector.close();
        losses.stop();
      })();
      return stopping;
    },
  };
}

/** POSTs encoded batches to the collector's traces URL over a small keep-alive pool. */
class CollectorClient {
  private readonly pool: Pool;
  private readonly path: string;
  private readonly headers: Record<string, string>;

  constructor(
    url: string,
    headers: Record<string, string>,
    private readonly identity: ExportIdentity,
    timeoutMs: number,
  ) {
    const parsed = new URL(url);
    // The pool's timeouts bound every export (connecting, waiting for the answer, reading it), so an export
    // needs no signal of its own: a per-export timeout signal and its timer outlived the export by seconds.
    this.pool = new Pool(parsed.origin, { connections: 2, connectTimeout: timeoutMs, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
    this.path = `${parsed.pathname}${parsed.search}`;
    this.headers = { ...headers, "content-type": "application/x-protobuf" };
    if (parsed.username !== "" || parsed.password !== "") {
      this.headers["authorization"] ??= `Basic ${Buffer.from(`${decodeURIComponent(parsed.username)}:${decodeURIComponent(parsed.password)}`).toString("base64")}`;
    }
  }

  async send(batch: SpanBatch): Promise<void> {
    const body = batch.request(this.identity);
    const res = await this.pool.request({ path: this.path, method: "POST", headers: this.headers, body });
    await res.body.dump();
    if (res.statusCode < 200 || res.statusCode > 299) throw new Error(`the collector answered ${res.statusCode}`);
  }

  async close(): Promise<void> {
    await this.pool.close().catch(() => undefined);
  }
}

/** The URL without its query and credentials, for the log. */
function redactedUrl(text: string): string {
  try {
    const url = new URL(text);
    return `${url.protocol}//${url.host}${url.pathname}`;
  } catch {
    return "(invalid URL)";
  }
}

/** Counts spans lost (queue full, export failed) and logs the count at most once per interval. */
class LossCounter {
  private lost = 0;
  private reason = "";
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly logger: Logger,
    intervalMs: number,
  ) {
    this.timer = setInterval(() => this.report(), intervalMs);
    this.timer.unref();
  }

  add(count: number, reason: string): void {
    this.lost += count;
    this.reason = reason;
  }

  private report(): void {
    if (this.lost === 0) return;
    this.logger.warn({ dropped_spans: this.lost, reason: this.reason }, "tracing: spans were dropped");
    this.lost = 0;
  }

  stop(): void {
    clearInterval(this.timer);
    this.report();
  }
}
