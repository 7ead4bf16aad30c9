/**
 * AWS event-stream framing (application/vnd.amazon.eventstream), decoded with the AWS SDK's own codec
 * (prelude and message CRCs checked), each message handed on as an event: its `:event-type` as the
 * name, or `exception:<type>` / `error:<code>` for a failure, and its payload as the data.
 */
import type { EventStreamCodec, MessageHeaders } from "@smithy/core/event-streams";
import type { SseEvent } from "../http/sse.js";

/**
 * The codec and its package, loaded with the first Bedrock stream: a gateway without Bedrock keeps the
 * AWS packages out of its memory.
 */
let decoder: Promise<{ codec: EventStreamCodec; getChunkedStream: typeof import("@smithy/core/event-streams").getChunkedStream }> | null = null;

function loadDecoder(): NonNullable<typeof decoder> {
  decoder ??= import("@smithy/core/event-streams").then(({ EventStreamCodec, getChunkedStream }) => ({
    codec: new EventStreamCodec(
      (bytes) => Buffer.from(bytes).toString("utf8"),
      (text) => Buffer.from(text, "utf8"),
    ),
    getChunkedStream,
  }));
  return decoder;
}

function header(headers: MessageHeaders, name: string): string {
  const value = headers[name];
  return value !== undefined && value.type === "string" ? value.value : "";
}

/** Yields each message of an event stream as an event. */
export async function* decodeEventStream(body: AsyncIterable<Uint8Array>): AsyncGenerator<SseEvent> {
  const { codec, getChunkedStream } = await loadDecoder();
  for await (const frame of getChunkedStream(body)) {
    const message = codec.decode(frame);
    const kind = header(message.headers, ":message-type") || "event";
    const name =
      kind === "event"
        ? header(message.headers, ":event-type")
        : kind === "exception"
          ? `exception:${header(message.headers, ":exception-type")}`
          : `error:${header(message.headers, ":error-code")}`;
    const data = kind === "error" ? JSON.stringify({ message: header(message.headers, ":error-message") }) : Buffer.from(message.body).toString("utf8");
    yield { event: name, data };
  }
}
