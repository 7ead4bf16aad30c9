/**
 * The implemented services, built once and registered on every Connect router that serves them (the served
 * router and the in-process transport's). server/ and reflection read the list of services from them.
 */
import type { ResponseCache } from "../inference/response-cache.js";
import type { IdpTokens } from "./sso/idp-tokens.js";
import type { SsoLogin } from "./sso/sso-login.js";
import type { OtlpTracingOptions } from "../telemetry/otlp-tracing.js";
import type { SsoCaller } from "./inference/caller.js";
import type { DescService } from "@bufbuild/protobuf";
import type { ConnectRouter, Interceptor, ServiceImpl } from "@connectrpc/connect";
import type { RuntimeSettings } from "../config/runtime-settings.js";
import type { NodeRegistry } from "../cluster/node-registry.js";
import type { McpRuntime } from "../mcp/runtime.js";
import type { Store } from "../store/index.js";
import type { Logger } from "../telemetry/logger.js";
import { McpClientService } from "../../gen/gw/admin/v1/mcp_client_pb.js";
import { OauthService } from "../../gen/gw/admin/v1/oauth_pb.js";
import { SessionService } from "../../gen/gw/admin/v1/session_pb.js";
import { SettingsService } from "../../gen/gw/admin/v1/settings_pb.js";
import { McpToolService } from "../../gen/gw/inference/v1/tool_pb.js";
import { CredentialService } from "../../gen/gw/credential/v1/credential_pb.js";
import { ModelService, PricingService, ProviderService } from "../../gen/gw/catalog/v1/catalog_pb.js";
import type { PricingSync } from "../routing/pricing-sync.js";
import { GovernanceService } from "../../gen/gw/routing/v1/governance_pb.js";
import { createGovernanceService } from "./governance-service.js";
import { assertAccessDeclared } from "./access.js";
import type { ProviderModelLists } from "./inference/model-lists.js";
import type { InferenceState } from "../inference/state.js";
import { createModelService } from "./model-service.js";
import { createPricingService } from "./pricing-service.js";
import { createProviderService } from "./provider-service.js";
import type { AdminAuth } from "./admin-auth.js";
import { authInterceptor } from "./auth-interceptor.js";
import { createCredentialService, virtualKeyChangedHook } from "./credential-service.js";
import { errorInterceptor } from "./connect-errors.js";
import { createMcpClientService } from "./mcp-client-service.js";
import { createMcpToolService } from "./mcp-tool-service.js";
import { createOauthService } from "./oauth-service.js";
import { createSessionService } from "./session-service.js";
import { createSettingsService } from "./settings-service.js";
import { requestScopeInterceptor } from "./request-scope-interceptor.js";
import { storeInterceptor } from "./store-interceptor.js";
import { createOAuth2SessionService } from "./oauth2-session-service.js";
import type { OAuth2Store } from "./oauth2/oauth2-store.js";
import { OAuth2SessionService } from "../../gen/gw/admin/v1/oauth2_pb.js";
import { ClusterService } from "../../gen/gw/admin/v1/cluster_pb.js";
import { createClusterService } from "./cluster-service.js";
import { GuardrailService } from "../../gen/gw/admin/v1/guardrail_pb.js";
import { createGuardrailService } from "./guardrail-service.js";
import type { GuardrailSet } from "../guardrails/guardrail-set.js";
import { VirtualMcpServerService } from "../../gen/gw/admin/v1/virtual_mcp_server_pb.js";
import { createVirtualMcpServerService } from "./virtual-mcp-server-service.js";
import type { VirtualServers } from "../mcp/relay/virtual-servers.js";

/** Everything the services need. */
export interface ServiceDeps {
  store: Store;
  logger: Logger;
  settings: RuntimeSettings;
  auth: AdminAuth;
  runtime: McpRuntime;
  /** The live providers, virtual keys and usage counters of the /v1 path. */
  inference: InferenceState;
  /** The grants, tokens and keys of the /mcp OAuth server. */
  oauth2: OAuth2Store;
  /** The pricing datasheet in memory and its sync. */
  pricing: PricingSync;
  /** The providers' list-models calls. */
  modelLists: ProviderModelLists;
  /** The response cache; keys may only ask for what it can do here. */
  cache?: ResponseCache;
  /** This node's entry among the nodes sharing the database. */
  cluster: NodeRegistry;
  /** IdP bearer tokens of the SSO issuer. */
  idp?: IdpTokens;
  /** The SSO user behind a request's gw_session cookie (absent: SSO off). */
  ssoSession?: (cookie: string | null | undefined) => SsoCaller | null;
  /** SSO browser logins and their sessions (admins among them open the admin API). */
  ssoLogin?: SsoLogin;
  /** The trace export this node started with; absent: tracing off. */
  tracing?: OtlpTracingOptions;
  /** The guardrails in memory, which the request path reads. */
  guardrails: GuardrailSet;
  /** The virtual MCP servers in memory, which /mcp/<name> reads. */
  virtualServers: VirtualServers;
}

/** The implemented services, each built once, and how to register them on a router. */
export interface ImplementedServices {
  /** The services registered, in registration order. */
  readonly services: readonly DescService[];
  /** Registers the same implementation objects on `router`, however many routers are given them. */
  register(router: ConnectRouter): void;
}

/** One service and its implementation, built once. */
interface Registration {
  service: DescService;
  register(router: ConnectRouter): void;
}

/** A service and its implementation, as a registration that keeps the implementation's type. */
function bind<S extends DescService>(service: S, implementation: Partial<ServiceImpl<S>>): Registration {
  return { service, register: (router) => void router.service(service, implementation) };
}

/**
 * Builds every implemented service once; the list of services is the registrations' own, never kept as a second
 * list. Throws when one of their methods declares no access, since the auth interceptor would refuse every call
 * to it (a router serves every method of a service it is given, implemented or not).
 */
export function implementServices(deps: ServiceDeps): ImplementedServices {
  const registrations = [
    bind(McpClientService, createMcpClientService(deps)),
    bind(OauthService, createOauthService(deps)),
    bind(SettingsService, createSettingsService(deps)),
    bind(SessionService, createSessionService(deps.auth, () => deps.idp?.enabled === true, deps.ssoLogin)),
    bind(McpToolService, createMcpToolService(deps)),
    bind(CredentialService, createCredentialService(deps)),
    bind(ProviderService, createProviderService(deps)),
    bind(GovernanceService, createGovernanceService({ ...deps, onVirtualKeyChanged: virtualKeyChangedHook(deps) })),
    bind(ModelService, createModelService(deps)),
    bind(PricingService, createPricingService(deps)),
    bind(OAuth2SessionService, createOAuth2SessionService(deps)),
    bind(ClusterService, createClusterService(deps)),
    bind(GuardrailService, createGuardrailService(deps)),
    bind(VirtualMcpServerService, createVirtualMcpServerService(deps)),
  ];
  const services = registrations.map((registration) => registration.service);
  assertAccessDeclared(services.flatMap((service) => service.methods));
  return {
    services,
    register: (router) => {
      for (const registration of registrations) registration.register(router);
    },
  };
}

/** The interceptors every call goes through, outermost first. */
export function serviceInterceptors(deps: ServiceDeps): Interceptor[] {
  return [errorInterceptor(deps.logger), requestScopeInterceptor(deps.settings), storeInterceptor(deps.store), authInterceptor(deps.auth, deps.idp, deps.ssoLogin)];
}
