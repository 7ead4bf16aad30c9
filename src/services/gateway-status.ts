/** GetStatus of the settings service: the response cache and the trace export, read-only and without secrets. */
import type { OtlpTracingOptions } from "../telemetry/otlp-tracing.js";
import type { ResponseCache } from "../inference/response-cache.js";
import type { Inference } from "../inference/state.js";

/** What the status needs. */
export interface GatewayStatusDeps {
  cache?: Pick<ResponseCache, "semanticProblem">;
  tracing?: OtlpTracingOptions;
  inference?: Pick<Inference, "virtualKeys">;
}

/** A collector URL without user info, query or fragment: those may carry credentials. */
export function endpointWithoutSecrets(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
  } catch {
    return "";
  }
}

/** The GetStatusResponse fields. */
export function gatewayStatus(deps: GatewayStatusDeps) {
  const keys = deps.inference?.virtualKeys;
  const keysWithCache = keys ? keys.ids().filter((id) => keys.byId(id)?.cache !== undefined).length : 0;
  const problem = deps.cache?.semanticProblem ?? null;
  const t = deps.tracing;
  return {
    cache: { enabled: deps.cache !== undefined, semanticAvailable: deps.cache !== undefined && problem === null, semanticProblem: deps.cache === undefined ? "" : (problem ?? ""), keysWithCache },
    tracing: t
      ? { enabled: true, endpoint: endpointWithoutSecrets(t.url), headerNames: Object.keys(t.headers).sort(), serviceName: t.serviceName, sampler: t.sampler, sampleRatio: t.sampleRatio, captureContent: t.captureContent }
      : { enabled: false },
  };
}
