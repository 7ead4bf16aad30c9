/** JSON Schemas of the OpenAI embeddings wire format, as far as the gateway reads or writes it. */
import type { Schema } from "../rest/openapi.js";
import { FALLBACKS, MODEL, TOKENS } from "./chat-completions-schemas.js";
import { arrayOf, constant, INTEGER, openObject, text } from "./json-schema.js";

const TOKEN_ARRAY: Schema = arrayOf(TOKENS, { minItems: 1 });

const REQUEST = openObject(
  {
    model: MODEL,
    input: {
      anyOf: [{ ...text(), minLength: 1 }, arrayOf({ ...text(), minLength: 1 }, { minItems: 1 }), TOKEN_ARRAY, arrayOf(TOKEN_ARRAY, { minItems: 1 })],
      description: "Text or texts to embed; token arrays reach OpenAI-compatible providers only.",
    },
    encoding_format: { type: "string", enum: ["float", "base64"], default: "float" },
    dimensions: { ...INTEGER, minimum: 1 },
    fallbacks: FALLBACKS,
  },
  ["model", "input"],
);

const EMBEDDING = openObject(
  {
    object: constant("embedding"),
    index: INTEGER,
    embedding: { anyOf: [arrayOf({ type: "number" }), text("base64 of little-endian float32 values")] },
  },
  ["object", "index", "embedding"],
);

const LIST = openObject(
  {
    object: constant("list"),
    data: arrayOf(EMBEDDING),
    model: text(),
    usage: openObject({ prompt_tokens: TOKENS, total_tokens: TOKENS }),
  },
  ["object", "data"],
);

/** The embeddings component schemas by name. */
export const EMBEDDINGS_SCHEMAS: Readonly<Record<string, Schema>> = {
  EmbeddingsRequest: REQUEST,
  EmbeddingsList: LIST,
};
