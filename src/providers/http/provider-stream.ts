/** Wraps an upstream SSE body as a ProviderStream: single use, socket freed on early exit or abort. */
import type { AbortSource } from "../../cancellation.js";
import type { ProviderStream, JsonObject, TokenUsage } from "../types.js";
import { parseSse, type SseEvent } from "./sse.js";
import { transportError, type UpstreamResponse } from "./upstream-http.js";

/**
 * Turns the upstream's SSE events into OpenAI JSON events. It must read the body to its end (ignoring
 * anything after the upstream's end marker) so the keep-alive socket is reused.
 */
export type EventTranslator = (events: AsyncIterable<SseEvent>) => AsyncGenerator<JsonObject>;

/** Builds the stream; `usage` reads what the translator has collected. */
export function providerStream(
  provider: string,
  res: UpstreamResponse,
  signal: AbortSource | undefined,
  translate: EventTranslator,
  usage: () => TokenUsage | null,
): ProviderStream {
  let started = false;
  return {
    status: res.status,
    usage,
    async *[Symbol.asyncIterator]() {
      if (started) throw new Error(`${provider} stream iterated twice: a provider stream is single use`);
      started = true;
      let finished = false;
      try {
        yield* translate(parseSse(res.body));
        finished = true;
      } catch (err) {
        throw transportError(provider, err, signal);
      } finally {
        // An unfinished body (consumer broke out, or an error) would hold the socket: destroying it
        // aborts the upstream request.
        if (!finished && !res.body.destroyed) res.body.destroy();
      }
    },
  };
}

/** Parses one SSE data payload as a JSON object, or null when it is not one. */
export function parseEventData(data: string): JsonObject | null {
  try {
    const parsed: unknown = JSON.parse(data);
    return parsed && typeof parsed === "object" && !Array.isArray(parsed) ? (parsed as JsonObject) : null;
  } catch {
    return null;
  }
}
