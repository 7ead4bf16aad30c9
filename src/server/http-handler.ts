/**
 * The request handler both protocol servers share: first the Host/Origin guard, then /health, /ready,
 * /openapi.json, /metrics, the per-user credential page, the dashboard under /workspace/ (and the `/`
 * redirect to it), the MCP endpoint (/mcp, /mcp/sse, /mcp/messages, and /mcp/<client>[/sse|/messages]),
 * POST /v1/chat/completions, /v1/responses and /v1/embeddings, GET /v1/models/{id} and the Anthropic
 * Messages and Models endpoints under /anthropic/v1, then Connect,
 * gRPC and gRPC-Web (createConnectAdapter), then the REST bridge, then a 404 in the /api envelope. Every
 * request is counted in the http_* metrics under its route template (never the raw path); its dimension
 * headers and origin are read once and handed to the /v1 handlers explicitly (RPCs read theirs from their
 * own headers, see requestScopeInterceptor).
 */
import type { DescService } from "@bufbuild/protobuf";
import type { ConnectRouter, Interceptor, Transport } from "@connectrpc/connect";
import { RequestAbort } from "../cancellation.js";
import { GatewayError, httpStatusOf } from "../errors.js";
import { originOfHeaders } from "../mcp/credentials/index.js";
import type { JsonObject } from "../providers/types.js";
import type { RequestScope } from "../services/context.js";
import { NO_DIMENSIONS, readDimensions, type RequestDimensions } from "../telemetry/dimensions.js";
import { accessLogOf, type AccessLog } from "../telemetry/access-line.js";
import type { Logger } from "../telemetry/logger.js";
import type { Metrics } from "../telemetry/metrics.js";
import { startServerTrace, type ServerTrace, type TraceNode, type Tracing } from "../telemetry/tracing.js";
import type { RequestHandler } from "./listener.js";
import { createConnectAdapter } from "./connect-adapter.js";
import { createMetricsEndpoint, type BasicAuthCheck } from "./metrics-endpoint.js";
import { createMcpAuthPage, MCP_AUTH_PAGE_PATH } from "./pages/mcp-auth-page.js";
import { createDashboard, DASHBOARD_PREFIX, isDashboardPath } from "./pages/dashboard.js";
import { isMcpPath, MCP_MESSAGES_PATH, MCP_PATH, MCP_SSE_PATH, mcpRouteOf, type McpEndpoint } from "./mcp/mcp-endpoint.js";
import { createOauthCallback, OAUTH_CALLBACK_PAGE_PATH } from "./pages/oauth-callback.js";
import { SSO_CALLBACK_PATH, SSO_LOGIN_PATH, SSO_LOGOUT_PATH } from "./pages/sso-routes.js";
import { OAUTH2_PREFIX, type OAuth2Server } from "./oauth2/oauth2-server.js";
import { bodyBytesOf } from "./counting-response.js";
import { countedStatus } from "./rpc-status.js";
import { createRestHandler } from "./rest/rest-handler.js";
import { compileRoutes, type RouteTable } from "./rest/route-table.js";
import { REFLECTION_SERVICES } from "./reflection.js";
import { sendReadiness, type Readiness } from "./readiness.js";
import { buildGatewayOpenApi } from "./openapi/gateway-document.js";
import { sendError, sendJson, type Req, type Res } from "./node-http.js";
import { dropRefusedBody } from "./refused-body.js";
import { anthropicErrorBody } from "./anthropic/anthropic-error.js";
import { createModelHandler, MODEL_PATH_PREFIX, type ModelLookup } from "./v1/model.js";
import { clientLeft } from "./v1/chat-completions.js";
import { createAnthropicModelsHandler, MODELS_PATH } from "./anthropic/models.js";
import type { CompatModelNames } from "../services/model-service.js";

const CHAT_COMPLETIONS_PATH = "/v1/chat/completions";
const RESPONSES_PATH = "/v1/responses";
const EMBEDDINGS_PATH = "/v1/embeddings";
const MESSAGES_PATH = "/anthropic/v1/messages";
const COUNT_TOKENS_PATH = "/anthropic/v1/messages/count_tokens";

/** The body of a 405 on an inference path, in the envelope of the path's API. */
function methodNotAllowed(path: string, method: string): JsonObject {
  const message = `method ${method} is not allowed on ${path}; use POST`;
  if (path.startsWith("/anthropic/")) return { type: "error", error: { type: "invalid_request_error", message } };
  return { error: { message, type: "caller_method_not_allowed", param: null, code: "method_not_allowed" } };
}

/**
 * A /v1 inference handler; `scope` is what the HTTP layer read from the request, `abort` its cancellation,
 * which the HTTP layer aborts when the client leaves before the answer is out.
 */
export type V1Handler = (req: Req, res: Res, scope: RequestScope, abort: RequestAbort) => Promise<void>;

/** What the handler serves. */
export interface HttpHandlerOptions {
  routes: (router: ConnectRouter) => void;
  interceptors: Interceptor[];
  /** The services the REST bridge and /openapi.json expose. */
  services: readonly DescService[];
  /** In-process transport to the same routes and interceptors, for the REST bridge. */
  restTransport: Transport;
  maxBodyBytes: number;
  logger: Logger;
  version: string;
  metrics: Metrics;
  /** Guards /metrics with basic auth when auth_config is enabled. */
  metricsAuth: BasicAuthCheck;
  /** Serves POST /v1/chat/completions. */
  chatCompletions?: V1Handler;
  /** Serves POST /v1/responses. */
  responses?: V1Handler;
  /** Serves POST /v1/embeddings. */
  embeddings?: V1Handler;
  /** Serves POST /anthropic/v1/messages. */
  messages?: V1Handler;
  /** Serves POST /anthropic/v1/messages/count_tokens. */
  countTokens?: V1Handler;
  /** Finds the model of GET /v1/models/{id} (absent: no such route). */
  modelLookup?: ModelLookup;
  /** The names of GET /anthropic/v1/models[/{id}] (absent: the REST bridge serves the listing). */
  compatModelNames?: CompatModelNames;
  /** Answers GET /ready (absent: no /ready route). */
  readiness?: Readiness;
  /** Serves /mcp, /mcp/sse and /mcp/messages (absent: no MCP endpoint). */
  mcp?: McpEndpoint;
  /** The /mcp authorization server (/oauth2 and the discovery documents), while `enabled` says so. */
  oauth2?: { server: OAuth2Server; enabled: () => boolean };
  /** Refuses requests by Host and Origin (DNS-rebinding protection); absent: every request is served. */
  hostGuard?: (req: Req, path: string) => string | null;
  /** The built dashboard (absent: dist/web beside the gateway). */
  webDir?: string;
  /** Traces every request as a SERVER span; absent: tracing off, nothing is built per request. */
  tracing?: Tracing;
  /**
   * Checks an IdP bearer token before any handler sees the request: null when there is nothing to check
   * (synchronously, so other requests pay nothing), else the refusal to answer with or null to go on.
   */
  bearerCheck?: (authorization: string | undefined) => Promise<GatewayError | null> | null;
  /** Serves the SSO browser routes (/api/sso/login, /api/sso/callback, /api/sso/logout); absent: none. */
  sso?: (req: Req, res: Res, path: string) => void;
}

/** Builds the handler; route tables are compiled here, once, and the OpenAPI document on its first request. */
export function createHttpHandler(opts: HttpHandlerOptions): RequestHandler {
  const table = compileRoutes(opts.services);
  // Building it costs a noticeable part of every start, and most gateways are never asked for it.
  let openapi: string | undefined;
  const rest = createRestHandler({ services: opts.services, transport: opts.restTransport, maxBodyBytes: opts.maxBodyBytes, table });

  const fallback = (req: Req, res: Res, trace?: TraceNode): void => {
    rest(req, res, trace)
      .then((handled) => {
        if (handled) return;
        const path = (req.url ?? "/").split("?")[0];
        sendError(res, 404, "not_found", `no route for ${req.method ?? "GET"} ${path}`);
      })
      .catch((err: unknown) => {
        opts.logger.error({ err }, "REST bridge failed");
        if (!res.headersSent) sendError(res, 500, "internal", "internal error: the gateway log has the details");
        else res.end();
      });
  };

  const connect = createConnectAdapter({
    routes: opts.routes,
    interceptors: opts.interceptors,
    readMaxBytes: opts.maxBodyBytes,
    fallback,
    logger: opts.logger,
  });

  const serveMetrics = createMetricsEndpoint(opts.metrics, opts.metricsAuth);
  const authPage = createMcpAuthPage({ transport: opts.restTransport, logger: opts.logger });
  const oauthCallback = createOauthCallback({ transport: opts.restTransport, logger: opts.logger });
  const dashboard = createDashboard(opts.webDir);
  const routeOf = routeTemplates(opts.services, table);
  const observing: Observing = { metrics: opts.metrics, logger: opts.logger, accessLog: accessLogOf(opts.logger) };
  const serveModel = opts.modelLookup ? createModelHandler(opts.modelLookup) : null;
  const serveAnthropicModels = opts.compatModelNames ? createAnthropicModelsHandler(opts.compatModelNames) : null;
  const inference = new Map<string, V1Handler>();
  for (const [path, handler] of [
    [CHAT_COMPLETIONS_PATH, opts.chatCompletions],
    [RESPONSES_PATH, opts.responses],
    [EMBEDDINGS_PATH, opts.embeddings],
    [MESSAGES_PATH, opts.messages],
    [COUNT_TOKENS_PATH, opts.countTokens],
  ] as const) {
    if (handler) inference.set(path, handler);
  }

  return (req, res) => {
    const url = req.url ?? "/";
    const query = url.indexOf("?");
    const path = query === -1 ? url : url.slice(0, query);
    const route = routeOf(req.method ?? "GET", path);
    let dims: RequestDimensions = NO_DIMENSIONS;
    try {
      dims = readDimensions(req.headers, opts.metrics.customLabels);
    } catch (err) {
      observe(req, res, route, dims, observing, opts.tracing ? startServerTrace(opts.tracing, req, route, () => dims.logValues) : undefined);
      if (!(err instanceof GatewayError)) throw err;
      sendError(res, 400, err.type, err.message);
      return;
    }
    const traced = opts.tracing ? startServerTrace(opts.tracing, req, route, () => dimensionAttributes(dims)) : undefined;
    const observation = observe(req, res, route, dims, observing, traced);
    const refused = opts.hostGuard?.(req, path) ?? null;
    if (refused !== null) {
      sendError(res, 403, "host_not_allowed", refused);
      return;
    }
    const checking = opts.bearerCheck?.(req.headers.authorization) ?? null;
    if (checking === null) {
      dispatch(req, res, path, dims, traced, observation);
      return;
    }
    checking.then(
      (refusal) => {
        if (refusal === null) dispatch(req, res, path, dims, traced, observation);
        else sendRefusal(req, res, path, refusal);
      },
      (err: unknown) => {
        opts.logger.error({ err, path }, "checking the IdP bearer token failed");
        if (!res.headersSent) sendError(res, 500, "internal", "internal error: the gateway log has the details");
      },
    );
  };

  function dispatch(req: Req, res: Res, path: string, dims: RequestDimensions, traced: ServerTrace | undefined, observation: RequestObservation): void {
    if (path === "/health" && (req.method === "GET" || req.method === "HEAD")) {
      sendJson(res, 200, { status: "ok" });
      return;
    }
    if (path === "/ready" && opts.readiness && (req.method === "GET" || req.method === "HEAD")) {
      sendReadiness(res, opts.readiness);
      return;
    }
    if (path === "/openapi.json" && req.method === "GET") {
      openapi ??= JSON.stringify(buildGatewayOpenApi(opts.services, opts.version, table));
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(openapi) });
      res.end(openapi);
      return;
    }
    if (path === "/metrics") {
      serveMetrics(req, res);
      return;
    }
    if (path === MCP_AUTH_PAGE_PATH) {
      authPage(req, res).catch((err: unknown) => {
        opts.logger.error({ err, path }, "the MCP credential page failed");
        if (!res.headersSent) sendError(res, 500, "internal", "internal error: the gateway log has the details");
        else res.end();
      });
      return;
    }
    if (path === OAUTH_CALLBACK_PAGE_PATH) {
      oauthCallback(req, res).catch((err: unknown) => {
        opts.logger.error({ err, path }, "the OAuth callback failed");
        if (!res.headersSent) sendError(res, 500, "internal", "internal error: the gateway log has the details");
        else res.end();
      });
      return;
    }
    // After the flow page, so /workspace/mcp-sessions/auth stays the server-rendered page.
    if (isDashboardPath(path)) {
      dashboard(req, res, path);
      return;
    }
    if (opts.sso && (path === SSO_LOGIN_PATH || path === SSO_CALLBACK_PATH || path === SSO_LOGOUT_PATH)) {
      opts.sso(req, res, path);
      return;
    }
    if (opts.oauth2 && opts.oauth2.server.handles(path) && opts.oauth2.enabled()) {
      opts.oauth2.server.handle(req, res, path, originOfHeaders(req.headers) ?? "");
      return;
    }
    if (opts.mcp && isMcpPath(path)) {
      opts.mcp.handle(req, res, path, traced?.node);
      return;
    }
    if (serveAnthropicModels !== null && (path === MODELS_PATH || path.startsWith(`${MODELS_PATH}/`))) {
      serveAnthropicModels(req, res, path, (req.url ?? "").slice(path.length + 1));
      return;
    }
    if (serveModel !== null && path.startsWith(MODEL_PATH_PREFIX)) {
      serveModel(req, res, path);
      return;
    }
    const v1 = inference.get(path);
    if (v1 && req.method !== "POST") {
      sendJson(res, 405, methodNotAllowed(path, req.method ?? ""), { allow: "POST" });
      return;
    }
    if (v1) {
      // `trace` always present (undefined unless sampled): sampled and unsampled requests share one scope shape.
      v1(req, res, { dims, trace: traced?.node }, observation.abortOnClose()).catch((err: unknown) => {
        opts.logger.error({ err, path }, "inference handler failed");
        if (!res.headersSent) sendError(res, 500, "gateway_internal", "internal error: the gateway log has the details");
        else res.end();
      });
      return;
    }
    connect(req, res, traced?.node);
  }
}

/** A refusal before dispatch, in the error envelope of the path's API; the unread body is dropped. */
function sendRefusal(req: Req, res: Res, path: string, err: GatewayError): void {
  const status = httpStatusOf(err);
  if (path.startsWith("/anthropic/")) sendJson(res, status, anthropicErrorBody(err).body);
  else if (path.startsWith("/v1/")) sendJson(res, status, { error: { message: err.message, type: err.type, param: null, code: err.type } });
  else sendError(res, status, err.type, err.message);
  dropRefusedBody(req, res);
}

/** The `path` label of a request: a fixed path, a Connect procedure path, a REST route template, or "unmatched". */
function routeTemplates(services: readonly DescService[], table: RouteTable): (method: string, path: string) => string {
  const fixed = new Set(["/health", "/ready", "/openapi.json", "/metrics", CHAT_COMPLETIONS_PATH, RESPONSES_PATH, EMBEDDINGS_PATH, MESSAGES_PATH, COUNT_TOKENS_PATH, MODELS_PATH, MCP_AUTH_PAGE_PATH, OAUTH_CALLBACK_PAGE_PATH, MCP_PATH, MCP_SSE_PATH, MCP_MESSAGES_PATH, SSO_LOGIN_PATH, SSO_CALLBACK_PATH, SSO_LOGOUT_PATH]);
  // Connect serves `/<package.Service>/<Method>` for the implemented services and the reflection ones.
  const procedures = new Set([...services, ...REFLECTION_SERVICES].flatMap((s) => s.methods.map((m) => `/${s.typeName}/${m.name}`)));
  return (method, path) => {
    if (fixed.has(path) || procedures.has(path)) return path;
    if (path.startsWith(MODEL_PATH_PREFIX)) return `${MODEL_PATH_PREFIX}{id}`;
    if (path.startsWith(`${MODELS_PATH}/`)) return `${MODELS_PATH}/{id}`;
    // The OAuth server's paths carry ids (interactions, clients); one label each for its tree and the discovery documents.
    if (path.startsWith(`${OAUTH2_PREFIX}/`)) return `${OAUTH2_PREFIX}/*`;
    if (isDashboardPath(path)) return `${DASHBOARD_PREFIX}/*`;
    if (isMcpPath(path)) return mcpRouteOf(path);
    if (path.startsWith("/.well-known/")) return "/.well-known/*";
    const found = table.match(method, path);
    return found.kind === "found" ? found.route.template : "unmatched";
  };
}

/** The dimension values a span carries: every x-gw-dim-* header and the configured labels' values. */
function dimensionAttributes(dims: RequestDimensions): Readonly<Record<string, string>> {
  if (dims === NO_DIMENSIONS) return dims.logValues;
  return { ...dims.metricValues, ...dims.logValues };
}

/** Where a request's observation goes: its http_* sample, and its access line. */
interface Observing {
  metrics: Metrics;
  /** Says which levels are on. */
  logger: Logger;
  accessLog: AccessLog;
}

/** Records the http_* metrics, the request's log line and the end of its span once the response is done. */
function observe(req: Req, res: Res, route: string, dims: RequestDimensions, opts: Observing, traced: ServerTrace | undefined): RequestObservation {
  const observation = new RequestObservation(req, res, route, dims, opts, traced);
  // on, not once: once wraps each listener per request, and the observation records only once.
  res.on("finish", observation.finish);
  res.on("close", observation.finish);
  return observation;
}

/**
 * One request's http_* sample and log line, and the abort of its work when its client leaves first; `finish`
 * is bound once instead of a closure per request, and serves both (one listener less per inference request).
 */
class RequestObservation {
  private readonly started = performance.now();
  private done = false;
  private abort: RequestAbort | null = null;
  readonly finish: () => void;

  constructor(
    private readonly req: Req,
    private readonly res: Res,
    private readonly route: string,
    private readonly dims: RequestDimensions,
    private readonly opts: Observing,
    private readonly traced: ServerTrace | undefined,
  ) {
    this.finish = this.record.bind(this);
  }

  /** The request's cancellation, aborted if the response closes before it finished. */
  abortOnClose(): RequestAbort {
    this.abort = new RequestAbort();
    return this.abort;
  }

  private record(): void {
    if (this.done) return;
    this.done = true;
    const { req, res, route, dims, opts } = this;
    // 499 (client closed request) when the client went away before any response was written; a failed
    // gRPC or gRPC-Web call, sent as 200, counts under the status its code maps to.
    const status = res.headersSent ? countedStatus(res) : 499;
    const durationS = (performance.now() - this.started) / 1e3;
    const method = req.method ?? "GET";
    const declared = Number(req.headers["content-length"] ?? 0);
    opts.metrics.recordHttpRequest({
      path: route,
      method,
      status,
      durationS,
      reqBytes: Number.isFinite(declared) ? declared : 0,
      resBytes: bodyBytesOf(res),
      custom: dims.metricValues,
    });
    const level = route === "/health" || route === "/metrics" ? "debug" : "info";
    // The line object is built only when it will be written.
    if (opts.logger.isLevelEnabled(level)) {
      const durationMs = Math.round(durationS * 1e6) / 1e3;
      // Two literals rather than a spread of the ids into the line: a spread copies property by property.
      const ids = this.traced?.ids();
      const line =
        ids === undefined
          ? { path: route, method, status, duration_ms: durationMs, dims: dims.logValues }
          : { path: route, method, status, duration_ms: durationMs, dims: dims.logValues, trace_id: ids.trace_id, span_id: ids.span_id };
      opts.accessLog(level, line);
    }
    this.traced?.end(status);
    // Only a "close" that came before "finish" finds the response unfinished: the client left first.
    if (this.abort !== null && !res.writableFinished) this.abort.abort(clientLeft());
  }
}
