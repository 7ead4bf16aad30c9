/**
 * The text a streamed event arrived as, kept beside the parsed chunk while the chunk is unchanged, so the
 * wire writer sends the upstream's own bytes instead of serialising every chunk again. Code that changes
 * a chunk in place after it was marked must call forgetRawText, or the caller would get the old text.
 *
 * The mark is a symbol-keyed property naming the object it was made for: a WeakMap entry per chunk cost
 * several times the property (its ephemeron table grows and is swept with every streamed chunk), and a
 * copy of a marked chunk (`{ ...chunk, model }`) carries the property but is not its owner, so it is
 * written out as itself. JSON.stringify and Object.keys never see a symbol key.
 */
import { parseJsonObject } from "./http/upstream-http.js";
import type { JsonObject } from "./types.js";

const RAW_TEXT = Symbol("gw.rawText");

/** The text a chunk arrived as, and the chunk it belongs to. */
interface RawMark {
  owner: object;
  text: string;
}

/**
 * A chunk that was never parsed: it has no fields of its own, only its text (textOnlyChunk), in a private
 * field. Its class is its mark, so it costs one object where a marked chunk costs two, and a copy, a plain
 * object without the field, is not taken for it.
 */
class TextOnlyChunk {
  readonly #text: string;

  constructor(text: string) {
    this.#text = text;
  }

  /** The text of a text-only chunk; undefined for any other object. */
  static textOf(chunk: object): string | undefined {
    return #text in chunk ? (chunk as TextOnlyChunk).#text : undefined;
  }
}

type Marked = { [RAW_TEXT]?: RawMark | undefined };

/** Marks `chunk` as exactly `text` (one line of JSON; text with a line break is not kept, SSE would split it). */
export function withRawText(chunk: JsonObject, text: string): JsonObject {
  if (!text.includes("\n") && !text.includes("\r")) (chunk as Marked)[RAW_TEXT] = { owner: chunk, text };
  return chunk;
}

/** The text `chunk` arrived as, when it is unchanged since; undefined otherwise. */
export function rawTextOf(chunk: JsonObject): string | undefined {
  const text = TextOnlyChunk.textOf(chunk);
  if (text !== undefined) return text;
  const mark = (chunk as Marked)[RAW_TEXT];
  return mark !== undefined && mark.owner === chunk ? mark.text : undefined;
}

/**
 * A chunk known only as its text (one line of JSON, unparsed), for a consumer that writes chunks out as
 * their text and reads none of their fields: parsing every streamed chunk was a large share of what a
 * stream cost. Anything that does read a chunk's fields passes it through chunkFields first.
 */
export function textOnlyChunk(text: string): JsonObject {
  // It has no string keys: as a JsonObject it reads as empty, which is what it holds until parsed.
  return new TextOnlyChunk(text) as unknown as JsonObject;
}

/** The chunk's fields: the chunk itself, or a text-only chunk's text parsed (null when that is not a JSON object). */
export function chunkFields(chunk: JsonObject): JsonObject | null {
  const text = TextOnlyChunk.textOf(chunk);
  if (text === undefined) return chunk;
  const fields = parseJsonObject(text);
  return fields === null ? null : withRawText(fields, text);
}

/** Drops the mark of a chunk about to change. */
export function forgetRawText(chunk: JsonObject): void {
  (chunk as Marked)[RAW_TEXT] = undefined;
}

const WIRE_TEXT = Symbol("gw.wireText");

/** The text a batch's leading chunks arrived as, one after another, and how many chunks it holds. */
export interface WireText {
  text: string;
  count: number;
  /** The same as the upstream's bytes, when they are known to be exactly `text` in UTF-8. */
  bytes: Uint8Array | undefined;
}

type WireMarked = { [WIRE_TEXT]?: WireText };

/**
 * Marks a batch of chunks from one upstream read: its first `count` chunks, each marked with its raw text,
 * arrived together as `text` (and as `bytes`, when given), exactly `data: <raw text>\n\n` each. A writer that
 * frames chunks that way may send `text` or `bytes` for them instead of framing each again (after checking
 * each still has its raw text).
 */
export function withWireText(batch: JsonObject[], text: string, count: number, bytes?: Uint8Array): void {
  (batch as WireMarked)[WIRE_TEXT] = { text, count, bytes };
}

/** The wire text of a batch's leading chunks, when withWireText marked it. */
export function wireTextOf(batch: readonly JsonObject[]): WireText | undefined {
  return (batch as WireMarked)[WIRE_TEXT];
}
