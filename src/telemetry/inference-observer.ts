/**
 * The events the inference path and the agent loop report while they serve a request. The services
 * only say what happened; telemetry decides what becomes a metric or a log line (InferenceTelemetry).
 * Every method runs on the request path: arguments are values the caller already holds, so a report
 * allocates nothing, and no method throws.
 */
import type { GatewayError } from "../errors.js";
import type { BaseLabels, CacheType, CustomLabelValues, InferenceMethod } from "./metrics.js";
import type { RoutingLogRecord } from "./routing-log.js";
import type { TraceIdSource } from "./tracing.js";

/** The provider and model a request falls back to. */
export interface FallbackTarget {
  readonly provider: string;
  readonly model: string;
}

/** What the inference path reports. */
export interface InferenceObserver {
  /** A request refused before any provider was tried (no key, routing or policy, a malformed body). */
  refused(labels: BaseLabels, error: GatewayError): void;
  /** A routed request starts its attempts; `ended` follows exactly once with the same arguments. */
  started(method: InferenceMethod, custom: CustomLabelValues | undefined): void;
  /** A started request is over: answered, failed or abandoned by its client. */
  ended(method: InferenceMethod, custom: CustomLabelValues | undefined): void;
  /** One provider call goes out with the key of `labels`. */
  attemptStarted(labels: BaseLabels): void;
  /** One provider call answered (a stream: its headers) after `upstreamSeconds`; `overheadMicroseconds` is the gateway's own time so far. */
  attemptSucceeded(labels: BaseLabels, upstreamSeconds: number, overheadMicroseconds: number): void;
  /** One provider call failed after `upstreamSeconds`; `upstreamStatus` is null when the provider sent no HTTP status. */
  attemptFailed(labels: BaseLabels, upstreamSeconds: number, upstreamStatus: number | null): void;
  /** The key of `labels` failed with `failReason` (a status or an error type) and `nextKeyId` is tried next. */
  keyRotated(labels: BaseLabels, failReason: string, upstreamStatus: number | null, nextKeyId: string): void;
  /** Every key of a target failed with `error` (thrown as `cause`); `next` is the fallback tried next, if any. */
  targetFailed(labels: BaseLabels, error: GatewayError, cause: unknown, next: FallbackTarget | undefined): void;
  /** The first event of a stream, `seconds` after the request arrived. */
  firstToken(labels: BaseLabels, seconds: number): void;
  /** `count` later events of a stream arrived together, `seconds` after the one before them (each of the rest 0 s after it). */
  chunks(labels: BaseLabels, seconds: number, count: number): void;
  /** The outcome of a routed request, once: served when `error` is null; `retries` counts key rotations and fallbacks. */
  final(labels: BaseLabels, retries: number, error: GatewayError | null): void;
  /** A request answered from the response cache (no provider call, no usage). */
  cacheHit(labels: BaseLabels, cacheType: CacheType): void;
  /** Tokens and cost of a provider answer (a failed stream's too); `costUsd` is null when the model has no price. */
  usage(labels: BaseLabels, upstreamModel: string, inputTokens: number, outputTokens: number, costUsd: number | null): void;
  /** The agent loop ran the tool `name`; `failure` is what was thrown when it failed inside the gateway, else null. */
  toolCall(name: string, failure: unknown): void;
  /** The agent loop hands `pending` tool calls back to the caller after `depth` model calls with tool calls. */
  toolCallsReturned(depth: number, pending: number): void;
  /** A request was routed at `at` (ms since the epoch): one entry per routing decision. */
  routed(at: number, record: RoutingLogRecord, logTrace?: TraceIdSource): void;
  /** A routing rule's condition failed to evaluate for a request (it counted as no match). */
  ruleFailed(ruleId: string, ruleName: string, error: Error, logTrace?: TraceIdSource): void;
}
