/** The keywords check: a corpus of word lists and texts, and the check's configuration. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { NO_FINDINGS } from "../../../src/guardrails/check-types.js";
import { compileKeywordsCheck } from "../../../src/guardrails/checks/keywords.js";
import { corpus, texts } from "./corpus.js";

interface KeywordsCorpus {
  cases: { name: string; words: string[]; text: string; matches: string[] }[];
}

for (const { name, words, text, matches } of corpus<KeywordsCorpus>("keywords").cases) {
  test(`matches ${name}`, () => {
    assert.deepEqual(texts(text, compileKeywordsCheck({ type: "keywords", words }).scan(text)), matches);
  });
}

test("reports each finding as kind keyword", () => {
  assert.deepEqual(compileKeywordsCheck({ type: "keywords", words: ["falcon"] }).scan("a falcon"), [{ kind: "keyword", start: 2, end: 8 }]);
});

test("matches any of a long list in one scan", () => {
  const words = Array.from({ length: 500 }, (_, i) => `codeword${i}`);
  const check = compileKeywordsCheck({ type: "keywords", words });
  assert.deepEqual(texts("codeword7 and codeword499 but not codeword500", check.scan("codeword7 and codeword499 but not codeword500")), ["codeword7", "codeword499"]);
});

test("answers the shared empty result when no word occurs", () => {
  assert.equal(compileKeywordsCheck({ type: "keywords", words: ["falcon"] }).scan("nothing here"), NO_FINDINGS);
});

test("refuses an empty word list", () => {
  assert.throws(() => compileKeywordsCheck({ type: "keywords", words: [] }), /check\.words: must not be empty/);
});

test("refuses a blank word, naming its place", () => {
  assert.throws(() => compileKeywordsCheck({ type: "keywords", words: ["ok", "  "] }), /check\.words\[1\]: must be a non-empty string/);
});

test("refuses a word list that is not a list", () => {
  assert.throws(() => compileKeywordsCheck({ type: "keywords", words: "falcon" } as never), /check\.words: must be a list of strings/);
});
