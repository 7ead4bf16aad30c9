import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { forgetRawText, rawTextOf, withRawText } from "../../src/providers/raw-event.js";

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
