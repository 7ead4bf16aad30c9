/**
 * HTTP to upstream providers over an undici Agent, which keeps one keep-alive pool per origin.
 * Every failure leaves here as a ProviderError, except the caller's own abort, which is rethrown as is.
 */
import { Agent, errors as undiciErrors, request, type Dispatcher } from "undici";
import { GatewayError } from "../../errors.js";
import { fromUpstreamStatus, ProviderError, upstreamText } from "../provider-error.js";
import type { JsonObject } from "../types.js";

/** Pool sizing for provider traffic; idle sockets are kept so the hot path skips TCP and TLS set-up. */
const AGENT_OPTIONS: Agent.Options = { keepAliveTimeout: 30_000, keepAliveMaxTimeout: 600_000, connections: 256, pipelining: 1 };

/** Generous default: a long completion may take minutes before its headers arrive. */
const DEFAULT_TIMEOUT_MS = 600_000;

/** Creates the keep-alive dispatcher one adapter uses for all its calls. */
export function createUpstreamAgent(): Agent {
  return new Agent(AGENT_OPTIONS);
}

/** One upstream call. */
export interface UpstreamCall {
  method: "GET" | "POST";
  url: string;
  headers: Record<string, string>;
  body?: JsonObject;
  signal?: AbortSignal | undefined;
  timeoutMs?: number | undefined;
}

/** A 2xx upstream answer whose body is still unread. */
export interface UpstreamResponse {
  status: number;
  body: Dispatcher.ResponseData["body"];
}

/**
 * Sends the call and waits for the headers. A non-2xx status is read to its end and thrown as a
 * ProviderError, so the connection goes back to the pool.
 */
export async function send(dispatcher: Dispatcher, provider: string, call: UpstreamCall): Promise<UpstreamResponse> {
  const timeout = call.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  // undici's headersTimeout runs on a coarse shared clock; our own timer bounds the wait for headers
  // precisely, and its signal also aborts the body if the caller's signal does.
  const deadline = new AbortController();
  const timer = setTimeout(() => {
    deadline.abort(new ProviderError(provider, null, "provider_timeout", `${provider} sent no response headers within ${timeout} ms`));
  }, timeout);
  // Forwarding the caller's abort by hand: AbortSignal.any costs several microseconds per call on Node 20.
  const caller = call.signal;
  if (caller?.aborted) deadline.abort(caller.reason);
  else caller?.addEventListener("abort", () => deadline.abort(caller.reason), { once: true });
  const signal = deadline.signal;
  let res: Dispatcher.ResponseData;
  try {
    res = await request(call.url, {
      dispatcher,
      method: call.method,
      headers: call.body === undefined ? call.headers : { "content-type": "application/json", ...call.headers },
      body: call.body === undefined ? null : JSON.stringify(call.body),
      signal,
      bodyTimeout: timeout,
    });
  } catch (err) {
    throw transportError(provider, deadline.signal.aborted ? deadline.signal.reason : err, call.signal);
  } finally {
    clearTimeout(timer);
  }
  if (res.statusCode < 200 || res.statusCode >= 300) {
    let text = "";
    try {
      text = await res.body.text();
    } catch (err) {
      throw transportError(provider, err, call.signal);
    }
    throw fromUpstreamStatus(provider, res.statusCode, text);
  }
  return { status: res.statusCode, body: res.body };
}

/** Reads a 2xx body as a JSON object. */
export async function readJsonObject(provider: string, res: UpstreamResponse, signal?: AbortSignal): Promise<JsonObject> {
  let text: string;
  try {
    text = await res.body.text();
  } catch (err) {
    throw transportError(provider, err, signal);
  }
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) return parsed as JsonObject;
  } catch {
    // Reported below with the text that failed.
  }
  throw new ProviderError(provider, res.status, "provider_unavailable", `${provider} answered HTTP ${res.status} with a body that is not a JSON object: ${upstreamText(text, 200)}`);
}

/**
 * Classifies a failure with no usable response: the caller's abort is rethrown unchanged (nobody is
 * left to answer), timeouts become provider_timeout, anything else provider_unavailable.
 */
export function transportError(provider: string, err: unknown, signal?: AbortSignal): unknown {
  if (signal?.aborted) return signal.reason ?? err;
  if (err instanceof GatewayError) return err;
  if (
    err instanceof undiciErrors.HeadersTimeoutError ||
    err instanceof undiciErrors.BodyTimeoutError ||
    err instanceof undiciErrors.ConnectTimeoutError
  ) {
    return new ProviderError(provider, null, "provider_timeout", `${provider} did not answer in time: ${upstreamText(err.message)}`, err);
  }
  const message = err instanceof Error ? err.message || err.name : String(err);
  const code = err instanceof Error && "code" in err && typeof err.code === "string" ? ` (${err.code})` : "";
  return new ProviderError(provider, null, "provider_unavailable", `${provider} could not be reached: ${upstreamText(message)}${code}`, err);
}

/** Joins a base URL and a path, dropping trailing slashes and a trailing `/v1` the path adds again. */
export function joinUrl(baseUrl: string, path: string): string {
  let base = baseUrl.replace(/\/+$/, "");
  if (path.startsWith("/v1/") && base.endsWith("/v1")) base = base.slice(0, -3);
  return `${base}${path}`;
}
