/**
 * The OpenTelemetry SDK behind Tracing, loaded with dynamic imports only when tracing is configured, so
 * a gateway without it never loads the SDK. Spans go to an OTLP/HTTP (protobuf) collector through the
 * batch processor: ending a span only queues it (a bounded queue), and a slow or unreachable collector
 * costs the spans, never a request. Lost spans are counted and logged at most once a minute.
 */
import { ROOT_CONTEXT, defaultTextMapGetter, type Context } from "@opentelemetry/api";
import type { ExportResult } from "@opentelemetry/core";
import type { ReadableSpan, Sampler, SpanExporter, SpanProcessor } from "@opentelemetry/sdk-trace-node";
import type { Logger } from "./logger.js";
import type { Tracing } from "./tracing.js";

/** The standard OTEL_TRACES_SAMPLER names. */
export const SAMPLER_NAMES = ["always_on", "always_off", "traceidratio", "parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio"] as const;
export type SamplerName = (typeof SAMPLER_NAMES)[number];

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
}

const DEFAULT_QUEUE = 2048;
const EXPORT_TIMEOUT_MS = 10_000;
const SHUTDOWN_LIMIT_MS = 5_000;

/** Starts the SDK: a tracer provider of its own (the global API stays untouched), exporting over OTLP/HTTP. */
export async function startOtlpTracing(options: OtlpTracingOptions, logger: Logger, version: string): Promise<Tracing> {
  const [sdk, { OTLPTraceExporter }, { resourceFromAttributes }, core] = await Promise.all([
    import("@opentelemetry/sdk-trace-node"),
    import("@opentelemetry/exporter-trace-otlp-proto"),
    import("@opentelemetry/resources"),
    import("@opentelemetry/core"),
  ]);
  const ratio = Math.min(1, Math.max(0, options.sampleRatio));
  const base: Record<SamplerName, () => Sampler> = {
    always_on: () => new sdk.AlwaysOnSampler(),
    always_off: () => new sdk.AlwaysOffSampler(),
    traceidratio: () => new sdk.TraceIdRatioBasedSampler(ratio),
    parentbased_always_on: () => new sdk.ParentBasedSampler({ root: new sdk.AlwaysOnSampler() }),
    parentbased_always_off: () => new sdk.ParentBasedSampler({ root: new sdk.AlwaysOffSampler() }),
    parentbased_traceidratio: () => new sdk.ParentBasedSampler({ root: new sdk.TraceIdRatioBasedSampler(ratio) }),
  };
  const maxQueueSize = options.maxQueueSize ?? DEFAULT_QUEUE;
  const losses = new LossCounter(logger, options.dropReportIntervalMs ?? 60_000);
  const exporter = new CountingExporter(new OTLPTraceExporter({ url: options.url, headers: options.headers, timeoutMillis: EXPORT_TIMEOUT_MS }), losses);
  const batch = new sdk.BatchSpanProcessor(exporter, { maxQueueSize, maxExportBatchSize: Math.min(512, maxQueueSize), exportTimeoutMillis: EXPORT_TIMEOUT_MS, scheduledDelayMillis: options.exportDelayMs ?? 5000 });
  const provider = new sdk.NodeTracerProvider({
    resource: resourceFromAttributes({ "service.name": options.serviceName, "service.version": version }),
    sampler: base[options.sampler](),
    spanProcessors: [new BoundedQueue(batch, exporter, maxQueueSize, losses)],
  });
  const propagator = new core.W3CTraceContextPropagator();
  const tracer = provider.getTracer("gw", version);
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
        await Promise.race([provider.shutdown().catch(() => undefined), limit]);
        clearTimeout(timer);
        losses.stop();
      })();
      return stopping;
    },
  };
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

/** Passes batches to the OTLP exporter and counts the spans of a failed export as lost. */
class CountingExporter implements SpanExporter {
  /** Spans ended and not yet handed to the exporter: the batch processor's queue. */
  queued = 0;

  constructor(
    private readonly inner: SpanExporter,
    private readonly losses: LossCounter,
  ) {}

  export(spans: ReadableSpan[], resultCallback: (result: ExportResult) => void): void {
    this.queued = Math.max(0, this.queued - spans.length);
    this.inner.export(spans, (result) => {
      if (result.code !== 0) this.losses.add(spans.length, result.error?.message ?? "export failed");
      resultCallback(result);
    });
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }
}

/** In front of the batch processor: counts the spans its full queue drops (it drops them silently). */
class BoundedQueue implements SpanProcessor {
  constructor(
    private readonly inner: SpanProcessor,
    private readonly exporter: CountingExporter,
    private readonly capacity: number,
    private readonly losses: LossCounter,
  ) {}

  onStart(span: Parameters<SpanProcessor["onStart"]>[0], parentContext: Context): void {
    this.inner.onStart(span, parentContext);
  }

  onEnd(span: ReadableSpan): void {
    if ((span.spanContext().traceFlags & 1) === 1) {
      if (this.exporter.queued >= this.capacity) this.losses.add(1, "the export queue is full (the collector is slow or unreachable)");
      else this.exporter.queued++;
    }
    this.inner.onEnd(span);
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }
}
