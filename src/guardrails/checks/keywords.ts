/**
 * The `keywords` check: whole words and phrases from a list, in any case. All words are joined into one
 * regular expression, so a text is read once whatever the length of the list. "Whole word" means no letter,
 * digit or `_` (in any script) right before or after; at an edge of a keyword that is itself not a letter
 * or digit (`.net`, `c++`) no such boundary is asked for. Spaces inside a phrase match any run of white space.
 */
import { nonEmptyStrings, rejectUnknownSettings, type ContentCheck, type KeywordsCheckConfig } from "../check-types.js";
import { CombinedScanner } from "../combined-scan.js";

const WORD_CHAR = /[\p{L}\p{N}_]/u;
const NOT_AFTER_WORD_CHAR = String.raw`(?<![\p{L}\p{N}_])`;
const NOT_BEFORE_WORD_CHAR = String.raw`(?![\p{L}\p{N}_])`;

/** Compiles a `keywords` check. */
export function compileKeywordsCheck(config: KeywordsCheckConfig, field = "check"): ContentCheck {
  rejectUnknownSettings(config, ["words"], field);
  const words = nonEmptyStrings(config.words, `${field}.words`).map((w) => w.trim());
  // Longest first, so that of two keywords starting at one place ("new", "new york") the longer one is taken.
  const sorted = [...new Set(words)].sort((a, b) => b.length - a.length);
  const bounded = sorted.filter((w) => WORD_CHAR.test(firstChar(w)));
  const unbounded = sorted.filter((w) => !WORD_CHAR.test(firstChar(w)));
  const sources = [
    ...(bounded.length > 0 ? [`${NOT_AFTER_WORD_CHAR}(?:${bounded.map(wordSource).join("|")})`] : []),
    ...(unbounded.length > 0 ? [`(?:${unbounded.map(wordSource).join("|")})`] : []),
  ];
  const scanner = new CombinedScanner(sources.map((source) => ({ kind: "keyword", source })), "iu");
  return { type: "keywords", scan: (text) => scanner.scan(text) };
}

function firstChar(word: string): string {
  return String.fromCodePoint(word.codePointAt(0) ?? 0);
}

function lastChar(word: string): string {
  return [...word].at(-1) ?? "";
}

/** The pattern of one keyword: literal, white space as any run of it, and a boundary after a word character. */
function wordSource(word: string): string {
  const literal = word
    .split(/\s+/u)
    .map((part) => part.replace(/[\\^$.*+?()[\]{}|/]/g, "\\$&"))
    .join(String.raw`\s+`);
  return WORD_CHAR.test(lastChar(word)) ? `${literal}${NOT_BEFORE_WORD_CHAR}` : literal;
}
