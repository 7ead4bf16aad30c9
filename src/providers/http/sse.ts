/** Server-sent events parsing (the WHATWG event-stream format) over a byte stream. */

/** One dispatched event: its `event:` name (default "message") and its joined `data:` lines. */
export interface SseEvent {
  event: string;
  data: string;
}

/** A bound on the bytes read: past `maxBytes` the parse fails with `error()`. */
export interface SseByteLimit {
  maxBytes: number;
  error: () => Error;
}

const LF = 10;

/**
 * Yields each event of an event stream; a trailing event without its blank line is dropped, as the format
 * says. Lines are found with indexOf from a moving position and the consumed text is cut once per network
 * chunk, so a chunk holding many events is scanned once; `limit` counts the bytes here, sparing a layer
 * of async iteration per chunk.
 */
export async function* parseSse(body: AsyncIterable<Uint8Array | string>, limit?: SseByteLimit): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder();
  let buffer = "";
  let event = "";
  let data: string[] = [];
  let bytes = 0;
  for await (const chunk of body) {
    if (limit !== undefined) {
      bytes += chunk.length;
      if (bytes > limit.maxBytes) throw limit.error();
    }
    buffer += typeof chunk === "string" ? chunk : decoder.decode(chunk, { stream: true });
    let pos = 0;
    // Where the next \r is at or after pos (-1: none left), found again only once passed.
    let cr = buffer.indexOf("\r");
    for (;;) {
      if (cr !== -1 && cr < pos) cr = buffer.indexOf("\r", pos);
      const lf = buffer.indexOf("\n", pos);
      let end: number;
      let next: number;
      if (cr !== -1 && (lf === -1 || cr < lf)) {
        // A lone \r at the end may be the first half of \r\n: wait for more bytes before splitting on it.
        if (cr === buffer.length - 1) break;
        end = cr;
        next = buffer.charCodeAt(cr + 1) === LF ? cr + 2 : cr + 1;
      } else if (lf !== -1) {
        end = lf;
        next = lf + 1;
      } else break;
      const line = buffer.slice(pos, end);
      pos = next;
      if (line === "") {
        if (data.length > 0) yield { event: event || "message", data: data.length === 1 ? (data[0] as string) : data.join("\n") };
        event = "";
        data = [];
        continue;
      }
      if (line.charCodeAt(0) === 58 /* ":" */) continue;
      const colon = line.indexOf(":");
      const field = colon === -1 ? line : line.slice(0, colon);
      let value = colon === -1 ? "" : line.slice(colon + 1);
      if (value.charCodeAt(0) === 32 /* " " */) value = value.slice(1);
      if (field === "event") event = value;
      else if (field === "data") data.push(value);
    }
    if (pos > 0) buffer = buffer.slice(pos);
  }
}
