import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { chunkFields, forgetRawText, rawTextOf, textOnlyChunk, withRawText } from "../../src/providers/raw-event.js";

describe("a streamed chunk's own text", () => {
  const text = '{"id":"c1","choices":[{"index":0,"delta":{"content":"hi"}}]}';

  test("is kept beside the chunk parsed from it", () => {
    const chunk = withRawText(JSON.parse(text) as Record<string, never>, text);
    assert.equal(rawTextOf(chunk), text);
  });

  test("is not kept when it spans lines, which one SSE data line cannot carry", () => {
    const multiline = '{"id":"c1",\n"choices":[]}';
    assert.equal(rawTextOf(withRawText(JSON.parse(multiline) as Record<string, never>, multiline)), undefined);
  });

  test("does not follow a copy of the chunk, which is written as itself", () => {
    const chunk = withRawText(JSON.parse(text) as Record<string, never>, text);
    const copy = { ...chunk, model: "renamed" };
    assert.equal(rawTextOf(copy), undefined);
    assert.equal(rawTextOf(Object.assign({}, chunk)), undefined);
  });

  test("is dropped when the chunk is about to change", () => {
    const chunk = withRawText(JSON.parse(text) as Record<string, never>, text);
    forgetRawText(chunk);
    assert.equal(rawTextOf(chunk), undefined);
  });

  test("never shows in the chunk's JSON or keys", () => {
    const chunk = withRawText(JSON.parse(text) as Record<string, never>, text);
    assert.equal(JSON.stringify(chunk), text);
    assert.deepEqual(Object.keys(chunk), ["id", "choices"]);
  });
});

describe("a text-only chunk", () => {
  const text = '{"id":"c1","choices":[{"index":0,"delta":{"content":"hi"}}]}';

  test("is written out as its text", () => {
    assert.equal(rawTextOf(textOnlyChunk(text)), text);
  });

  test("gives its fields parsed from its text, still marked with that text", () => {
    const fields = chunkFields(textOnlyChunk(text));
    assert.deepEqual(JSON.parse(JSON.stringify(fields)), JSON.parse(text));
    assert.deepEqual(Object.keys(fields ?? {}), ["id", "choices"]);
    assert.equal(rawTextOf(fields ?? {}), text);
  });

  test("is not taken for a copy of it, nor shows its text in its JSON or keys", () => {
    const chunk = textOnlyChunk(text);
    assert.equal(rawTextOf({ ...chunk }), undefined);
    assert.deepEqual(chunkFields({ ...chunk }), {});
    assert.equal(JSON.stringify(chunk), "{}");
    assert.deepEqual(Object.keys(chunk), []);
  });

  test("gives no fields when its text is not a JSON object", () => {
    assert.equal(chunkFields(textOnlyChunk('{"id": oops}')), null);
  });

  test("leaves a parsed chunk's fields as they are", () => {
    const chunk = withRawText(JSON.parse(text) as Record<string, never>, text);
    assert.equal(chunkFields(chunk), chunk);
  });
});
