/**
 * The inference path's events as metrics and log lines: the one place that knows which metric
 * families and label rules an event feeds (a final error empties the selected key, a refusal counts as
 * a request with no retries, a failed key is marked down only when the provider answered), and the
 * routing decisions kept for the routing log.
 */
import type { LRUCache } from "lru-cache";
import { boundedCache } from "../bounded-cache.js";
import { httpStatusOf, type GatewayError } from "../errors.js";
import type { FallbackTarget, InferenceObserver } from "./inference-observer.js";
import type { Logger } from "./logger.js";
import type { BaseLabels, CacheType, CustomLabelValues, InferenceErrorType, InferenceMethod, Metrics } from "./metrics.js";
import { RoutingLog, type RoutingLogRecord } from "./routing-log.js";
import type { TraceIdSource } from "./tracing.js";
import { NO_KEY, type UsageHistory } from "./usage-history.js";

/** A failing rule condition is logged at most this often per rule. */
const RULE_ERROR_LOG_INTERVAL_MS = 60_000;

/** Model names kept per provider (and providers kept); beyond it the least recently used give way. */
const MAX_MODEL_NAMES = 10_000;

const ERROR_TYPE_PREFIX = /^(caller|policy|provider|gateway)_/;

/** error_type of gw_error_requests_total: the error's own type when it has the vocabulary's prefix. */
function errorType(err: GatewayError): InferenceErrorType {
  return ERROR_TYPE_PREFIX.test(err.type) ? (err.type as InferenceErrorType) : "gateway_internal";
}

/** Records the inference path's events in the metrics and the log. */
export class InferenceTelemetry implements InferenceObserver {
  /** Models already reported as unpriced, so the warning is logged once per model, not per request. */
  private readonly unpriced = new Set<string>();

  /** When each rule's evaluation error was last logged. */
  private readonly ruleErrorsLoggedAt = new Map<string, number>();
  private complexityErrorLoggedAt = 0;

  /** `<provider>/<model>` names for the usage history, made once per pair instead of twice per request. */
  private readonly modelNames = boundedCache<string, LRUCache<string, string>>(MAX_MODEL_NAMES);

  constructor(
    private readonly metrics: Metrics,
    private readonly logger: Logger,
    /** Where routing decisions are kept for GET /api/governance/routing-log. */
    private readonly routingLog: RoutingLog = new RoutingLog(),
    /** Where per-minute totals are counted for the usage history, when kept. */
    private readonly history?: UsageHistory,
  ) {}

  refused(labels: BaseLabels, error: GatewayError): void {
    this.final(labels, 0, error);
  }

  started(method: InferenceMethod, custom: CustomLabelValues | undefined): void {
    this.metrics.activeRequestStarted(method, custom);
  }

  ended(method: InferenceMethod, custom: CustomLabelValues | undefined): void {
    this.metrics.activeRequestFinished(method, custom);
  }

  attemptStarted(_labels: BaseLabels): void {
    // Nothing is recorded per attempt until it ends: the attempt's labels and timing come with its end.
  }

  attemptSucceeded(labels: BaseLabels, upstreamSeconds: number, overheadMicroseconds: number): void {
    this.metrics.recordUpstreamLatency(labels, upstreamSeconds, true);
    this.metrics.recordOverhead(labels, overheadMicroseconds);
    this.history?.latency(upstreamSeconds * 1000 + overheadMicroseconds / 1000);
    this.metrics.setProviderKeyUp(labels.provider, labels.selectedKeyId ?? "", labels.selectedKeyName ?? "", true);
  }

  attemptFailed(labels: BaseLabels, upstreamSeconds: number, upstreamStatus: number | null): void {
    this.metrics.recordUpstreamLatency(labels, upstreamSeconds, false);
    this.history?.latency(upstreamSeconds * 1000);
    // Only an answer from the provider says something about the key; a network failure does not.
    if (upstreamStatus !== null) this.metrics.setProviderKeyUp(labels.provider, labels.selectedKeyId ?? "", labels.selectedKeyName ?? "", false);
  }

  keyRotated(labels: BaseLabels, failReason: string, upstreamStatus: number | null, nextKeyId: string): void {
    const keyId = labels.selectedKeyId ?? "";
    this.metrics.recordKeyRotation({ provider: labels.provider, requestedModel: labels.model, keyId, keyName: labels.selectedKeyName ?? "", failReason });
    this.logger.info({ ...labels.logTrace?.ids(), provider: labels.provider, key_id: keyId, next_key_id: nextKeyId, status: upstreamStatus }, "rotating to the next provider key");
  }

  targetFailed(labels: BaseLabels, error: GatewayError, cause: unknown, next: FallbackTarget | undefined): void {
    if (error.type === "gateway_internal") {
      this.logger.error({ ...labels.logTrace?.ids(), err: cause, provider: labels.provider, method: labels.method }, "inference request failed inside the gateway");
    }
    if (next !== undefined) {
      this.logger.info({ ...labels.logTrace?.ids(), provider: labels.provider, model: labels.model, error_type: error.type, next }, "falling back to the next provider");
    }
  }

  firstToken(labels: BaseLabels, seconds: number): void {
    this.metrics.recordFirstToken(labels, seconds);
  }

  chunks(labels: BaseLabels, seconds: number, count: number): void {
    this.metrics.recordInterTokens(labels, seconds, count);
  }

  final(labels: BaseLabels, retries: number, error: GatewayError | null): void {
    this.history?.request(labels.virtualKeyName || NO_KEY, this.modelName(labels.provider, labels.model), error !== null);
    if (error === null) {
      this.metrics.recordUpstreamRequest(labels);
      this.metrics.recordSuccess(labels);
      this.metrics.recordRetries(labels, retries);
      return;
    }
    // A final error names no selected key.
    const base = { ...labels, selectedKeyId: "", selectedKeyName: "" };
    this.metrics.recordUpstreamRequest(base);
    this.metrics.recordError(base, httpStatusOf(error), errorType(error));
    this.metrics.recordRetries(base, retries);
  }

  /** The usage history's name of a model: `<provider>/<model>`. */
  private modelName(provider: string, model: string): string {
    let models = this.modelNames.get(provider);
    if (models === undefined) {
      models = boundedCache(MAX_MODEL_NAMES);
      this.modelNames.set(provider, models);
    }
    let name = models.get(model);
    if (name === undefined) {
      name = `${provider}/${model}`;
      models.set(model, name);
    }
    return name;
  }

  cacheHit(labels: BaseLabels, cacheType: CacheType): void {
    this.metrics.recordCacheHit(labels, cacheType);
  }

  usage(labels: BaseLabels, upstreamModel: string, inputTokens: number, outputTokens: number, costUsd: number | null): void {
    this.metrics.recordTokens(labels, inputTokens, outputTokens);
    this.history?.usage(labels.virtualKeyName || NO_KEY, this.modelName(labels.provider, labels.model), inputTokens, outputTokens, costUsd ?? 0);
    if (costUsd !== null) {
      this.metrics.recordCost(labels, costUsd);
      return;
    }
    const id = `${labels.provider}/${upstreamModel}`;
    if (this.unpriced.has(id)) return;
    this.unpriced.add(id);
    this.logger.warn({ ...labels.logTrace?.ids(), provider: labels.provider, model: upstreamModel }, "no price known for this model; its requests spend nothing from budgets");
  }

  toolCall(name: string, failure: unknown): void {
    this.history?.tool(name);
    if (failure !== null) this.logger.error({ err: failure, tool: name }, "agent tool execution failed inside the gateway");
  }

  toolCallsReturned(depth: number, pending: number): void {
    this.logger.debug({ depth, pending }, "agent loop returns the model's tool calls");
  }

  routed(at: number, record: RoutingLogRecord, logTrace?: TraceIdSource): void {
    this.routingLog.add(at, record);
    // The entry's text is built for the debug line only when that line is written.
    if (!this.logger.isLevelEnabled("debug")) return;
    const entry = record.describe();
    this.logger.debug(
      {
        ...logTrace?.ids(),
        engines: entry.engines.join(","),
        requested_model: entry.requestedModel,
        provider: entry.provider,
        model: entry.model,
        routing_rule_id: entry.routingRuleId,
        routing_rule_name: entry.routingRuleName,
        fallbacks: entry.fallbacks,
        virtual_key_id: entry.virtualKeyId,
      },
      entry.message,
    );
  }

  /** One embedding call made to compute complexity tiers. */
  routingEmbedding(provider: string, model: string, phase: "request" | "warmup", costUsd: number | null): void {
    this.metrics.recordRoutingEmbedding(provider, model, phase, costUsd);
  }

  /** A complexity tier could not be computed (the request went on without one); logged at most once a minute. */
  complexityFailed(stage: "warmup" | "request", error: unknown): void {
    const now = Date.now();
    if (now - this.complexityErrorLoggedAt < RULE_ERROR_LOG_INTERVAL_MS) return;
    this.complexityErrorLoggedAt = now;
    this.logger.warn(
      { stage, error: error instanceof Error ? error.message : String(error) },
      stage === "warmup"
        ? "routing.complexity: embedding the examples failed; the next request that needs a tier tries again"
        : "routing.complexity: no complexity tier for a request (rules reading complexity_tier saw \"\"); logged at most once a minute",
    );
  }

  ruleFailed(ruleId: string, ruleName: string, error: Error, logTrace?: TraceIdSource): void {
    // A condition that fails on most requests (a header most callers omit) must not flood the log.
    const now = Date.now();
    const last = this.ruleErrorsLoggedAt.get(ruleId);
    if (last !== undefined && now - last < RULE_ERROR_LOG_INTERVAL_MS) return;
    this.ruleErrorsLoggedAt.set(ruleId, now);
    this.logger.warn(
      { ...logTrace?.ids(), routing_rule_id: ruleId, routing_rule_name: ruleName, error: error.message },
      "routing rule condition failed to evaluate and counted as no match (logged at most once a minute per rule)",
    );
  }
}
