/** The bundle build's ASCII pass: non-ASCII text in comments becomes "?", code is never touched. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { asciiComments } from "../../src/build-bundle.js";

test("replaces each non-ASCII character of a comment with one question mark", () => {
  const code = "// request’s body\nconst a = 1; /* Wärting */ const b = 2;\n";
  const out = asciiComments(code);
  assert.equal(out, "// request?s body\nconst a = 1; /* W?rting */ const b = 2;\n");
  assert.equal(out?.length, code.length, "columns hold for the source map");
});

test("gives a surrogate pair two question marks, one per UTF-16 unit", () => {
  assert.equal(asciiComments("/* 🚀 */ export {};"), "/* ?? */ export {};");
});

test("answers null when non-ASCII text is outside a comment", () => {
  assert.equal(asciiComments('// fine\nexport const s = "é";'), null);
});

test("returns ASCII code as it is", () => {
  const code = 'export const s = "\\u00e9"; // escaped already\n';
  assert.equal(asciiComments(code), code);
});
