/**
 * Request tracing on the OpenTelemetry API's types: the code paths build spans through TraceNode, whose
 * tracer (otlp-tracing.ts) exists only when tracing is configured. With tracing off (the default) there is
 * no Tracing at all: callers hold `undefined` and skip every span, so a request pays nothing. The span
 * context travels explicitly (a TraceNode in the request scope) rather than through an AsyncLocalStorage
 * context manager, whose promise hooks would cost every traced request a large share of its CPU time on
 * Node 20.
 */
import { SpanKind, SpanStatusCode, type Context, type TextMapPropagator } from "@opentelemetry/api";
import type { RecordingSpan, SpanStarter } from "./recording-tracer.js";
import { attributeKey } from "./span-attribute-keys.js";

/** A running tracer: what otlp-tracing.ts builds when tracing is configured. */
export interface Tracing {
  readonly tracer: SpanStarter;
  /** Reads and writes W3C traceparent / tracestate. */
  readonly propagator: TextMapPropagator;
  /** Prompt and completion text go on spans only when true. */
  readonly captureContent: boolean;
  /** The context of an incoming request's trace headers (the root context when it has none). */
  extract(headers: Readonly<Record<string, string | string[] | undefined>>): Context;
  /** Exports what is queued and stops; bounded in time, never throws. */
  shutdown(): Promise<void>;
}

/** The ids a log line written inside a traced request carries. */
export interface TraceIds {
  trace_id: string;
  span_id: string;
}

/** Where a log line gets its trace ids: asked only when the line is written, since writing ids as hex has a cost. */
export interface TraceIdSource {
  ids(): TraceIds;
}

/** The attribute keys the gateway's spans carry, held here so that setting one looks nothing up. */
const KEY = {
  operation: attributeKey("gen_ai.operation.name"),
  provider: attributeKey("gen_ai.provider.name"),
  requestModel: attributeKey("gen_ai.request.model"),
  responseModel: attributeKey("gen_ai.response.model"),
  inputTokens: attributeKey("gen_ai.usage.input_tokens"),
  outputTokens: attributeKey("gen_ai.usage.output_tokens"),
  finishReasons: attributeKey("gen_ai.response.finish_reasons"),
  inputMessages: attributeKey("gen_ai.input.messages"),
  outputMessages: attributeKey("gen_ai.output.messages"),
  toolName: attributeKey("gen_ai.tool.name"),
  toolArguments: attributeKey("gen_ai.tool.call.arguments"),
  keyId: attributeKey("gw.provider.key_id"),
  fallbackIndex: attributeKey("gw.fallback_index"),
  retryIndex: attributeKey("gw.retry_index"),
  stream: attributeKey("gw.stream"),
  status: attributeKey("http.response.status_code"),
  errorType: attributeKey("error.type"),
  method: attributeKey("http.request.method"),
  route: attributeKey("http.route"),
  virtualKeyId: attributeKey("gw.virtual_key.id"),
  virtualKeyName: attributeKey("gw.virtual_key.name"),
  routeProvider: attributeKey("gw.route.provider"),
  routeModel: attributeKey("gw.route.model"),
  routeFallbacks: attributeKey("gw.route.fallbacks"),
  routeEngines: attributeKey("gw.route.engines"),
  routeKeyId: attributeKey("gw.route.key_id"),
  routeCacheHit: attributeKey("gw.route.cache_hit"),
  guardrailId: attributeKey("gw.guardrail.id"),
  guardrailName: attributeKey("gw.guardrail.name"),
  guardrailType: attributeKey("gw.guardrail.type"),
  guardrailStage: attributeKey("gw.guardrail.stage"),
  guardrailResult: attributeKey("gw.guardrail.result"),
  iteration: attributeKey("gw.agent.iteration"),
  mcpMethod: attributeKey("mcp.method.name"),
  mcpClient: attributeKey("gw.mcp.client.name"),
  mcpAuthType: attributeKey("gw.mcp.auth_type"),
  mcpPrefixedName: attributeKey("gw.mcp.tool.prefixed_name"),
};

/** What the route decision span records. */
export interface RouteFacts {
  provider: string;
  model: string;
  /** Fallback targets after the primary. */
  fallbacks: number;
  /** Routing engines that decided (governance, ...). */
  engines: readonly string[];
}

/** What a client span of one upstream attempt starts with. */
export interface AttemptFacts {
  /** The GenAI operation: "chat" for chat completions and the Responses API alike. */
  operation: string;
  provider: string;
  requestModel: string;
  keyId: string;
  /** 0 for the primary target, n for the n-th fallback. */
  fallbackIndex: number;
  /** 0 for the target's first key, n after n key rotations. */
  retryIndex: number;
  stream: boolean;
  /** The request body; recorded only with capture_content. */
  prompt?: unknown;
}

/** How an attempt ended. */
export interface AttemptOutcome {
  status: number | null;
  errorType?: string;
  responseModel?: string;
  inputTokens?: number;
  outputTokens?: number;
  finishReasons?: string[];
  /** The answer; recorded only with capture_content. */
  completion?: unknown;
}

/** What a tool call span records (never a credential). */
export interface ToolFacts {
  tool: string;
  client: string;
  authType: string;
  /** The prefixed name the model or caller used. */
  name: string;
  args?: unknown;
}

function contentText(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value) ?? "";
}

/** A span that ends once, with the outcome of the work it covers. */
export class AttemptSpan {
  private ended = false;
  private firstTokenSeen = false;

  constructor(
    private readonly span: RecordingSpan,
    private readonly captureContent: boolean,
  ) {}

  /** The traceparent upstream servers continue. */
  traceparent(): string {
    return this.span.traceparent();
  }

  /** Marks the first event of a stream. */
  firstToken(): void {
    if (this.firstTokenSeen) return;
    this.firstTokenSeen = true;
    this.span.addEvent("gen_ai.first_token");
  }

  /** Ends the span with `outcome`; later calls change nothing. */
  end(outcome: AttemptOutcome): void {
    if (this.ended) return;
    this.ended = true;
    const span = this.span;
    if (outcome.status !== null) span.set(KEY.status, outcome.status);
    if (outcome.responseModel) span.set(KEY.responseModel, outcome.responseModel);
    if (outcome.inputTokens !== undefined) span.set(KEY.inputTokens, outcome.inputTokens);
    if (outcome.outputTokens !== undefined) span.set(KEY.outputTokens, outcome.outputTokens);
    if (outcome.finishReasons && outcome.finishReasons.length > 0) span.set(KEY.finishReasons, outcome.finishReasons);
    if (this.captureContent && outcome.completion !== undefined) span.set(KEY.outputMessages, contentText(outcome.completion));
    if (outcome.errorType !== undefined) {
      span.set(KEY.errorType, outcome.errorType);
      span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.errorType });
    }
    span.end();
  }
}

/** What a guardrail check's span records: which guardrail looked at which stage, never the content. */
export interface GuardrailCheckFacts {
  id: string;
  name: string;
  /** The check type (pii, webhook, ...). */
  type: string;
  stage: string;
  /** The check calls a service (a CLIENT span) rather than scanning in-process (INTERNAL). */
  callsOut: boolean;
}

/** A guardrail check's span; `end` records its result once. */
export class GuardrailSpan {
  private ended = false;

  constructor(private readonly span: RecordingSpan) {}

  /** Ends the span with the check's result (pass, block, redact, warn, error) and, for a failed check, why. */
  end(result: string, errorType?: string): void {
    if (this.ended) return;
    this.ended = true;
    this.span.set(KEY.guardrailResult, result);
    if (errorType !== undefined) {
      this.span.set(KEY.errorType, errorType);
      this.span.setStatus({ code: SpanStatusCode.ERROR, message: errorType });
    }
    this.span.end();
  }
}

/**
 * A span that can parent others: the request's SERVER span, or an agent-mode iteration. Each node knows
 * the request's root, where request-wide facts (the virtual key) go.
 */
export class TraceNode {
  private readonly root: TraceNode;
  private logIds: TraceIds | undefined;
  /** The route decision's span until the key is chosen, which is routing's last step. */
  private openRoute: RecordingSpan | undefined;

  constructor(
    private readonly tracing: Tracing,
    readonly span: RecordingSpan,
    root?: TraceNode,
  ) {
    this.root = root ?? this;
  }

  private start(name: string, kind: SpanKind): RecordingSpan {
    return this.tracing.tracer.startChild(name, kind, this.span);
  }

  /** The traceparent of this span. */
  traceparent(): string {
    return this.span.traceparent();
  }

  /** The ids of this span, for the log lines written under it (one object, however often asked). */
  ids(): TraceIds {
    this.logIds ??= { trace_id: this.span.trace.hex, span_id: this.span.spanIdHex };
    return this.logIds;
  }

  /** Ends a node of its own (an iteration); the SERVER span ends through ServerTrace. */
  end(): void {
    this.endRoute();
    if (this.root !== this) this.span.end();
  }

  /** Records the request's virtual key (its id, never its value) on the SERVER span. */
  virtualKey(id: string, name: string): void {
    this.root.span.set(KEY.virtualKeyId, id).set(KEY.virtualKeyName, name);
  }

  /**
   * The route decision, as a span of its own. It stays open until the first attempt names the key it
   * chose (`gw.route.key_id`), a cache hit answers instead, or the request ends without an attempt.
   */
  route(facts: RouteFacts): void {
    this.endRoute();
    this.openRoute = this.start("route", SpanKind.INTERNAL)
      .set(KEY.routeProvider, facts.provider)
      .set(KEY.routeModel, facts.model)
      .set(KEY.routeFallbacks, facts.fallbacks)
      .set(KEY.routeEngines, [...facts.engines]);
  }

  /** Ends the route span with the cache's answer: no key is chosen for a hit. */
  routeCacheHit(cacheType: "direct" | "semantic"): void {
    this.openRoute?.set(KEY.routeCacheHit, cacheType);
    this.endRoute();
  }

  /** Ends the route span if it is still open. */
  endRoute(): void {
    const route = this.openRoute;
    if (route === undefined) return;
    this.openRoute = undefined;
    route.end();
  }

  /** One upstream attempt: a CLIENT span named by the GenAI conventions; retries and fallbacks are siblings. */
  attempt(facts: AttemptFacts): AttemptSpan {
    if (this.openRoute !== undefined) {
      this.openRoute.set(KEY.routeKeyId, facts.keyId);
      this.endRoute();
    }
    const span = this.start(`${facts.operation} ${facts.requestModel}`, SpanKind.CLIENT)
      .set(KEY.operation, facts.operation)
      .set(KEY.provider, facts.provider)
      .set(KEY.requestModel, facts.requestModel)
      .set(KEY.keyId, facts.keyId)
      .set(KEY.fallbackIndex, facts.fallbackIndex)
      .set(KEY.retryIndex, facts.retryIndex)
      .set(KEY.stream, facts.stream);
    if (this.tracing.captureContent && facts.prompt !== undefined) span.set(KEY.inputMessages, contentText(facts.prompt));
    return new AttemptSpan(span, this.tracing.captureContent);
  }

  /** One guardrail check of one stage. */
  guardrailCheck(facts: GuardrailCheckFacts): GuardrailSpan {
    const span = this.start(`guardrail ${facts.name}`, facts.callsOut ? SpanKind.CLIENT : SpanKind.INTERNAL)
      .set(KEY.guardrailId, facts.id)
      .set(KEY.guardrailName, facts.name)
      .set(KEY.guardrailType, facts.type)
      .set(KEY.guardrailStage, facts.stage);
    return new GuardrailSpan(span);
  }

  /** One agent-mode iteration: the model call and the tool calls it asked for. */
  iteration(depth: number): TraceNode {
    return new TraceNode(this.tracing, this.start("agent iteration", SpanKind.INTERNAL).set(KEY.iteration, depth), this.root);
  }

  /**
   * One request the MCP relay (/mcp/<client>, virtual servers, /mcp's prompts and resources) sends to an
   * upstream server, named by its method per the MCP conventions; a tools/call also names its tool.
   */
  relayedMcpRequest(facts: { method: string; tool: string; client: string }): AttemptSpan {
    const span = this.start(facts.tool === "" ? facts.method : `${facts.method} ${facts.tool}`, SpanKind.CLIENT)
      .set(KEY.mcpMethod, facts.method)
      .set(KEY.mcpClient, facts.client);
    if (facts.tool !== "") span.set(KEY.operation, "execute_tool").set(KEY.toolName, facts.tool);
    return new AttemptSpan(span, false);
  }

  /** One MCP tool call, per the MCP conventions. */
  toolCall(facts: ToolFacts): AttemptSpan {
    const span = this.start(`tools/call ${facts.tool}`, SpanKind.CLIENT)
      .set(KEY.mcpMethod, "tools/call")
      .set(KEY.operation, "execute_tool")
      .set(KEY.toolName, facts.tool)
      .set(KEY.mcpClient, facts.client)
      .set(KEY.mcpAuthType, facts.authType)
      .set(KEY.mcpPrefixedName, facts.name);
    if (this.tracing.captureContent && facts.args !== undefined) span.set(KEY.toolArguments, contentText(facts.args));
    return new AttemptSpan(span, this.tracing.captureContent);
  }
}

/** A request's SERVER span and its node; `end` closes it with the response status. */
export class ServerTrace {
  readonly node: TraceNode;

  constructor(
    tracing: Tracing,
    private readonly span: RecordingSpan,
  ) {
    this.node = new TraceNode(tracing, span);
  }

  /** The trace and span ids for log lines. */
  ids(): TraceIds {
    return this.node.ids();
  }

  /** Ends the span with the response status (5xx and a client gone are errors). */
  end(status: number): void {
    this.node.endRoute();
    this.span.set(KEY.status, status);
    if (status >= 500) this.span.setStatus({ code: SpanStatusCode.ERROR });
    if (status >= 500 || status === 499) this.span.set(KEY.errorType, String(status));
    this.span.end();
  }
}

/**
 * Starts the SERVER span of a request named `<METHOD> <route>`, continuing the caller's traceparent;
 * `dims` (asked only for a kept span) become `gw.dim.<label>` attributes. Returns undefined when the
 * sampler drops the request, so neither this nor anything below it builds a name or attributes.
 */
export function startServerTrace(
  tracing: Tracing,
  req: { method?: string | undefined; headers: Readonly<Record<string, string | string[] | undefined>> },
  route: string,
  dims: () => Readonly<Record<string, string>>,
): ServerTrace | undefined {
  const method = req.method ?? "GET";
  const span = tracing.tracer.startSampled(tracing.extract(req.headers), () => ({ name: `${method} ${route}`, options: { kind: SpanKind.SERVER } }));
  if (span === undefined) return undefined;
  span.set(KEY.method, method).set(KEY.route, route);
  const values = dims();
  for (const label in values) span.setAttribute(`gw.dim.${label}`, values[label] as string);
  return new ServerTrace(tracing, span);
}
