/**
 * The composition root: createApp(options) binds the port (answering /health and /ready while it starts),
 * opens the store, seeds it from the config file, wires every service, interceptor and protocol onto that
 * port, and returns the running app with its reload() and close().
 */
import { EgressPolicy, installEgressPolicy, type EgressConfig } from "./config/egress-policy.js";
import type { ConnectRouter } from "@connectrpc/connect";
import { defaultServerLimits, type GatewayFileConfig, type ServerLimits } from "./config/file-config.js";
import { clientSettings, type ClientSettings, type RuntimeSettings, type ToolManagerSettings, type LoadBalancerSettings } from "./config/runtime-settings.js";
import type { McpClientSpec } from "./mcp/client-spec.js";
import type { RuntimeTiming } from "./mcp/client-runtime.js";
import { McpRuntime } from "./mcp/runtime.js";
import { StateRegistry } from "./mcp/state-registry.js";
import { createSessionFactory } from "./mcp/upstream-session.js";
import { GatewayError } from "./errors.js";
import { unauthenticatedExposure } from "./server/exposure.js";
import { ChangeListener } from "./cluster/change-listener.js";
import { NodeRegistry } from "./cluster/node-registry.js";
import { createHttpHandler } from "./server/http-handler.js";
import { createInProcessTransport } from "./server/in-process-transport.js";
import { createHostGuard } from "./server/host-guard.js";
import { createMcpEndpoint, MCP_PATH } from "./server/mcp/mcp-endpoint.js";
import { OAuth2Server } from "./server/oauth2/oauth2-server.js";
import { OAuth2Store } from "./services/oauth2/oauth2-store.js";
import type { McpSessionLimits } from "./server/mcp/mcp-sessions.js";
import { McpServerTools } from "./services/mcp-server-tools.js";
import { createOnePortServer, type RequestHandler } from "./server/listener.js";
import { createStartingHandler, Readiness } from "./server/readiness.js";
import { createChatCompletionsHandler } from "./server/v1/chat-completions.js";
import { createEmbeddingsHandler } from "./server/v1/embeddings.js";
import { createResponsesHandler } from "./server/v1/responses.js";
import { createCountTokensHandler, createMessagesHandler } from "./server/anthropic/messages.js";
import { createAgentService } from "./services/inference/agent-loop.js";
import { createChatService } from "./inference/engine.js";
import { routedJudge } from "./inference/internal-calls.js";
import { ComplexityClassifier } from "./inference/complexity-classifier.js";
import type { ComplexitySettings } from "./routing/complexity.js";
import { inferenceOptionsFromFile, type InferenceOptions } from "./services/inference/config.js";
import { loadInference } from "./services/inference/records.js";
import { InferenceState } from "./inference/state.js";
import { ProviderModelLists } from "./services/inference/model-lists.js";
import { createProviderEmbedder, type EmbeddingTarget } from "./inference/cache-embedder.js";
import { ResponseCache, type ResponseCacheLimits } from "./inference/response-cache.js";
import { UsageFlusher } from "./inference/usage-flusher.js";
import { startSharedLimits, type SharedLimits } from "./inference/shared-limits.js";
import { reflectionRoutes } from "./server/reflection.js";
import { AdminAuth, type AdminAuthConfig } from "./services/admin-auth.js";
import { bearerRefusal, IdpTokens, jwtBearer } from "./services/sso/idp-tokens.js";
import { SsoLogin } from "./services/sso/sso-login.js";
import { createSsoRoutes } from "./server/pages/sso-routes.js";
import { originOfHeaders } from "./mcp/credentials/index.js";
import { SSO_OFF, type SsoSettings } from "./config/sso-config.js";
import { loadSettings, seedStore, type SeedChanges, type SeedInput } from "./services/bootstrap.js";
import { announceKeyBackoff, configChangeHandlers } from "./services/cluster-sync.js";
import { NodeStatePublisher } from "./services/mcp-node-states.js";
import { reloadSeededConfig } from "./services/config-reload.js";
import { guardrailsFromFile } from "./services/guardrails/guardrail-file.js";
import { loadGuardrails } from "./services/guardrails/guardrail-records.js";
import { GuardrailSet } from "./guardrails/guardrail-set.js";
import { VirtualServers } from "./mcp/relay/virtual-servers.js";
import { virtualServersFromFile } from "./services/virtual-mcp-servers/virtual-server-file.js";
import { loadVirtualServers } from "./services/virtual-mcp-servers/virtual-server-records.js";
import { implementServices, serviceInterceptors, type ServiceDeps } from "./services/index.js";
import { createCompatModelNames, createModelLookup } from "./services/model-service.js";
import { PricingSync, type PricingSettings } from "./routing/pricing-sync.js";
import { ensureVectorExtension, openStore, ResponseCacheTable, type Store } from "./store/index.js";
import { createLogger, type Logger } from "./telemetry/logger.js";
import { InferenceTelemetry } from "./telemetry/inference-telemetry.js";
import { Metrics } from "./telemetry/metrics.js";
import { GuardrailTelemetry } from "./telemetry/guardrail-metrics.js";
import { callOutChecks } from "./guardrails/call-out-checks.js";
import { guardrailCallers } from "./inference/guardrail-callers.js";
import { startOtlpTracing, type OtlpTracingOptions } from "./telemetry/otlp-tracing.js";
import type { Tracing } from "./telemetry/tracing.js";

/** The gateway's version, reported by /openapi.json. */
export const VERSION = "0.1.0";

/** Everything createApp needs; main.ts builds it from argv, env and the config file. */
export interface AppOptions {
  /** Directory for the embedded database, its socket and the generated encryption key. */
  dataDir: string;
  host?: string;
  /** Refuse to start (or to reload a config) that serves the admin API on a non-loopback host without auth. */
  requireAuth?: boolean;
  /** 0 picks a free port. */
  port?: number;
  /** postgres://... for a real server; absent uses the embedded database. */
  databaseUrl?: string;
  /** Header size, timeouts and the connection cap of the listener (the config file's `server`); read only at start. */
  server?: ServerLimits;
  /** PostgreSQL schema (tests isolate runs with it). */
  databaseSchema?: string;
  /** Redis for the shared budget and rate-limit counters (`redis` in the config file, GW_REDIS_URL); read only at start. */
  redis?: { url: string; keyPrefix: string };
  encryptionKey?: string;
  auth?: AdminAuthConfig;
  toolManager?: ToolManagerSettings;
  /** The load balancer's toggles from the config file's load_balancer_config. */
  loadBalancer?: LoadBalancerSettings;
  /** network.egress: the destinations upstream connections may reach (the built-in denials when absent). */
  egress?: EgressConfig;
  client?: ClientSettings & { maxRequestBodyBytes?: number };
  /** MCP clients declared in the config file. */
  mcpClients?: McpClientSpec[];
  /** Check intervals and retries of the MCP runtime (tests shorten them). */
  mcpTiming?: Partial<RuntimeTiming>;
  /** Environment stdio clients take their `envs` from (default process.env). */
  env?: NodeJS.ProcessEnv;
  logger?: Logger;
  /** Metric options: user_id/user_name labels, the per-label cardinality cap, and recording off (bench only). */
  telemetry?: { userLabelsEnabled?: boolean; maxLabelValues?: number; recording?: boolean };
  /** Providers and virtual keys of the /v1 inference path (none: every /v1 model names no provider). */
  inference?: InferenceOptions;
  /** How complexity tiers are computed for routing rules that read complexity_tier (routing.complexity); absent: they read "". */
  complexity?: ComplexitySettings;
  /** The response cache: the embedding model of semantic lookups (none: semantic caching is unavailable) and its bounds. */
  cache?: { embedding?: EmbeddingTarget | null; limits?: Partial<ResponseCacheLimits> };
  /** Limits of the /mcp session table (defaults: 1000 sessions, 30 minutes idle). */
  mcpSessions?: Partial<McpSessionLimits>;
  /** OTLP trace export (OTEL_* variables or telemetry.otlp); absent: tracing off, no SDK loaded. */
  tracing?: OtlpTracingOptions;
  /** pricing.pricing_url and sync_interval (absent: the bundled datasheet only). */
  pricing?: PricingSettings;
  /** Download tuning of the pricing sync (tests shorten the waits and the size cap). */
  pricingTiming?: { retryDelaysMs?: readonly number[]; tickMs?: number; maxBytes?: number; timeoutMs?: number };
  /** Single sign-on and IdP bearer tokens (the config file's `sso`); absent: off. */
  sso?: SsoSettings;
  /** Guardrails declared in the config file (`guardrails`), REST JSON, already checked as far as the store is not needed. */
  guardrails?: Record<string, unknown>[];
  /** Virtual MCP servers declared in the config file (`mcp.virtual_servers`), REST JSON, already checked as far as the store is not needed. */
  virtualMcpServers?: Record<string, unknown>[];
}

/** A running gateway. */
export interface App {
  readonly url: string;
  readonly port: number;
  readonly store: Store;
  readonly settings: RuntimeSettings;
  readonly logger: Logger;
  readonly runtime: McpRuntime;
  readonly metrics: Metrics;
  /** The guardrails in memory, as the request path reads them. */
  readonly guardrails: GuardrailSet;
  /**
   * Applies a re-read config file as a restart would: changed sections seed the store and the running
   * gateway takes them up. Throws, changing nothing, when an entry breaks a rule.
   */
  reload(next: Partial<AppOptions>): Promise<void>;
  /** Stops serving, finishes in-flight requests, closes the store. */
  close(): Promise<void>;
}

const DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024;
const NO_PRICING_URL: PricingSettings = { url: "", syncIntervalMs: 24 * 3_600_000 };
const AUTH_OFF: AdminAuthConfig = { enabled: false, username: "", password: "", sessionTtlMs: 86_400_000 };

/** Warns about an admin API open to the network, or refuses it with `requireAuth`. */
function checkExposure(host: string, auth: AdminAuthConfig | undefined, requireAuth: boolean, logger: Logger): void {
  const risk = unauthenticatedExposure(host, auth?.enabled ?? false);
  if (risk === null) return;
  if (requireAuth) throw new GatewayError("failed_precondition", `${risk} (refused: --require-auth / GW_REQUIRE_AUTH is set)`);
  logger.warn({ host }, risk);
}

/**
 * Refuses (a 400 naming the setting) config-file URLs the gateway fetches whose host `egress` refuses:
 * pricing.pricing_url over http(s) and sso.issuer (its discovery document, keys and token endpoint).
 */
function checkConfiguredDestinations(egress: EgressPolicy, options: Partial<AppOptions>): void {
  const pricingUrl = options.pricing?.url ?? "";
  if (/^https?:/i.test(pricingUrl)) egress.checkUrl(pricingUrl, "pricing.pricing_url");
  const issuer = options.sso?.issuer ?? "";
  if (issuer !== "") egress.checkUrl(issuer, "sso.issuer");
}

/** Starts the gateway. */
export async function createApp(options: AppOptions): Promise<App> {
  const logger = options.logger ?? createLogger();
  const host = options.host ?? "127.0.0.1";
  // Before any provider or MCP client is set up, so their first connections already obey it.
  const egress = new EgressPolicy(options.egress);
  installEgressPolicy(egress);
  // Config-file providers were checked against the built-in denials only, before the file's policy was known.
  for (const [name, wire] of Object.entries(options.inference?.providers ?? {})) {
    const network = wire["network_config"];
    const baseUrl = network !== null && typeof network === "object" && !Array.isArray(network) ? (network as Record<string, unknown>)["base_url"] : undefined;
    if (typeof baseUrl === "string" && baseUrl !== "") egress.checkUrl(baseUrl, `providers.${name}.network_config.base_url`);
  }
  checkConfiguredDestinations(egress, options);
  checkExposure(host, options.auth, options.requireAuth ?? false, logger);
  const readiness = new Readiness(() => logger.info("gateway ready"));
  // Bound first, so probes get an answer while the store opens (a first embedded start runs initdb).
  let serve: RequestHandler = createStartingHandler(readiness);
  const serverLimits = options.server ?? defaultServerLimits();
  const server = createOnePortServer((req, res) => serve(req, res), serverLimits);
  const address = await server.listen(options.port ?? 8080, host);
  const hostForUrl = address.host.includes(":") ? `[${address.host}]` : address.host;
  const url = `http://${hostForUrl}:${address.port}`;
  logger.info({ url }, "port bound: /health and /ready answer while the gateway starts");
  let store: Store;
  try {
    store = await openStore({
      dataDir: options.dataDir,
      logger,
      ...(options.databaseUrl ? { url: options.databaseUrl } : {}),
      ...(options.databaseSchema ? { schema: options.databaseSchema } : {}),
      ...(options.encryptionKey ? { encryptionKey: options.encryptionKey } : {}),
    });
  } catch (err) {
    await server.close();
    throw err;
  }
  readiness.done("store");
  let inference: InferenceState | undefined;
  let usageFlusher: UsageFlusher | undefined;
  let responseCache: ResponseCache | undefined;
  let runtime: McpRuntime | undefined;
  let tracing: Tracing | undefined;
  let pricingSync: PricingSync | undefined;
  let nodes: NodeRegistry | undefined;
  let shared: SharedLimits | null = null;
  let changes: ChangeListener | undefined;
  let nodeStates: NodeStatePublisher | undefined;
  try {
    if (options.tracing) tracing = await startOtlpTracing(options.tracing, logger, VERSION);
    // Nodes started together with one config file would otherwise insert the same entries at once.
    await store.exclusive("seed", () => seedStore(store, seedInputOf(options), logger));
    const settings = await loadSettings(store);
    const inferenceOptions = options.inference ?? { providers: {}, virtualKeys: [] };
    const state = new InferenceState({
      settings,
      logger,
      ...(inferenceOptions.random ? { random: inferenceOptions.random } : {}),
      ...(inferenceOptions.upstreamTimeoutMs !== undefined ? { upstreamTimeoutMs: inferenceOptions.upstreamTimeoutMs } : {}),
      ...(inferenceOptions.clock ? { clock: inferenceOptions.clock } : {}),
    });
    inference = state;
    await loadInference(store, state, logger);
    const guardrails = new GuardrailSet();
    await loadGuardrails(store, guardrails, logger);
    const virtualServers = new VirtualServers();
    await loadVirtualServers(store, virtualServers, logger);
    // Created before it registers, so the pricing sync can ask whether this node is the oldest live one.
    const cluster = new NodeRegistry({ store, logger, address: url, version: VERSION });
    nodes = cluster;
    const pricing = new PricingSync({
      store,
      logger,
      leader: () => cluster.isOldest(),
      settings: options.pricing ?? NO_PRICING_URL,
      onChange: (snapshot) => state.setPrices(snapshot.table, snapshot.entries),
      ...options.pricingTiming,
    });
    pricingSync = pricing;
    await pricing.start();
    readiness.done("catalog");
    const modelLists = new ProviderModelLists({ store, logger, inference: state });
    // In the background: an unreachable provider is a warning and must not hold up readiness.
    void modelLists.refetchAll();
    const cache = await startResponseCache(store, state, options, logger);
    responseCache = cache;
    const flusher = new UsageFlusher(store, state, logger, inferenceOptions.usageFlushIntervalMs);
    usageFlusher = flusher;
    flusher.start();
    const metrics = new Metrics({ customLabels: settings.client.prometheusLabels, logger, processMetrics: true, ...options.telemetry });
    guardrails.observe(new GuardrailTelemetry(metrics, logger));
    const unwatchLabels = settings.onChange((s) => metrics.setCustomLabels(s.client.prometheusLabels));
    metrics.watchRouteStates(() => state.routeStates());
    const auth = new AdminAuth(options.auth ?? AUTH_OFF, store);
    const idp = new IdpTokens(options.sso ?? SSO_OFF);
    const ssoLogin = new SsoLogin(idp, store);
    await ssoLogin.load();
    const ssoSession = (cookie: string | null | undefined) => ssoLogin.caller(cookie);
    const observer = new InferenceTelemetry(metrics, logger, state.routingLog, state.usageHistory);
    const complexity = options.complexity ? new ComplexityClassifier(options.complexity, state, { embedding: (...a) => observer.routingEmbedding(...a), failed: (...a) => observer.complexityFailed(...a) }) : undefined;
    // The examples are embedded in the background: a request that needs them before then waits for the same call.
    void complexity?.warmup();
    const chat = createChatService({ inference: state, observer, settings, cache, idp, guardrails, ...(complexity ? { complexity } : {}) });
    // Before the MCP runtime starts: its first discoveries may already run tool_definition guardrails that ask a judge.
    guardrails.judgeWith(routedJudge(chat));
    const mcpRuntime = new McpRuntime({
      store,
      logger,
      settings,
      states: new StateRegistry(),
      metrics,
      sessions: createSessionFactory({ logger, ...(options.env ? { env: options.env } : {}) }),
      defaultTokenEndpoint: async () => (idp.enabled ? (await idp.metadata()).tokenEndpoint : null),
      ...(options.mcpTiming ? { timing: options.mcpTiming } : {}),
      guardrails: { guardrails, callerOf: guardrailCallers(state), callOut: callOutChecks(state, guardrails.judge), random: state.random },
    });
    runtime = mcpRuntime;
    await mcpRuntime.start();
    const oauth2Store = new OAuth2Store(store);
    await oauth2Store.load();
    await cluster.start();
    // Other nodes' admin writes and reloads reach this node's caches through the database.
    const changeListener = new ChangeListener({ store, logger, handlers: configChangeHandlers({ store, logger, settings, inference: state, runtime: mcpRuntime, guardrails, virtualServers, pricing, ssoLogin, auth }) });
    changes = changeListener;
    const sharedLimits = (shared = startSharedLimits({
      store,
      registry: cluster,
      inference: state,
      logger,
      redis: options.redis,
      ...(inferenceOptions.clock ? { clock: inferenceOptions.clock } : {}),
      announceBackoff: (backoff) => announceKeyBackoff(changeListener, backoff),
    }));
    await changeListener.start();
    const publisher = new NodeStatePublisher({ store, runtime: mcpRuntime, logger });
    nodeStates = publisher;
    publisher.start();
    const deps: ServiceDeps = { store, logger, settings, auth, runtime: mcpRuntime, inference: state, oauth2: oauth2Store, pricing, modelLists, cache, cluster, idp, ssoSession, ssoLogin, guardrails, virtualServers, ...(options.tracing ? { tracing: options.tracing } : {}) };
    const implemented = implementServices(deps);
    const services = implemented.services;
    const reflection = reflectionRoutes(services);
    const routes = (router: ConnectRouter) => {
      implemented.register(router);
      reflection(router);
    };
    const interceptors = serviceInterceptors(deps);
    const maxBodyBytes = options.client?.maxRequestBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
    // Agent mode sits in front of the single-call service: it injects MCP tools and runs the tool loop.
    const agent = createAgentService({ chat, runtime: mcpRuntime, inference: state, settings, auth, observer, idp, ssoSession });
    const oauth2 = new OAuth2Server({ store: oauth2Store, secrets: await oauth2Store.secrets(), virtualKeys: state.virtualKeys, logger, maxBodyBytes, resourcePath: MCP_PATH });
    const mcpEndpoint = createMcpEndpoint({
      tools: new McpServerTools({ runtime: mcpRuntime, inference: state, settings, auth, idp, ssoSession }),
      runtime: mcpRuntime,
      virtualServers,
      oauth: { server: oauth2, mode: () => settings.client.mcpServerAuthMode },
      logger,
      version: VERSION,
      maxBodyBytes,
      ...(options.mcpSessions ? { limits: options.mcpSessions } : {}),
    });
    const handler = createHttpHandler({
      routes,
      interceptors,
      services,
      restTransport: createInProcessTransport(routes, interceptors),
      maxBodyBytes,
      logger,
      version: VERSION,
      metrics,
      metricsAuth: auth,
      chatCompletions: createChatCompletionsHandler({ chat: agent, maxBodyBytes, logger }),
      responses: createResponsesHandler({ chat: agent, maxBodyBytes, logger }),
      messages: createMessagesHandler({ chat: agent, maxBodyBytes, logger }),
      countTokens: createCountTokensHandler({ chat: agent, maxBodyBytes, logger }),
      modelLookup: createModelLookup({ inference: state, settings, idp }),
      compatModelNames: createCompatModelNames({ inference: state, settings, idp }),
      // Embeddings have no tools to inject: they go to the single-call service directly.
      embeddings: createEmbeddingsHandler({ chat, maxBodyBytes, logger }),
      readiness,
      mcp: mcpEndpoint,
      oauth2: { server: oauth2, enabled: () => settings.client.mcpServerAuthMode !== "headers" },
      hostGuard: createHostGuard(host, () => settings.client),
      ...(tracing ? { tracing } : {}),
      sso: createSsoRoutes({
        login: ssoLogin,
        base: (req) => settings.client.mcpExternalClientUrl.trim() || (originOfHeaders(req.headers) ?? url),
        logger,
      }),
      bearerCheck: (authorization) => (idp.enabled && jwtBearer(authorization) !== null ? bearerRefusal(idp, authorization, (value) => isVirtualKey(state, value)) : null),
    });
    serve = handler;
    logger.info({ url, embedded_database: store.embedded }, "gateway listening");
    readiness.reportConnecting(() => mcpRuntime.stillConnecting());
    void mcpRuntime.firstConnectionsDone().then(() => readiness.done("mcp_connections"));

    let closing: Promise<void> | undefined;
    let reloading: Promise<void> = Promise.resolve();
    const reloadOnce = async (next: Partial<AppOptions>): Promise<void> => {
      const nextAuth = next.auth ?? AUTH_OFF;
      checkExposure(host, nextAuth, options.requireAuth ?? false, logger);
      // Judged by the policy read at start: a changed network.egress applies only at the next start.
      checkConfiguredDestinations(egress, next);
      const changes = await reloadSeededConfig(seedInputOf(next), { store, logger, settings, inference: state, runtime: mcpRuntime, guardrails, virtualServers });
      for (const name of changes.providers) void modelLists.refetch(name).catch((err: unknown) => logger.warn({ provider: name, err }, "could not store the provider's model list"));
      const authChanged = auth.reconfigure(nextAuth);
      pricing.reconfigure(next.pricing ?? NO_PRICING_URL);
      if (idp.reconfigure(next.sso ?? SSO_OFF)) logger.info({ issuer: (next.sso ?? SSO_OFF).issuer }, "single sign-on settings applied from the config file");
      if (authChanged) logger.info({ enabled: nextAuth.enabled }, "admin authentication settings applied from the config file");
      const atNextStart: string[] = [];
      if ((next.databaseUrl ?? "") !== (options.databaseUrl ?? "")) atNextStart.push("database.url");
      if (JSON.stringify(next.redis ?? null) !== JSON.stringify(options.redis ?? null)) atNextStart.push("redis");
      if (JSON.stringify(next.server ?? defaultServerLimits()) !== JSON.stringify(serverLimits)) atNextStart.push("server");
      if ((next.client?.maxRequestBodyBytes ?? DEFAULT_MAX_BODY_BYTES) !== maxBodyBytes) atNextStart.push("client.max_request_body_bytes");
      if (JSON.stringify(next.tracing ?? null) !== JSON.stringify(options.tracing ?? null)) atNextStart.push("telemetry.otlp");
      if (JSON.stringify(next.complexity ?? null) !== JSON.stringify(options.complexity ?? null)) atNextStart.push("routing.complexity");
      const noEgress = { allow: [], deny: [] };
      if (JSON.stringify(next.egress ?? noEgress) !== JSON.stringify(options.egress ?? noEgress)) atNextStart.push("network.egress");
      for (const field of atNextStart) logger.warn({ field }, `config file changes ${field}; it takes effect at the next start`);
      const changed = describeChanges(changes, authChanged);
      logger.info({ changed }, Object.keys(changed).length === 0 ? "config file re-read: nothing to apply" : "config file reloaded");
    };
    return {
      url,
      port: address.port,
      store,
      settings,
      logger,
      runtime: mcpRuntime,
      metrics,
      guardrails,
      reload(next) {
        // One reload at a time: each seeds the store in its own transaction against what the last one left.
        const run = reloading.then(() => reloadOnce(next));
        reloading = run.catch(() => undefined);
        return run;
      },
      close() {
        closing ??= (async () => {
          unwatchLabels();
          pricing.stop();
          modelLists.close();
          // Open MCP streams would otherwise hold the server's close until its grace period ends.
          await mcpEndpoint.close();
          await server.close();
          await changeListener.stop();
          await publisher.stop();
          await flusher.stop();
          // After the server closed, so no request still spends from the slices given back.
          await sharedLimits?.stop();
          await cache.close();
          await cluster.stop();
          await state.close();
          await mcpRuntime.shutdown();
          await store.close();
          // Last, so the spans of the requests that finished while stopping are exported too.
          await tracing?.shutdown();
          logger.info("gateway stopped");
        })();
        return closing;
      },
    };
  } catch (err) {
    // A failed start (a bad config entry, say) must not leave stdio children or upstream connections behind.
    pricingSync?.stop();
    await server.close();
    await changes?.stop();
    await nodeStates?.stop();
    await usageFlusher?.stop();
    await responseCache?.close();
    await shared?.stop();
    await nodes?.stop();
    await inference?.close();
    await runtime?.shutdown();
    await store.close();
    await tracing?.shutdown();
    throw err;
  }
}

/**
 * The response cache over the store. pgvector is made available when the database has it; semantic
 * caching configured (an embedding model, or a config-file key in semantic mode) without it, or without an
 * embedding model (cache.embedding or the catalog's default), stops the start.
 */
async function startResponseCache(store: Store, state: InferenceState, options: AppOptions, logger: Logger): Promise<ResponseCache> {
  const embedding = options.cache?.embedding ?? null;
  const semanticKey = (options.inference?.virtualKeys ?? []).findIndex((key) => {
    const settings = key["cache"];
    return settings !== null && typeof settings === "object" && (settings as Record<string, unknown>)["mode"] === "semantic";
  });
  const configured = embedding !== null || semanticKey >= 0;
  // Without cache.embedding the default embedding model may serve keys made later, so pgvector is wanted
  // whenever the database has it; only a start that asks for semantic caching fails for want of it.
  const vectorSchema = await ensureVectorExtension(store).catch((err: unknown) => {
    if (configured) throw err;
    logger.warn({ err }, "could not make the pgvector extension available; semantic caching is off");
    return null;
  });
  const cache = new ResponseCache({
    table: new ResponseCacheTable(store),
    logger,
    clock: options.inference?.clock ?? Date.now,
    embedder: createProviderEmbedder(state, embedding),
    vectorSchema,
    ...(options.cache?.limits ? { limits: options.cache.limits } : {}),
  });
  const problem = cache.semanticProblem;
  if (problem !== null && configured) {
    const field = semanticKey >= 0 ? `governance.virtual_keys[${semanticKey}].cache.mode` : "cache.embedding";
    throw new GatewayError("failed_precondition", `${field}: ${problem}`, { field });
  }
  cache.start();
  return cache;
}

/** True when `value` is a configured virtual key (the registry throws for unknown values). */
function isVirtualKey(state: InferenceState, value: string): boolean {
  try {
    return state.virtualKeys.resolve(value) !== null;
  } catch {
    return false;
  }
}

function stripBodyLimit(client: ClientSettings & { maxRequestBodyBytes?: number }): ClientSettings {
  const { maxRequestBodyBytes: _ignored, ...rest } = client;
  return rest;
}

/** The sections of the options that seed the store, at boot and on every reload. */
function seedInputOf(options: Partial<AppOptions>): SeedInput {
  const inference = options.inference ?? { providers: {}, virtualKeys: [] };
  return {
    ...(options.toolManager ? { toolManager: options.toolManager } : {}),
    ...(options.loadBalancer ? { loadBalancer: options.loadBalancer } : {}),
    ...(options.client ? { client: stripBodyLimit(options.client) } : {}),
    mcpClients: options.mcpClients ?? [],
    providers: inference.providers,
    virtualKeys: inference.virtualKeys,
    routingRules: inference.routingRules ?? [],
    groups: inference.groups ?? { business_unit: [], customer: [], team: [] },
    guardrails: options.guardrails ?? [],
    virtualMcpServers: options.virtualMcpServers ?? [],
  };
}

/** What a reload changed, for its log line: only the sections that changed. */
function describeChanges(changes: SeedChanges, authChanged: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (changes.toolManager) out["tool_manager_config"] = true;
  if (changes.client) out["client"] = true;
  if (changes.loadBalancer) out["load_balancer_config"] = true;
  if (changes.mcpClients.length > 0) out["mcp_clients"] = changes.mcpClients.map((client) => client.name);
  if (changes.providers.length > 0) out["providers"] = changes.providers;
  if (changes.virtualKeyIds.length > 0) out["virtual_keys"] = changes.virtualKeyIds;
  if (changes.routingRuleIds.length > 0) out["routing_rules"] = changes.routingRuleIds;
  if (changes.groupIds.length > 0) out["groups"] = changes.groupIds;
  if (changes.guardrailIds.length > 0) out["guardrails"] = changes.guardrailIds;
  if (changes.virtualMcpServerNames.length > 0) out["virtual_mcp_servers"] = changes.virtualMcpServerNames;
  if (authChanged) out["auth_config"] = true;
  return out;
}

/** The parts of AppOptions a validated config file decides. */
export function appOptionsFromConfig(file: GatewayFileConfig): Partial<AppOptions> {
  const auth = file.authConfig;
  return {
    ...(file.database.url ? { databaseUrl: file.database.url } : {}),
    ...(file.redis.url ? { redis: { url: file.redis.url, keyPrefix: file.redis.keyPrefix } } : {}),
    server: file.server,
    auth: {
      enabled: auth.isEnabled,
      username: auth.adminUsername ?? "",
      password: auth.adminPassword ?? "",
      sessionTtlMs: auth.sessionTtlMs,
    },
    sso: file.sso,
    toolManager: { ...file.mcp.toolManagerConfig },
    pricing: { url: file.pricing.pricingUrl, syncIntervalMs: file.pricing.syncIntervalMs },
    loadBalancer: { ...file.loadBalancer },
    egress: file.network.egress,
    client: { ...clientSettings(file.client, file.mcp.toolSyncIntervalMinutes), maxRequestBodyBytes: file.client.maxRequestBodyBytes },
    mcpClients: file.mcp.clientConfigs,
    ...(file.routing.complexity ? { complexity: file.routing.complexity } : {}),
    cache: { embedding: file.cache.embedding },
    guardrails: guardrailsFromFile(file.guardrails),
    virtualMcpServers: virtualServersFromFile(file.mcp.virtualServers, file.mcp.clientConfigs.map((client) => client.name)),
    inference: inferenceOptionsFromFile(file.providers, file.governance.virtualKeys, file.governance.routingRules, {
      business_unit: file.governance.businessUnits,
      customer: file.governance.customers,
      team: file.governance.teams,
    }),
  };
}
