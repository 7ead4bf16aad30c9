/**
 * Inference orchestration for chat completions, the Responses API, Anthropic's Messages API and embeddings,
 * entirely in memory (the database is never awaited here): resolve the caller's virtual key, route, then walk the targets (primary, then
 * fallbacks). A target whose provider has a call limit first takes one of its slots (waiting, or refused
 * when the buffer is full and client.drop_excess_requests is on). Within a target the keys are tried in
 * their weighted order while the upstream answers with a status that rotates keys; any other failure moves
 * on to the next target. When every target fails the primary's error is the answer. The caller's headers
 * that client.allowed_headers lets through go along on every upstream call. The call's method only picks
 * the adapter call (a provider without a Messages API of its own is served it through its chat calls) and
 * the `method` metric label (Messages counts as chat), so routing, rotation, fallbacks and metrics are one
 * code path for every API.
 */
import type { IncomingHttpHeaders } from "node:http";
import type { RuntimeSettings } from "../../config/runtime-settings.js";
import type { RequestAbort } from "../../cancellation.js";
import { GatewayError } from "../../errors.js";
import type { CallLimiter } from "../../providers/call-limiter.js";
import { bridgeMessages, bridgeMessagesStream } from "../../providers/messages-bridge/bridge.js";
import { estimateInputTokens } from "../../providers/messages-bridge/count.js";
import { ProviderError } from "../../providers/provider-error.js";
import { chunkFields } from "../../providers/raw-event.js";
import type {
  CallOptions,
  ChunkStream,
  ChatRequest,
  CountTokensRequest,
  EmbeddingsRequest,
  JsonObject,
  MessagesRequest,
  ProviderAdapter,
  ProviderResult,
  ProviderStream,
  ResponsesRequest,
  TokenUsage,
} from "../../providers/types.js";
import { balanceDirections } from "../../routing/adaptive-directions.js";
import { providerConfigOf, providerLimitError, routeRequest, type RoutingDecision, type RoutingRequest, type RulesInput } from "../../routing/governance-router.js";
import type { ComplexityResult } from "../../routing/complexity.js";
import type { RuleSubject } from "../../routing/routing-rules.js";
import { orderKeys, rotatesKey, type KeyChoice } from "../../routing/key-selection.js";
import { parseModelName } from "../../routing/model-name.js";
import { RoutingError } from "../../routing/routing-error.js";
import { moveToFront } from "../../routing/session-affinity.js";
import type { LevelExceeded, LevelOwner, WorstCase } from "../../routing/hierarchy.js";
import type { LimitHold } from "../../routing/limit-gate.js";
import type { ProviderConfig, RouteTarget, VirtualKey } from "../../routing/types.js";
import type { InferenceObserver } from "../../telemetry/inference-observer.js";
import type { BaseLabels, CustomLabelValues, InferenceMethod, RoutingEngine } from "../../telemetry/metrics.js";
import type { AttemptOutcome, AttemptSpan, TraceNode } from "../../telemetry/tracing.js";
import type { RequestScope } from "../context.js";
import { cacheRequestHeaders, type CacheRequestHeaders } from "./cache-settings-wire.js";
import { credentialFromHeaders } from "./credential.js";
import type { IdpTokens } from "../sso/idp-tokens.js";
import { HeaderForwarding } from "./forwarded-headers.js";
import type { CacheHit, CachePlan, CacheStatus, ResponseCache } from "./response-cache.js";
import { RelayedStream } from "./relayed-stream.js";
import { RoutingLogRecords, ruleVariables, sentHeaderNames } from "./rule-variables.js";
import type { ComplexityClassifier } from "./complexity-classifier.js";
import type { Inference, InferenceProvider } from "./state.js";
import { lazyWorstCase } from "./worst-case.js";
import { headerReader, headerValue } from "../../http-headers.js";

/** The inference APIs the service runs: chat completions, the Responses API, Anthropic's Messages API, or embeddings. */
export type CallMethod = "chat" | "responses" | "messages" | "embedding";

/** A validated request body with its method; a call without a method is a chat completion. */
export type MethodBody =
  | {
      method?: "chat";
      /** The request JSON; `model` is a non-empty string and `messages` an array. */
      body: ChatRequest;
    }
  | {
      method: "responses";
      /** The request JSON; `model` is a non-empty string and `input` a string or an array. */
      body: ResponsesRequest;
    }
  | {
      method: "messages";
      /** The Anthropic request JSON; `max_tokens` an integer and `messages` checked block by block. */
      body: MessagesRequest;
    }
  | {
      method: "embedding";
      /** The request JSON; `model` is a non-empty string, `input` checked, never streamed. */
      body: EmbeddingsRequest;
    };

/** One validated request as a /v1 handler hands it over. */
export type ChatCall = MethodBody & {
  /** The body as the client sent it, when `body` is that JSON (validated, unchanged); forwarded as is when the upstream would get the same JSON. */
  rawBody?: string;
  /**
   * The handler writes each stream chunk out as its text and reads no field (CallOptions.textOnlyChunks);
   * anything in between that reads a chunk's fields reads them through chunkFields.
   */
  textChunks?: boolean;
  headers: IncomingHttpHeaders;
  /** The request's path and query (routing rules read its query parameters); none outside an HTTP request. */
  url?: string;
  /** Aborted when the client goes away; aborts the upstream call. */
  signal: RequestAbort | AbortSignal;
  /** What the HTTP layer read from the request (dimension values, origin); none outside an HTTP request. */
  scope?: RequestScope;
};

/**
 * The answer: the complete JSON (a chat.completion or a response object), or the stream of events
 * (chat.completion.chunk objects, or Responses events each with a `type`).
 */
export type ChatOutcome = (
  | {
      kind: "json";
      body: JsonObject;
      /** `body` exactly as the upstream serialised it, when it is forwarded unchanged: sent as is, never re-encoded. */
      raw?: string;
    }
  | { kind: "stream"; chunks: ChunkStream }
) & {
  /** How the response cache served the request; absent when caching was off for it (the `x-gw-cache` header). */
  cache?: CacheStatus;
};

/** What the orchestration needs. */
export interface ChatDeps {
  inference: Inference;
  /** Hears every event of every request (telemetry's InferenceTelemetry records them). */
  observer: InferenceObserver;
  settings: RuntimeSettings;
  /** Computes `complexity_tier` for rules that read it; absent when `routing.complexity` is not configured. */
  complexity?: ComplexityClassifier;
  /** The response cache; none turns caching off (and the cache headers are then still checked). */
  cache?: ResponseCache;
  /** Tells an IdP bearer token (the caller's user identity) from a virtual key; absent: SSO off. */
  idp?: Pick<IdpTokens, "claimsIssuer">;
}

/** What is known of a request refused before it could run: its body may be unreadable or invalid. */
export interface RefusedCall {
  method: CallMethod;
  /** The body's `model`, whatever its type; labels the refusal when it is a string. */
  model: unknown;
  headers: IncomingHttpHeaders;
  scope?: RequestScope;
}

/** One Anthropic count_tokens request as the handler hands it over. */
export interface CountTokensCall {
  /** The request JSON; `model` is a non-empty string and `messages` checked. */
  body: CountTokensRequest;
  /** The body as the client sent it, forwarded as is when the upstream would get the same JSON. */
  rawBody?: string;
  headers: IncomingHttpHeaders;
  signal: RequestAbort | AbortSignal;
  /** What the HTTP layer read from the request; its trace gets the route and the upstream count's attempt. */
  scope?: RequestScope;
}

/** The entry point of the /v1 inference handlers. */
export interface ChatService {
  /** Runs one request; throws RoutingError, ProviderError or GatewayError with the status to answer. */
  complete(call: ChatCall): Promise<ChatOutcome>;
  /**
   * Counts a Messages request's input tokens `{input_tokens}` under the same key and routing as a request:
   * the routed provider counts when it can (Anthropic), else the gateway estimates. No budget is charged.
   */
  countTokens(call: CountTokensCall): Promise<JsonObject>;
  /** Counts a request refused before complete() ran it (a malformed body or header); `error.type` is the answer's error_type. */
  refuse(call: RefusedCall, error: GatewayError): void;
}

/** The request's session id: x-gw-session-id, else the MCP session header; "" without either. */
export function sessionIdOf(headers: IncomingHttpHeaders): string {
  return headerValue(headers, "x-gw-session-id") ?? headerValue(headers, "mcp-session-id") ?? "";
}

/** The credential the request carries, from the first header that has one; null when none. */
export function virtualKeyCredential(headers: IncomingHttpHeaders, idp?: Pick<IdpTokens, "claimsIssuer">): string | null {
  return credentialFromHeaders(headerReader(headers), idp ? (token) => idp.claimsIssuer(token) : undefined);
}

/** The adapter's non-streaming call for the method, with the target's upstream model. */
function callAdapter(adapter: ProviderAdapter, call: MethodBody, model: string, options: CallOptions): Promise<ProviderResult> {
  if (call.method === "responses") return adapter.responses({ ...call.body, model }, options);
  if (call.method === "embedding") return adapter.embeddings({ ...call.body, model }, options);
  if (call.method === "messages") {
    const req = { ...call.body, model };
    return adapter.messages ? adapter.messages(req, options) : bridgeMessages(adapter, req, options);
  }
  return adapter.chat({ ...call.body, model }, options);
}

/** The adapter's streaming call for the method, with the target's upstream model. */
function streamAdapter(adapter: ProviderAdapter, call: MethodBody, model: string, options: CallOptions): Promise<ProviderStream> {
  if (call.method === "embedding") throw new GatewayError("invalid_argument", "embeddings do not stream", { type: "caller_invalid_request", httpStatus: 400, field: "stream" });
  if (call.method === "responses") return adapter.responsesStream({ ...call.body, model }, options);
  if (call.method === "messages") {
    const req = { ...call.body, model };
    return adapter.messagesStream ? adapter.messagesStream(req, options) : bridgeMessagesStream(adapter, req, options);
  }
  return adapter.chatStream({ ...call.body, model }, options);
}

/** The `method` label of a call: the Messages API is a chat API. */
function metricMethod(method: CallMethod | undefined): InferenceMethod {
  return method === "messages" || method === undefined ? "chat" : method;
}

/** Running facts of one request across its attempts. */
interface AttemptState {
  /** Key rotations plus fallback transitions so far. */
  retries: number;
  /** Labels of the latest attempt, for the final error. */
  lastLabels: BaseLabels | null;
  /** Milliseconds spent waiting on providers so far (every attempt), so overhead can exclude them. */
  upstreamMs: number;
}

/** One target's attempt context. */
interface TargetAttempt {
  method: InferenceMethod;
  virtualKey: VirtualKey | null;
  route: RouteInfo;
  target: RouteTarget;
  config: ProviderConfig | null;
  fallbackIndex: number;
  state: AttemptState;
  started: number;
  finishActive: () => void;
  /** The caller's headers that go upstream; undefined when none does. */
  forwarded: Readonly<Record<string, string>> | undefined;
  /** The key a routing rule pinned for this target; "" lets key selection choose. */
  pinnedKeyId: string;
  /** The request's session id for affinity; "" when it sent none. */
  sessionId: string;
  /** The room the request reserved in its key's budgets and rate limits; null without a virtual key. */
  hold: LimitHold | null;
}

/** What routing decided that the labels of every attempt carry. */
interface RouteInfo {
  engines: readonly RoutingEngine[];
  rule: { id: string; name: string } | null;
  team: LevelOwner | null;
  customer: LevelOwner | null;
  /** The request's complexity tier, when a rule in scope read it. */
  complexity: ComplexityResult | null;
}

/** Per-attempt facts for the base labels. */
interface Attempt {
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

function labels(virtualKey: VirtualKey | null, route: RouteInfo, attempt: Attempt): BaseLabels {
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
    ...(attempt.custom ? { custom: attempt.custom } : {}),
    ...(attempt.trace ? { logTrace: attempt.trace } : {}),
  };
}

/** What a request answered without an upstream call reserves against budgets and token limits. */
const SPENDS_NOTHING: WorstCase = { costUsd: 0, tokens: 0 };

const NO_ROUTE: RouteInfo = { engines: [], rule: null, team: null, customer: null, complexity: null };

const LIMIT_NAMES = { budget: "budget", requests: "request rate limit", tokens: "token rate limit" } as const;

/** The refusal of a request some level of the hierarchy has no room for, naming that level. */
function levelError(over: LevelExceeded): RoutingError {
  const { owner, limit } = over;
  const level = owner.level.replace("_", " ");
  const message = `${level} "${owner.id}" (${owner.name}) has used its ${LIMIT_NAMES[limit]}; wait for the window to reset or raise the limit`;
  return new RoutingError(limit === "budget" ? "policy_budget_exceeded" : "policy_rate_limited", message);
}

/**
 * A successful attempt's outcome with its token counts added to `out` (a bare 200 unless given, e.g. the
 * answerOutcome of a JSON answer). Built by assignment: spreading one partial object after another into a
 * literal leaves V8's fast path, and this runs on every traced answer.
 */
function usageOutcome(usage: TokenUsage | null, out: AttemptOutcome = { status: 200 }): AttemptOutcome {
  if (usage !== null) {
    out.inputTokens = usage.input_tokens;
    out.outputTokens = usage.output_tokens;
  }
  return out;
}

/** What routing is asked, built by assignment: a conditional spread inside the literal left V8's fast path on every request. */
function routingRequest(model: string, fallbacks: readonly string[] | undefined, virtualKey: VirtualKey | null, rules: RulesInput, integration: string | null): RoutingRequest {
  const request: RoutingRequest = { model, virtualKey, rules, integration };
  if (fallbacks) request.fallbacks = fallbacks;
  return request;
}

/** The response model, finish reasons and text of an answer (chat, Responses or Messages), for its attempt's span; an embedding's vectors are no text. */
function answerOutcome(body: JsonObject): AttemptOutcome {
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
function failureOutcome(err: unknown): AttemptOutcome {
  if (err instanceof ProviderError) return { status: err.upstreamStatus, errorType: err.errorType };
  return { status: null, errorType: asGatewayError(err).type };
}

/** The answer of a cache hit, replayed as the original answer went out. */
function hitOutcome(hit: CacheHit): ChatOutcome {
  if (hit.answer.kind === "json") return { kind: "json", body: hit.answer.body, raw: hit.answer.raw, cache: hit.status };
  return { kind: "stream", chunks: replay(hit.answer.events), cache: hit.status };
}

async function* replay(events: readonly JsonObject[]): AsyncGenerator<JsonObject> {
  yield* events;
}

/** Any thrown value as a GatewayError (an unexpected one is our own fault: 500). */
export function asGatewayError(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  return new GatewayError("internal", "internal error: the gateway log has the details", { type: "gateway_internal", httpStatus: 500, cause: err });
}

/** Creates the inference service (chat, responses and messages) over the in-memory inference state. */
export function createChatService(deps: ChatDeps): ChatService {
  const { inference, observer } = deps;
  const routingLogRecords = new RoutingLogRecords();
  // Compiled once per settings change, not per request.
  let forwarding = new HeaderForwarding(deps.settings.client.allowedHeaders);
  deps.settings.onChange((settings) => {
    forwarding = new HeaderForwarding(settings.client.allowedHeaders);
  });

  function resolveKey(headers: IncomingHttpHeaders): VirtualKey | null {
    const key = inference.virtualKeys.resolve(virtualKeyCredential(headers, deps.idp));
    if (key === null && deps.settings.client.enforceGovernance) {
      throw new GatewayError("unauthenticated", "this gateway requires a virtual key for inference (client.enforce_governance); send it as x-gw-vk, Authorization: Bearer or x-api-key", {
        type: "caller_virtual_key_required",
        httpStatus: 401,
      });
    }
    return key;
  }

  /** Prices an answer's usage, reports it, and charges it to the virtual key's budgets and limits. */
  function recordUsage(
    virtualKey: VirtualKey | null,
    config: ProviderConfig | null,
    base: BaseLabels,
    upstreamModel: string,
    usage: TokenUsage | null,
    hold: LimitHold | null,
  ): void {
    const input = usage?.input_tokens ?? 0;
    const output = usage?.output_tokens ?? 0;
    const mode = base.method === "responses" || base.method === "embedding" ? base.method : "chat";
    const cost = inference.prices.cost({ provider: base.provider, upstreamModel, alias: base.alias || null, mode }, { input_tokens: input, output_tokens: output });
    observer.usage(base, upstreamModel, input, output, cost);
    if (virtualKey !== null && config !== null) inference.limits.record(virtualKey.id, config, { costUsd: cost ?? 0, tokens: input + output });
    if (hold !== null) inference.gate.settle(hold, cost ?? 0, input + output, virtualKey !== null && config !== null ? { virtualKeyId: virtualKey.id, config } : null);
    else if (virtualKey !== null) inference.hierarchy.charge(virtualKey, cost ?? 0, input + output);
  }

  function ruleSubject(virtualKey: VirtualKey | null): RuleSubject {
    const members = virtualKey === null ? null : inference.hierarchy.membership(virtualKey);
    return { virtualKeyId: virtualKey?.id ?? "", teamId: members?.team?.id ?? "", customerId: members?.customer?.id ?? "" };
  }

  /**
   * The request's complexity tier when a routing rule in scope reads `complexity_tier` (null otherwise, and
   * then nothing is computed); `skipped` when `routing.complexity` is not configured.
   */
  function complexityOf(call: ChatCall, virtualKey: VirtualKey | null, sessionId: string): Promise<ComplexityResult> | ComplexityResult | null {
    if (!inference.routingRules.needsComplexity(ruleSubject(virtualKey))) return null;
    if (deps.complexity === undefined) return { tier: "", mechanism: "skipped" };
    return deps.complexity.classify(call.body, sessionId, call.signal);
  }

  function rulesOf(call: ChatCall, method: InferenceMethod, virtualKey: VirtualKey | null, complexity: ComplexityResult | null): RulesInput {
    let sent: ReadonlySet<string> | null = null;
    return {
      set: inference.routingRules,
      subject: ruleSubject(virtualKey),
      vars: (provider, model) => ruleVariables(call, method, virtualKey, provider, model, inference, complexity?.tier ?? ""),
      // The names as the `headers` variable has them: lowercase, sent with a value.
      headerNames: () => (sent ??= sentHeaderNames(call.headers)),
      onError: ({ rule, error }) => observer.ruleFailed(rule.id, rule.name, error, call.scope?.trace),
    };
  }

  /** Level 1 of adaptive load balancing over governance's decision; the `loadbalancing` engine is added when it changed the primary. */
  function balance(decision: RoutingDecision, virtualKey: VirtualKey | null): RoutingDecision {
    const configured = virtualKey !== null && virtualKey.providerConfigs.length > 0;
    // A catalog-resolved request asks for the bare model; each provider then gets its own id for it.
    const model = decision.catalog?.model ?? decision.primary.model;
    const result = balanceDirections({
      primary: decision.primary,
      fallbacks: decision.fallbacks,
      pinned: !decision.enginesUsed.includes("model-catalog"),
      candidates: () => inference.catalog.providersOf(model),
      allowed: (provider) => !configured || providerConfigOf(virtualKey, provider) !== null,
      health: inference.routeHealth,
      toggles: deps.settings.loadBalancer,
      random: inference.random,
    });
    if (!result.changed) return decision;
    const moved = result.primary !== decision.primary;
    const idOf = (target: RouteTarget): RouteTarget =>
      decision.catalog === undefined || target.model !== decision.primary.model ? target : { provider: target.provider, model: inference.catalog.idAt(target.provider, model) };
    return {
      ...decision,
      primary: idOf(result.primary),
      fallbacks: result.fallbacks.map(idOf),
      enginesUsed: moved ? [...decision.enginesUsed, "loadbalancing"] : decision.enginesUsed,
      // A key pinned by a rule belongs to the rule's provider.
      pinnedKeyId: moved ? "" : decision.pinnedKeyId,
    };
  }

  /** Session affinity: the provider that last served the session goes first, unless the request names its provider. */
  function withAffinity(decision: RoutingDecision, sessionId: string, model: string): RoutingDecision {
    if (sessionId === "") return decision;
    const last = inference.affinity.get(sessionId);
    if (last === null || last.provider === decision.primary.provider) return decision;
    if (parseModelName(model, (name) => inference.catalog.isProvider(name)).provider !== null) return decision;
    const targets = moveToFront([decision.primary, ...decision.fallbacks], (target) => target.provider === last.provider);
    const [primary, ...fallbacks] = targets;
    if (primary === undefined || primary === decision.primary) return decision;
    return { ...decision, primary, fallbacks, pinnedKeyId: "" };
  }

  async function complete(call: ChatCall): Promise<ChatOutcome> {
    const started = performance.now();
    const method = metricMethod(call.method);
    const custom = call.scope?.dims.metricValues;
    const rawFallbacks = call.body["fallbacks"];
    const fallbacks = Array.isArray(rawFallbacks) ? rawFallbacks.filter((f): f is string => typeof f === "string") : undefined;
    let virtualKey: VirtualKey | null = null;
    let decision: RoutingDecision;
    let complexity: ComplexityResult | null = null;
    let plan: CachePlan | null = null;
    let hold: LimitHold | null = null;
    // The answer the cache holds in memory for the request, found before any reservation.
    let remembered: CacheHit | null = null;
    const sessionId = sessionIdOf(call.headers);
    try {
      const cacheHeaders = cacheRequestHeaders(headerReader(call.headers));
      virtualKey = resolveKey(call.headers);
      if (virtualKey !== null && virtualKey.isActive) {
        const over = inference.hierarchy.exceeded(virtualKey);
        if (over !== null) throw levelError(over);
      }
      // Awaited only when a rule needs a tier: most requests need none, and an await is a turn of the microtask queue.
      const classifying = complexityOf(call, virtualKey, sessionId);
      complexity = classifying instanceof Promise ? await classifying : classifying;
      decision = routeRequest(
        routingRequest(call.body.model, fallbacks, virtualKey, rulesOf(call, method, virtualKey, complexity), call.method === "messages" ? "anthropic" : null),
        { catalog: inference.catalog, limits: inference.limits, random: inference.random },
      );
      decision = withAffinity(balance(decision, virtualKey), sessionId, call.body.model);
      plan = cachePlan(call, decision, virtualKey, cacheHeaders);
      observer.routed(Date.now(), routingLogRecords.recordOf(call.body.model, decision, virtualKey), call.scope?.trace);
      remembered = plan === null || deps.cache === undefined ? null : deps.cache.recall(plan);
      if (virtualKey !== null) {
        // Reserved before any upstream call, so concurrent requests (on any node) cannot all take the last room.
        // An answer memory holds spends nothing: it reserves only its place in the request rate limits.
        const mode = method === "responses" || method === "embedding" ? method : "chat";
        const primaryConfig = providerConfigOf(virtualKey, decision.primary.provider);
        const worst = remembered !== null ? SPENDS_NOTHING : lazyWorstCase(call.body, mode, decision.primary, inference.prices, call.rawBody);
        const reserving = inference.gate.reserve(virtualKey, worst, primaryConfig);
        const reserved = reserving instanceof Promise ? await reserving : reserving;
        if ("owner" in reserved) throw levelError(reserved);
        if ("config" in reserved) throw providerLimitError(virtualKey, [reserved.limit], decision.primary.model);
        hold = reserved;
      }
    } catch (err) {
      const error = asGatewayError(err);
      observer.refused(refusalLabels(method, custom, call.body.model, virtualKey), error);
      throw error;
    }

    const trace = call.scope?.trace;
    if (trace !== undefined) {
      if (virtualKey !== null) trace.virtualKey(virtualKey.id, virtualKey.name);
      trace.route({ provider: decision.primary.provider, model: decision.primary.model, fallbacks: decision.fallbacks.length, engines: decision.enginesUsed });
    }
    const cache = deps.cache;
    if (plan !== null && cache !== undefined) {
      const hit = remembered ?? (await cache.lookup(plan, call.signal));
      if (hit !== null) {
        // A hit calls no provider and spends nothing: only the hit itself is counted.
        const members = virtualKey === null ? null : inference.hierarchy.membership(virtualKey);
        const route: RouteInfo = { engines: decision.enginesUsed, rule: decision.rule, team: members?.team ?? null, customer: members?.customer ?? null, complexity };
        const cacheType = hit.status === "hit-direct" ? "direct" : "semantic";
        trace?.routeCacheHit(cacheType);
        observer.cacheHit(labels(virtualKey, route, { method, custom, target: decision.primary, choice: null, fallbackIndex: 0, retried: false, trace }), cacheType);
        if (hold !== null) inference.gate.settle(hold, 0, 0);
        return hitOutcome(hit);
      }
    }
    observer.started(method, custom);
    let activeDone = false;
    const finishActive = (): void => {
      if (activeDone) return;
      activeDone = true;
      observer.ended(method, custom);
    };
    try {
      const outcome = await attemptAll(call, method, virtualKey, decision, started, finishActive, sessionId, complexity, hold);
      if (outcome.kind === "json") finishActive();
      return plan === null || cache === undefined ? outcome : cacheAnswer(cache, plan, outcome);
    } catch (err) {
      finishActive();
      // No upstream answered: the request spends nothing beyond its count.
      if (hold !== null) inference.gate.settle(hold, 0, 0);
      throw err;
    }
  }

  /**
   * What the cache does for the request: null when caching is off for it or its API is not cached.
   * Asking for semantic caching where it cannot run is refused; a key's semantic setting then works as direct.
   */
  function cachePlan(call: ChatCall, decision: RoutingDecision, virtualKey: VirtualKey | null, headers: CacheRequestHeaders): CachePlan | null {
    const cache = deps.cache;
    if (headers.mode === "semantic" && cache?.semanticProblem) {
      throw new GatewayError("invalid_argument", `x-gw-cache: ${cache.semanticProblem}; send x-gw-cache: direct instead`, { type: "caller_invalid_request", httpStatus: 400, field: "x-gw-cache" });
    }
    if (cache === undefined || call.method === "embedding") return null;
    const plan = cache.plan({ method: call.method ?? "chat", provider: decision.primary.provider, model: decision.primary.model, body: call.body }, virtualKey, headers, call.rawBody);
    if (plan !== null && plan.mode === "semantic" && cache.semanticProblem !== null) return { ...plan, mode: "direct", semantic: null };
    return plan;
  }

  /** Caches a fresh answer: a JSON answer at once, a stream once it has ended well. */
  function cacheAnswer(cache: ResponseCache, plan: CachePlan, outcome: ChatOutcome): ChatOutcome {
    if (outcome.kind === "json") {
      cache.store(plan, { kind: "json", body: outcome.body, raw: outcome.raw ?? JSON.stringify(outcome.body) });
      return { ...outcome, cache: "miss" };
    }
    return { kind: "stream", chunks: recordStream(cache, plan, outcome.chunks), cache: "miss" };
  }

  /** Passes a stream through and caches its events when it completes; a failed or abandoned stream is not cached. */
  async function* recordStream(cache: ResponseCache, plan: CachePlan, chunks: AsyncIterable<JsonObject>): AsyncGenerator<JsonObject> {
    const events: JsonObject[] = [];
    // A chunk whose text is not JSON reached the caller as sent; an answer holding one is not kept.
    let whole = true;
    for await (const chunk of chunks) {
      const fields = chunkFields(chunk);
      if (fields === null) whole = false;
      else events.push(fields);
      yield chunk;
    }
    if (whole) cache.store(plan, { kind: "stream", events });
  }

  function refusalLabels(method: InferenceMethod, custom: CustomLabelValues | undefined, model: string, virtualKey: VirtualKey | null): BaseLabels {
    let target: RouteTarget = { provider: "", model };
    try {
      const parsed = parseModelName(model, (name) => inference.catalog.isProvider(name));
      target = { provider: parsed.provider ?? "", model: parsed.model };
    } catch {
      // A malformed model keeps its raw text in the label.
    }
    return labels(virtualKey, NO_ROUTE, { method, custom, target, choice: null, fallbackIndex: 0, retried: false });
  }

  async function attemptAll(
    call: ChatCall,
    method: InferenceMethod,
    virtualKey: VirtualKey | null,
    decision: RoutingDecision,
    started: number,
    finishActive: () => void,
    sessionId: string,
    complexity: ComplexityResult | null,
    hold: LimitHold | null,
  ): Promise<ChatOutcome> {
    const members = virtualKey === null ? null : inference.hierarchy.membership(virtualKey);
    const route: RouteInfo = { engines: decision.enginesUsed, rule: decision.rule, team: members?.team ?? null, customer: members?.customer ?? null, complexity };
    const custom = call.scope?.dims.metricValues;
    const targets = [decision.primary, ...decision.fallbacks];
    let primaryError: GatewayError | null = null;
    const state: AttemptState = { retries: 0, lastLabels: null, upstreamMs: 0 };
    const forwarded = forwarding.pick(call.headers);
    for (const [fallbackIndex, target] of targets.entries()) {
      const config = virtualKey === null ? null : providerConfigOf(virtualKey, target.provider);
      let targetError: GatewayError;
      try {
        const pinnedKeyId = fallbackIndex === 0 && decision.pinnedKeyId !== "" ? decision.pinnedKeyId : (target.keyId ?? "");
        return await attemptTarget(call, { method, virtualKey, route, target, config, fallbackIndex, state, started, finishActive, forwarded, pinnedKeyId, sessionId, hold });
      } catch (err) {
        if (call.signal.aborted) throw err;
        targetError = asGatewayError(err);
        const next = targets[fallbackIndex + 1];
        state.lastLabels ??= labels(virtualKey, route, { method, custom, target, choice: null, fallbackIndex, retried: false, trace: call.scope?.trace });
        observer.targetFailed(state.lastLabels, targetError, err, next);
        if (next !== undefined) state.retries++;
      }
      primaryError ??= targetError;
    }
    const error = primaryError ?? new GatewayError("internal", "no provider target was tried", { type: "gateway_internal", httpStatus: 500 });
    const base = state.lastLabels ?? labels(virtualKey, route, { method, custom, target: decision.primary, choice: null, fallbackIndex: 0, retried: false, trace: call.scope?.trace });
    observer.final(base, state.retries, error);
    throw error;
  }

  /** The options of one upstream call with the key `choice` picked. */
  function callOptions(
    call: { body: { model: string }; rawBody?: string | undefined; textChunks?: boolean | undefined; signal: RequestAbort | AbortSignal },
    provider: InferenceProvider,
    providerName: string,
    choice: KeyChoice,
    forwarded: Readonly<Record<string, string>> | undefined,
    span: AttemptSpan | undefined,
  ): CallOptions {
    // Routing hands back the same key objects it was given; the lookup recovers the secret-bearing type.
    const key = provider.keys.find((candidate) => candidate.id === choice.key.id);
    if (key === undefined) throw new GatewayError("internal", `key ${choice.key.id} of ${providerName} vanished`, { type: "gateway_internal", httpStatus: 500 });
    const options: CallOptions = { key, signal: call.signal, idleTimeoutMs: provider.idleTimeoutMs, maxResponseBytes: provider.maxResponseBytes };
    if (forwarded !== undefined) options.headers = forwarded;
    // The upstream continues the caller's trace under this attempt's span.
    if (span !== undefined) options.headers = { ...forwarded, traceparent: span.traceparent() };
    // The client's own bytes may go upstream only when the model is not rewritten.
    if (call.rawBody !== undefined && call.rawBody !== "" && choice.upstreamModel === call.body.model) options.rawBody = call.rawBody;
    if (call.textChunks === true) options.textOnlyChunks = true;
    const timeoutMs = provider.timeoutMs ?? inference.upstreamTimeoutMs;
    if (timeoutMs !== undefined) options.timeoutMs = timeoutMs;
    return options;
  }

  /** The provider a target names; a routing error when it is not configured. */
  function providerOf(target: RouteTarget): InferenceProvider {
    const provider = inference.providers.get(target.provider);
    if (provider !== undefined) return provider;
    throw new RoutingError(
      "caller_provider_not_configured",
      `provider "${target.provider}" is not configured on this gateway; add it under providers or pick another provider`,
      "model",
    );
  }

  /**
   * One target's attempt. Not itself async: without a concurrency limit it hands back the keys' loop's own
   * promise, where an async function would wrap it in another (and a throw here reaches the caller's
   * try as a rejection would).
   */
  function attemptTarget(call: ChatCall, at: TargetAttempt): Promise<ChatOutcome> {
    const { target, state } = at;
    // A failure before a key is chosen gets this target's labels in attemptAll; the keys' loop sets its own.
    state.lastLabels = null;
    const provider = providerOf(target);
    const limiter = provider.limiter;
    if (limiter === null) return attemptKeys(call, at, provider, null);
    return attemptLimited(call, at, provider, limiter);
  }

  /** A target's attempt within its provider's concurrency limit. */
  async function attemptLimited(call: ChatCall, at: TargetAttempt, provider: InferenceProvider, limiter: CallLimiter): Promise<ChatOutcome> {
    const wait = limiter.acquire(call.signal, deps.settings.client.dropExcessRequests);
    if (wait !== null) await wait;
    let outcome: ChatOutcome;
    try {
      outcome = await attemptKeys(call, at, provider, limiter);
    } catch (err) {
      limiter.release();
      throw err;
    }
    // A stream keeps its slot until it ends or its client leaves; its relay gives it back.
    if (outcome.kind === "json") limiter.release();
    return outcome;
  }

  /** The target's keys in their weighted order, rotating on the statuses that call for another key. */
  async function attemptKeys(call: ChatCall, at: TargetAttempt, provider: InferenceProvider, limiter: CallLimiter | null): Promise<ChatOutcome> {
    const { method, virtualKey, route, target, config, fallbackIndex, state, started, finishActive, forwarded, pinnedKeyId, sessionId, hold } = at;
    const custom = call.scope?.dims.metricValues;
    const ordered = orderKeys({
      provider: target.provider,
      model: target.model,
      keys: provider.keys,
      config,
      catalog: inference.catalog,
      random: inference.random,
      // A key a routing rule pins is used whatever its health: the rule decides.
      ...(deps.settings.loadBalancer.routeSelectionEnabled && pinnedKeyId === "" ? { health: inference.routeHealth } : {}),
      ...(pinnedKeyId === "" ? { backoffs: inference.keyBackoffs } : {}),
    });
    const choices = pinnedKeyId === "" ? reuseSessionKey(ordered, sessionId, target.provider) : ordered.filter((choice) => choice.key.id === pinnedKeyId);
    if (choices.length === 0) {
      throw new RoutingError(
        "policy_keys_blocked",
        `routing rule "${route.rule?.name ?? ""}" pins key "${pinnedKeyId}" of provider "${target.provider}", which cannot serve model "${target.model}" for this request; fix the rule's key_id`,
      );
    }
    for (const [index, choice] of choices.entries()) {
      const base = labels(virtualKey, route, { method, custom, target, choice, fallbackIndex, retried: index > 0, trace: call.scope?.trace });
      state.lastLabels = base;
      const span = call.scope?.trace?.attempt({
        operation: call.method === "embedding" ? "embeddings" : "chat",
        provider: target.provider,
        requestModel: choice.upstreamModel,
        keyId: choice.key.id,
        fallbackIndex,
        retryIndex: index,
        stream: call.body.stream === true,
        prompt: call.method === "responses" || call.method === "embedding" ? call.body.input : call.body.messages,
      });
      const options = callOptions(call, provider, target.provider, choice, forwarded, span);
      observer.attemptStarted(base);
      const attemptStarted = performance.now();
      try {
        if (call.body.stream === true) {
          const stream = await streamAdapter(provider.adapter, call, choice.upstreamModel, options);
          const headersAt = performance.now();
          // A stream's overhead is the gateway's share of the time to its response headers.
          observer.attemptSucceeded(base, (headersAt - attemptStarted) / 1000, (headersAt - started - state.upstreamMs - (headersAt - attemptStarted)) * 1000);
          const retries = state.retries;
          const streamStarted = attemptStarted;
          if (sessionId !== "") inference.affinity.remember(sessionId, target.provider, choice.key.id);
          const chunks = new RelayedStream(
            stream,
            (usage, err) => {
              limiter?.release();
              finishActive();
              const error = err === null ? null : asGatewayError(err);
              observer.final(base, retries, error);
              recordStreamOutcome(target.provider, choice.key.id, performance.now() - streamStarted, usage, err);
              recordUsage(virtualKey, config, base, choice.upstreamModel, usage, hold);
              if (span !== undefined) {
                const outcome = usageOutcome(usage);
                if (error !== null) outcome.errorType = error.type;
                span.end(outcome);
              }
            },
            observer,
            base,
            started,
            span,
          );
          return { kind: "stream", chunks };
        }
        const result = await callAdapter(provider.adapter, call, choice.upstreamModel, options);
        const answeredAt = performance.now();
        observer.attemptSucceeded(base, (answeredAt - attemptStarted) / 1000, (answeredAt - started - state.upstreamMs - (answeredAt - attemptStarted)) * 1000);
        observer.final(base, state.retries, null);
        inference.routeHealth.recordSuccess(target.provider, choice.key.id, answeredAt - attemptStarted, result.usage?.output_tokens ?? 0);
        if (sessionId !== "") inference.affinity.remember(sessionId, target.provider, choice.key.id);
        recordUsage(virtualKey, config, base, choice.upstreamModel, result.usage, hold);
        span?.end(usageOutcome(result.usage, answerOutcome(result.body)));
        return result.raw === undefined ? { kind: "json", body: result.body } : { kind: "json", body: result.body, raw: result.raw };
      } catch (err) {
        span?.end(failureOutcome(err));
        if (call.signal.aborted) throw err;
        const failedAfterMs = performance.now() - attemptStarted;
        state.upstreamMs += failedAfterMs;
        observer.attemptFailed(base, failedAfterMs / 1000, err instanceof ProviderError ? err.upstreamStatus : null);
        recordFailure(target.provider, choice.key.id, err);
        if (err instanceof ProviderError && err.upstreamStatus === 429 && err.retryAfterMs !== null) inference.keyBackoffs.backOff(target.provider, choice.key.id, err.retryAfterMs);
        const next = choices[index + 1];
        if (err instanceof ProviderError && err.rotateKey && next !== undefined) {
          state.retries++;
          observer.keyRotated(base, String(err.upstreamStatus ?? err.errorType), err.upstreamStatus, next.key.id);
          continue;
        }
        throw err;
      }
    }
    // orderKeys never returns an empty list; this keeps the compiler and a future change honest.
    throw new GatewayError("internal", `no key of provider ${target.provider} was tried`, { type: "gateway_internal", httpStatus: 500 });
  }

  /** The key that last served the session first, while it is still among the keys to try. */
  function reuseSessionKey(ordered: readonly KeyChoice[], sessionId: string, provider: string): readonly KeyChoice[] {
    if (sessionId === "") return ordered;
    const last = inference.affinity.get(sessionId);
    if (last === null || last.provider !== provider) return ordered;
    return moveToFront(ordered, (choice) => choice.key.id === last.keyId);
  }

  /** Feeds a failed attempt to the route statistics when it says something about the route, not the caller. */
  function recordFailure(provider: string, keyId: string, err: unknown): void {
    if (!(err instanceof ProviderError)) return;
    const status = err.upstreamStatus;
    if (status !== null && status < 500 && !rotatesKey(status)) return;
    inference.routeHealth.recordFailure(provider, keyId, status === 429);
  }

  /** Feeds a finished stream to the route statistics; a client that left says nothing about the route. */
  function recordStreamOutcome(provider: string, keyId: string, latencyMs: number, usage: TokenUsage | null, err: unknown): void {
    if (err === null) inference.routeHealth.recordSuccess(provider, keyId, latencyMs, usage?.output_tokens ?? 0);
    else recordFailure(provider, keyId, err);
  }

  async function countTokens(call: CountTokensCall): Promise<JsonObject> {
    const virtualKey = resolveKey(call.headers);
    const decision = routeRequest({ model: call.body.model, virtualKey }, { catalog: inference.catalog, limits: inference.limits, random: inference.random });
    const target = decision.primary;
    const trace = call.scope?.trace;
    if (trace !== undefined) {
      if (virtualKey !== null) trace.virtualKey(virtualKey.id, virtualKey.name);
      trace.route({ provider: target.provider, model: target.model, fallbacks: decision.fallbacks.length, engines: decision.enginesUsed });
    }
    const provider = providerOf(target);
    const count = provider.adapter.countTokens;
    if (count === undefined) return estimateInputTokens({ ...call.body, model: target.model });
    const config = virtualKey === null ? null : providerConfigOf(virtualKey, target.provider);
    const [choice] = orderKeys({ provider: target.provider, model: target.model, keys: provider.keys, config, catalog: inference.catalog, random: inference.random });
    if (choice === undefined) throw new GatewayError("internal", `no key of provider ${target.provider} to count tokens with`, { type: "gateway_internal", httpStatus: 500 });
    const span = trace?.attempt({
      operation: "chat",
      provider: target.provider,
      requestModel: choice.upstreamModel,
      keyId: choice.key.id,
      fallbackIndex: 0,
      retryIndex: 0,
      stream: false,
      prompt: call.body.messages,
    });
    const options = callOptions(call, provider, target.provider, choice, forwarding.pick(call.headers), span);
    try {
      const counted = await count.call(provider.adapter, { ...call.body, model: choice.upstreamModel }, options);
      const inputTokens = counted["input_tokens"];
      span?.end({ status: 200, ...(typeof inputTokens === "number" ? { inputTokens } : {}) });
      return counted;
    } catch (err) {
      span?.end(failureOutcome(err));
      throw err;
    }
  }

  function refuse(call: RefusedCall, error: GatewayError): void {
    const virtualKey = inference.virtualKeys.resolve(virtualKeyCredential(call.headers, deps.idp));
    const model = typeof call.model === "string" ? call.model : "";
    observer.refused(refusalLabels(metricMethod(call.method), call.scope?.dims.metricValues, model, virtualKey), error);
  }

  return { complete, countTokens, refuse };
}
