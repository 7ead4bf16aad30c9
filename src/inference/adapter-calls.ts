/**
 * One upstream call: the adapter's call for the request's API (a provider without a Messages API of its own
 * is served it through its chat calls), and the options it goes with (the key, the forwarded headers, the
 * client's own bytes when the model is not rewritten, timeouts).
 */
import type { RequestAbort } from "../cancellation.js";
import { GatewayError } from "../errors.js";
import { bridgeMessages, bridgeMessagesStream } from "../providers/messages-bridge/bridge.js";
import type { CallOptions, ClientBody, ProviderAdapter, ProviderResult, ProviderStream } from "../providers/types.js";
import type { KeyChoice } from "../routing/key-selection.js";
import { RoutingError } from "../routing/routing-error.js";
import type { RouteTarget } from "../routing/types.js";
import type { AttemptSpan } from "../telemetry/tracing.js";
import type { MethodBody } from "./calls.js";
import type { Engine } from "./engine-deps.js";
import type { InferenceProvider } from "./state.js";

/** The request naming the target's upstream model: the request itself when it already does (no adapter changes its request). */
function withModel<T extends { model: string }>(body: T, model: string): T {
  return body.model === model ? body : { ...body, model };
}

/** The adapter's non-streaming call for the method, with the target's upstream model. */
export function callAdapter(adapter: ProviderAdapter, call: MethodBody, model: string, options: CallOptions): Promise<ProviderResult> {
  if (call.method === "responses") return adapter.responses(withModel(call.body, model), options);
  if (call.method === "embedding") return adapter.embeddings(withModel(call.body, model), options);
  if (call.method === "messages") {
    const req = withModel(call.body, model);
    return adapter.messages ? adapter.messages(req, options) : bridgeMessages(adapter, req, options);
  }
  return adapter.chat(withModel(call.body, model), options);
}

/** The adapter's streaming call for the method, with the target's upstream model. */
export function streamAdapter(adapter: ProviderAdapter, call: MethodBody, model: string, options: CallOptions): Promise<ProviderStream> {
  if (call.method === "embedding") throw new GatewayError("invalid_argument", "embeddings do not stream", { type: "caller_invalid_request", httpStatus: 400, field: "stream" });
  if (call.method === "responses") return adapter.responsesStream(withModel(call.body, model), options);
  if (call.method === "messages") {
    const req = withModel(call.body, model);
    return adapter.messagesStream ? adapter.messagesStream(req, options) : bridgeMessagesStream(adapter, req, options);
  }
  return adapter.chatStream(withModel(call.body, model), options);
}

/** The options of one upstream call with the key `choice` picked. */
export function callOptions(
  engine: Engine,
  call: { body: { model: string }; rawBody?: ClientBody | undefined; textChunks?: boolean | undefined; signal: RequestAbort | AbortSignal },
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
  if (call.rawBody !== undefined && call.rawBody.text !== "" && choice.upstreamModel === call.body.model) options.rawBody = call.rawBody;
  if (call.textChunks === true) options.textOnlyChunks = true;
  const timeoutMs = provider.timeoutMs ?? engine.inference.upstreamTimeoutMs;
  if (timeoutMs !== undefined) options.timeoutMs = timeoutMs;
  return options;
}

/** The provider a target names; a routing error when it is not configured. */
export function providerOf(engine: Engine, target: RouteTarget): InferenceProvider {
  const provider = engine.inference.providers.get(target.provider);
  if (provider !== undefined) return provider;
  throw new RoutingError(
    "caller_provider_not_configured",
    `provider "${target.provider}" is not configured on this gateway; add it under providers or pick another provider`,
    "model",
  );
}

