/**
 * The response cache's stage: what the cache does for a request (its plan), the answer it already holds,
 * and keeping a fresh answer. Without a cache configured only the request's cache headers are checked.
 */
import { GatewayError } from "../errors.js";
import { chunkFields } from "../providers/raw-event.js";
import type { JsonObject } from "../providers/types.js";
import { headerReader } from "../http-headers.js";
import type { ChatOutcome } from "./calls.js";
import { cacheRequestHeaders } from "./cache-settings-wire.js";
import type { Engine } from "./engine-deps.js";
import type { InferenceRequest } from "./request-context.js";
import type { CacheHit, CachePlan, ResponseCache } from "./response-cache.js";

/** Reads the request's cache headers first, so a bad one is refused before anything else runs. */
export function readCacheHeaders(req: InferenceRequest): void {
  req.cacheHeaders = cacheRequestHeaders(headerReader(req.call.headers));
}

/**
 * Sets what the cache does for the routed request: no plan when caching is off for it or its API is not
 * cached. Asking for semantic caching where it cannot run is refused; a key's semantic setting then works
 * as direct. The answer memory holds is looked up at once, before any reservation.
 */
export function planCache(engine: Engine, req: InferenceRequest): void {
  const { call } = req;
  const cache = engine.cache;
  const headers = req.cacheHeaders;
  if (headers.mode === "semantic" && cache?.semanticProblem) {
    throw new GatewayError("invalid_argument", `x-gw-cache: ${cache.semanticProblem}; send x-gw-cache: direct instead`, { type: "caller_invalid_request", httpStatus: 400, field: "x-gw-cache" });
  }
  if (cache === undefined || call.method === "embedding") return;
  const primary = req.routed().primary;
  let plan = cache.plan({ method: call.method ?? "chat", provider: primary.provider, model: primary.model, body: call.body }, req.virtualKey, headers, call.rawBody?.text);
  if (plan !== null && plan.mode === "semantic" && cache.semanticProblem !== null) plan = { ...plan, mode: "direct", semantic: null };
  req.plan = plan;
  if (plan !== null) req.remembered = cache.recall(plan);
}

/** The cached answer for the request, from memory or the store; null on a miss or without a plan. */
export function lookUpCache(engine: Engine, req: InferenceRequest): Promise<CacheHit | null> | CacheHit | null {
  const { plan, remembered } = req;
  const cache = engine.cache;
  if (plan === null || cache === undefined) return null;
  return remembered ?? cache.lookup(plan, req.call.signal);
}

/** The answer of a cache hit, replayed as the original answer went out. */
export function hitOutcome(hit: CacheHit): ChatOutcome {
  if (hit.answer.kind === "json") return { kind: "json", body: hit.answer.body, raw: hit.answer.raw, cache: hit.status };
  return { kind: "stream", chunks: replay(hit.answer.events), cache: hit.status };
}

async function* replay(events: readonly JsonObject[]): AsyncGenerator<JsonObject> {
  yield* events;
}

/** Caches a fresh answer when the request has a plan: a JSON answer at once, a stream once it has ended well. */
export function keepAnswer(engine: Engine, req: InferenceRequest, outcome: ChatOutcome): ChatOutcome {
  const { plan } = req;
  const cache = engine.cache;
  if (plan === null || cache === undefined) return outcome;
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
