/**
 * The Messages API forwarded as is: the caller's request goes to an Anthropic upstream unchanged (its own
 * bytes when the gateway changes nothing, else the same JSON with the target's model and without the
 * gateway's own fields), and the answer and its events come back unchanged.
 */
import type { SseEvent } from "../http/sse.js";
import { streamCutShort, streamEventObject } from "../http/upstream-http.js";
import type { ClientBody, JsonObject, TokenUsage } from "../types.js";
import { StreamUsage } from "./response-translation.js";
import { midStreamError } from "./stream-translation.js";

/** Request fields only the gateway reads; Anthropic rejects fields it does not know. */
const GATEWAY_ONLY_FIELDS: ReadonlySet<string> = new Set(["fallbacks"]);

/** The upstream body: the client's bytes when they encode exactly what would be sent, else the JSON re-encoded. */
export function passthroughBody(req: JsonObject, model: string, rawBody: ClientBody | undefined): JsonObject | Uint8Array {
  let gatewayOnly = false;
  for (const field of GATEWAY_ONLY_FIELDS) if (field in req) gatewayOnly = true;
  if (rawBody !== undefined && !gatewayOnly && req["model"] === model) return rawBody.bytes;
  const body: JsonObject = {};
  // Copied rather than deleted from: a `delete` turns the object into a slow dictionary for JSON.stringify.
  for (const field in req) if (!GATEWAY_ONLY_FIELDS.has(field)) body[field] = req[field];
  body["model"] = model;
  return body;
}

/**
 * One forwarded stream: its events as they came, the usage they report, and an `error` event raised as a
 * failure. A class, so its generator is a prototype method (see UpstreamEventStream in
 * ../http/provider-stream.ts).
 */
export class PassthroughEvents {
  private readonly tally = new StreamUsage();

  constructor(private readonly provider: string) {}

  usage(): TokenUsage | null {
    return this.tally.usage();
  }

  async *relay(events: AsyncIterable<SseEvent>): AsyncGenerator<JsonObject> {
    let stopped = false;
    for await (const event of events) {
      // Read to the end (so the socket is reused) but pass nothing after message_stop.
      if (stopped) continue;
      const payload = streamEventObject(this.provider, event.data);
      if (payload["type"] === "error") throw midStreamError(this.provider, payload);
      this.tally.observe(payload);
      yield payload;
      if (payload["type"] === "message_stop") stopped = true;
    }
    if (!stopped) throw streamCutShort(this.provider, "message_stop");
  }
}
