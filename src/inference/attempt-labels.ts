/**
 * What an attempt reports: the metric and log labels every event of it carries, and the outcome its span
 * ends with.
 */
import { ProviderError } from "../providers/provider-error.js";
import type { JsonObject, TokenUsage } from "../providers/types.js";
import type { KeyChoice } from "../routing/key-selection.js";
import type { RouteTarget, VirtualKey } from "../routing/types.js";
import type { BaseLabels, CustomLabelValues, InferenceMethod } from "../telemetry/metrics.js";
import type { AttemptOutcome, TraceNode } from "../telemetry/tracing.js";
import { asGatewayError } from "./calls.js";
import type { RouteInfo } from "./request-context.js";

/** Per-attempt facts for the base labels. */
export interface Attempt {
  method: InferenceMethod;
  /** The request's dimension values for the custom labels. */
  custom: CustomLabelValues | undefined;
  target: RouteTarget;
  choice: KeyChoice | null;
  fallbackIndex: number;
  retried: boolean;
  /** The request's span when it is traced: its ids go on log lines. */
  trace?: TraceNode | undefined;
}

/** The labels of one attempt (or of a request that never reached one). */
export function labels(virtualKey: VirtualKey | null, route: RouteInfo, attempt: Attempt): BaseLabels {
  // Every property is always present (undefined when absent): one object shape whether or not the request
  // is traced or has dimensions, where spread-in optional properties gave each combination a shape of its
  // own and left the literal off V8's fast path.
  // "core" in routing_engine_used marks a fallback or retry transition.
  const used = attempt.fallbackIndex > 0 || attempt.retried ? [...route.engines, "core" as const] : route.engines;
  return {
    provider: attempt.target.provider,
    model: attempt.target.model,
    method: attempt.method,
    alias: attempt.choice?.alias ?? "",
    virtualKeyId: virtualKey?.id ?? "",
    virtualKeyName: virtualKey?.name ?? "",
    routingEngineUsed: used,
    routingRuleId: route.rule?.id ?? "",
    routingRuleName: route.rule?.name ?? "",
    teamId: route.team?.id ?? "",
    teamName: route.team?.name ?? "",
    customerId: route.customer?.id ?? "",
    customerName: route.customer?.name ?? "",
    complexityTier: route.complexity?.tier ?? "",
    complexityMechanism: route.complexity?.mechanism ?? "",
    selectedKeyId: attempt.choice?.key.id ?? "",
    selectedKeyName: attempt.choice?.key.name ?? "",
    fallbackIndex: attempt.fallbackIndex,
    custom: attempt.custom,
    logTrace: attempt.trace,
  };
}

/**
 * A successful attempt's outcome with its token counts added to `out` (a bare 200 unless given, e.g. the
 * answerOutcome of a JSON answer). Built by assignment: spreading one partial object after another into a
 * literal leaves V8's fast path, and this runs on every traced answer.
 */
export function usageOutcome(usage: TokenUsage | null, out: AttemptOutcome = { status: 200 }): AttemptOutcome {
  if (usage !== null) {
    out.inputTokens = usage.input_tokens;
    out.outputTokens = usage.output_tokens;
  }
  return out;
}

/** The response model, finish reasons and text of an answer (chat, Responses or Messages), for its attempt's span; an embedding's vectors are no text. */
export function answerOutcome(body: JsonObject): AttemptOutcome {
  const out: AttemptOutcome = { status: 200, completion: body["choices"] ?? body["output"] ?? body["content"] };
  if (typeof body["model"] === "string") out.responseModel = body["model"];
  const choices = body["choices"];
  if (Array.isArray(choices)) {
    // A plain loop: this runs on every traced answer.
    const reasons: string[] = [];
    for (const choice of choices) {
      const reason = choice !== null && typeof choice === "object" ? (choice as JsonObject)["finish_reason"] : undefined;
      if (typeof reason === "string") reasons.push(reason);
    }
    out.finishReasons = reasons;
  } else if (typeof body["status"] === "string") out.finishReasons = [body["status"]];
  else if (typeof body["stop_reason"] === "string") out.finishReasons = [body["stop_reason"]];
  return out;
}

/** How a failed attempt ends its span: the upstream status when there was one, and the error type. */
export function failureOutcome(err: unknown): AttemptOutcome {
  if (err instanceof ProviderError) return { status: err.upstreamStatus, errorType: err.errorType };
  return { status: null, errorType: asGatewayError(err).type };
}
