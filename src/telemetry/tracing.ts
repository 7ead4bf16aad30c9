/**
 * Request tracing on the OpenTelemetry API's types: the code paths build spans through TraceNode, whose
 * tracer (otlp-tracing.ts) exists only when tracing is configured. With tracing off (the default) there is
 * no Tracing at all: callers hold `undefined` and skip every span, so a request pays nothing. The span
 * context travels explicitly (a TraceNode in the request scope) rather than through an AsyncLocalStorage
 * context manager, whose promise hooks would cost every traced request a large share of its CPU time on
 * Node 20.
 */
import { SpanKind, SpanStatusCode, type Attributes, type Context, type Span, type TextMapPropagator } from "@opentelemetry/api";
import { RecordingSpan, type SpanStarter } from "./recording-tracer.js";

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

/** The ids of a span, for log lines. */
function idsOf(span: Span): TraceIds {
  if (span instanceof RecordingSpan) return { trace_id: span.trace.hex, span_id: span.spanIdHex };
  const ctx = span.spanContext();
  return { trace_id: ctx.traceId, span_id: ctx.spanId };
}

/** The traceparent header value of a span, for an upstream request. */
export function traceparentOf(span: Span): string {
  if (span instanceof RecordingSpan) return span.traceparent();
  const ctx = span.spanContext();
  return `00-${ctx.traceId}-${ctx.spanId}-${(ctx.traceFlags & 1) === 1 ? "01" : "00"}`;
}

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
    private readonly span: Span,
    private readonly captureContent: boolean,
  ) {}

  /** The traceparent upstream servers continue. */
  traceparent(): string {
    return traceparentOf(this.span);
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
    if (outcome.status !== null) span.setAttribute("http.response.status_code", outcome.status);
    if (outcome.responseModel) span.setAttribute("gen_ai.response.model", outcome.responseModel);
    if (outcome.inputTokens !== undefined) span.setAttribute("gen_ai.usage.input_tokens", outcome.inputTokens);
    if (outcome.outputTokens !== undefined) span.setAttribute("gen_ai.usage.output_tokens", outcome.outputTokens);
    if (outcome.finishReasons && outcome.finishReasons.length > 0) span.setAttribute("gen_ai.response.finish_reasons", outcome.finishReasons);
    if (this.captureContent && outcome.completion !== undefined) span.setAttribute("gen_ai.output.messages", contentText(outcome.completion));
    if (outcome.errorType !== undefined) {
      span.setAttribute("error.type", outcome.errorType);
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

  constructor(private readonly span: Span) {}

  /** Ends the span with the check's result (pass, block, redact, warn, error) and, for a failed check, why. */
  end(result: string, errorType?: string): void {
    if (this.ended) return;
    this.ended = true;
    this.span.setAttribute("gw.guardrail.result", result);
    if (errorType !== undefined) {
      this.span.setAttribute("error.type", errorType);
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
  private openRoute: Span | undefined;

  constructor(
    private readonly tracing: Tracing,
    readonly span: Span,
    root?: TraceNode,
  ) {
    this.root = root ?? this;
  }

  private start(name: string, kind: SpanKind, attributes: Attributes): Span {
    return this.tracing.tracer.startChild(name, { kind, attributes }, this.span);
  }

  private childNode(span: Span): TraceNode {
    return new TraceNode(this.tracing, span, this.root);
  }

  /** The traceparent of this span. */
  traceparent(): string {
    return traceparentOf(this.span);
  }

  /** The ids of this span, for the log lines written under it (one object, however often asked). */
  ids(): TraceIds {
    this.logIds ??= idsOf(this.span);
    return this.logIds;
  }

  /** Ends a node of its own (an iteration); the SERVER span ends through ServerTrace. */
  end(): void {
    this.endRoute();
    if (this.root !== this) this.span.end();
  }

  /** Records the request's virtual key (its id, never its value) on the SERVER span. */
  virtualKey(id: string, name: string): void {
    this.root.span.setAttribute("gw.virtual_key.id", id);
    this.root.span.setAttribute("gw.virtual_key.name", name);
  }

  /**
   * The route decision, as a span of its own. It stays open until the first attempt names the key it
   * chose (`gw.route.key_id`), a cache hit answers instead, or the request ends without an attempt.
   */
  route(facts: RouteFacts): void {
    this.endRoute();
    this.openRoute = this.start("route", SpanKind.INTERNAL, {
      "gw.route.provider": facts.provider,
      "gw.route.model": facts.model,
      "gw.route.fallbacks": facts.fallbacks,
      "gw.route.engines": [...facts.engines],
    });
  }

  /** Ends the route span with the cache's answer: no key is chosen for a hit. */
  routeCacheHit(cacheType: "direct" | "semantic"): void {
    this.openRoute?.setAttribute("gw.route.cache_hit", cacheType);
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
      this.openRoute.setAttribute("gw.route.key_id", facts.keyId);
      this.endRoute();
    }
    const attributes: Attributes = {
      "gen_ai.operation.name": facts.operation,
      "gen_ai.provider.name": facts.provider,
      "gen_ai.request.model": facts.requestModel,
      "gw.provider.key_id": facts.keyId,
      "gw.fallback_index": facts.fallbackIndex,
      "gw.retry_index": facts.retryIndex,
      "gw.stream": facts.stream,
    };
    if (this.tracing.captureContent && facts.prompt !== undefined) attributes["gen_ai.input.messages"] = contentText(facts.prompt);
    return new AttemptSpan(this.start(`${facts.operation} ${facts.requestModel}`, SpanKind.CLIENT, attributes), this.tracing.captureContent);
  }

  /** One guardrail check of one stage. */
  guardrailCheck(facts: GuardrailCheckFacts): GuardrailSpan {
    const attributes: Attributes = {
      "gw.guardrail.id": facts.id,
      "gw.guardrail.name": facts.name,
      "gw.guardrail.type": facts.type,
      "gw.guardrail.stage": facts.stage,
    };
    return new GuardrailSpan(this.start(`guardrail ${facts.name}`, facts.callsOut ? SpanKind.CLIENT : SpanKind.INTERNAL, attributes));
  }

  /** One agent-mode iteration: the model call and the tool calls it asked for. */
  iteration(depth: number): TraceNode {
    return this.childNode(this.start("agent iteration", SpanKind.INTERNAL, { "gw.agent.iteration": depth }));
  }

  /**
   * One request the MCP relay (/mcp/<client>, virtual servers, /mcp's prompts and resources) sends to an
   * upstream server, named by its method per the MCP conventions; a tools/call also names its tool.
   */
  relayedMcpRequest(facts: { method: string; tool: string; client: string }): AttemptSpan {
    const attributes: Attributes = { "mcp.method.name": facts.method, "gw.mcp.client.name": facts.client };
    if (facts.tool !== "") {
      attributes["gen_ai.operation.name"] = "execute_tool";
      attributes["gen_ai.tool.name"] = facts.tool;
    }
    return new AttemptSpan(this.start(facts.tool === "" ? facts.method : `${facts.method} ${facts.tool}`, SpanKind.CLIENT, attributes), false);
  }

  /** One MCP tool call, per the MCP conventions. */
  toolCall(facts: ToolFacts): AttemptSpan {
    const attributes: Attributes = {
      "mcp.method.name": "tools/call",
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": facts.tool,
      "gw.mcp.client.name": facts.client,
      "gw.mcp.auth_type": facts.authType,
      "gw.mcp.tool.prefixed_name": facts.name,
    };
    if (this.tracing.captureContent && facts.args !== undefined) attributes["gen_ai.tool.call.arguments"] = contentText(facts.args);
    return new AttemptSpan(this.start(`tools/call ${facts.tool}`, SpanKind.CLIENT, attributes), this.tracing.captureContent);
  }
}

/** A request's SERVER span and its node; `end` closes it with the response status. */
export class ServerTrace {
  readonly node: TraceNode;

  constructor(
    tracing: Tracing,
    private readonly span: Span,
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
    this.span.setAttribute("http.response.status_code", status);
    if (status >= 500) this.span.setStatus({ code: SpanStatusCode.ERROR });
    if (status >= 500 || status === 499) this.span.setAttribute("error.type", String(status));
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
  const span = tracing.tracer.startSampled(tracing.extract(req.headers), () => {
    const method = req.method ?? "GET";
    const attributes: Attributes = { "http.request.method": method, "http.route": route };
    const values = dims();
    for (const label in values) attributes[`gw.dim.${label}`] = values[label];
    return { name: `${method} ${route}`, options: { kind: SpanKind.SERVER, attributes } };
  });
  return span === undefined ? undefined : new ServerTrace(tracing, span);
}
