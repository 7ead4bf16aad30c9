/**
 * What every stage of the engine reads: the in-memory inference state, the observer that hears each event,
 * the runtime settings, and the optional features (absent when not configured).
 */
import type { RuntimeSettings } from "../config/runtime-settings.js";
import type { GuardrailSet } from "../guardrails/guardrail-set.js";
import type { InferenceObserver } from "../telemetry/inference-observer.js";
import type { ComplexityClassifier } from "./complexity-classifier.js";
import type { IdpBearers } from "./credential.js";
import { HeaderForwarding } from "./forwarded-headers.js";
import { KeyPlans } from "./key-plans.js";
import type { ResponseCache } from "./response-cache.js";
import { RoutingLogRecords } from "./rule-variables.js";
import type { Inference } from "./state.js";

/** What the engine is built from. */
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
  idp?: IdpBearers;
  /** The guardrails in memory; absent or empty: the guardrail stages return at once. */
  guardrails?: GuardrailSet;
}

/** The deps plus what is derived from them once, not per request. */
export interface Engine extends ChatDeps {
  /** client.allowed_headers compiled; rebuilt when the settings change. */
  forwarding: HeaderForwarding;
  /** Builds the routing log's records. */
  readonly routingLogRecords: RoutingLogRecords;
  /** What each virtual key's requests share, built once per key and configuration. */
  readonly keyPlans: KeyPlans;
}

/** The engine's shared parts over `deps`, kept current with the settings. */
export function engineOf(deps: ChatDeps): Engine {
  const engine: Engine = { ...deps, forwarding: new HeaderForwarding(deps.settings.client.allowedHeaders), routingLogRecords: new RoutingLogRecords(), keyPlans: new KeyPlans(deps.inference.hierarchy) };
  deps.settings.onChange((settings) => {
    engine.forwarding = new HeaderForwarding(settings.client.allowedHeaders);
  });
  return engine;
}
