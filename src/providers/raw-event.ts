/**
 * The text a streamed event arrived as, kept beside the parsed chunk while the chunk is unchanged, so the
 * wire writer sends the upstream's own bytes instead of serialising every chunk again. Code that changes
 * a chunk in place after it was marked must call forgetRawText, or the caller would get the old text.
 */
import type { JsonObject } from "./types.js";

const RAW_TEXT = new WeakMap<JsonObject, string>();

/** Marks `chunk` as exactly `text` (one line of JSON; text with a line break is not kept, SSE would split it). */
export function withRawText(chunk: JsonObject, text: string): JsonObject {
  if (!text.includes("\n") && !text.includes("\r")) RAW_TEXT.set(chunk, text);
  return chunk;
}

/** The text `chunk` arrived as, when it is unchanged since; undefined otherwise. */
export function rawTextOf(chunk: JsonObject): string | undefined {
  return RAW_TEXT.get(chunk);
}

/** Drops the mark of a chunk about to change. */
export function forgetRawText(chunk: JsonObject): void {
  RAW_TEXT.delete(chunk);
}
