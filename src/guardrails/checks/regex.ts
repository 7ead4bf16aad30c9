/**
 * The `regex` check: the operator's own patterns. They run on re2js, a pure-JavaScript port of RE2, rather
 * than on JavaScript's RegExp: RegExp backtracks, so a pattern such as `(a+)+$` can take exponential time
 * on a crafted text, and these patterns run on every request's content, which callers control. RE2 matches
 * in time linear in the text for any pattern; the price is RE2's syntax (no backreferences, no lookaround),
 * and a pattern using those is refused when the check is compiled, with RE2's reason. Heuristics that look
 * for nested quantifiers miss polynomial cases (`\d*\d*\d*x`); a linear-time engine has none to miss.
 *
 * Scanning first asks one combined pattern whether anything matches at all, on RE2's DFA, which reads the
 * text once and builds no match objects; only when something does are the patterns run one by one for
 * their positions.
 */
import { RE2JS } from "re2js";
import { invalidCheck, nonEmptyStrings, NO_FINDINGS, rejectUnknownSettings, type ContentCheck, type Finding, type RegexCheckConfig } from "../check-types.js";

/** Compiles a `regex` check: `patterns` in RE2 syntax, `case_insensitive` (default false) for all of them. */
export function compileRegexCheck(config: RegexCheckConfig, field = "check"): ContentCheck {
  rejectUnknownSettings(config, ["patterns", "case_insensitive"], field);
  if (config.case_insensitive !== undefined && typeof config.case_insensitive !== "boolean") {
    throw invalidCheck(`${field}.case_insensitive`, "must be true or false");
  }
  const flags = config.case_insensitive === true ? RE2JS.CASE_INSENSITIVE : 0;
  const sources = nonEmptyStrings(config.patterns, `${field}.patterns`);
  const patterns = sources.map((source, i) => compilePattern(source, flags, `${field}.patterns[${i}]`));
  const any = combined(sources, flags);
  return {
    type: "regex",
    scan: (text) => ((any === null ? patterns.some((p) => p.test(text)) : any.test(text)) ? findAll(patterns, text) : NO_FINDINGS),
  };
}

function compilePattern(source: string, flags: number, field: string): RE2JS {
  let pattern: RE2JS;
  try {
    pattern = RE2JS.compile(source, flags);
  } catch (err) {
    throw invalidCheck(field, `not a valid RE2 pattern (${err instanceof Error ? err.message : String(err)})`);
  }
  // A pattern that can match the empty text matches some texts at every position, flagging everything.
  if (pattern.test("")) throw invalidCheck(field, "matches the empty text, so it would match every text");
  return pattern;
}

/** One pattern that matches where any of them does, or null where joining them is refused (e.g. a group name used twice). */
function combined(sources: readonly string[], flags: number): RE2JS | null {
  try {
    return RE2JS.compile(sources.map((s) => `(?:${s})`).join("|"), flags);
  } catch {
    return null;
  }
}

/** The matches of every pattern, in order; where two overlap, both are kept (a redaction merges them). */
function findAll(patterns: readonly RE2JS[], text: string): readonly Finding[] {
  const found: Finding[] = [];
  patterns.forEach((pattern, i) => {
    if (!pattern.test(text)) return;
    const m = pattern.matcher(text);
    while (m.find()) {
      const start = m.start();
      const end = m.end();
      if (end > start) found.push({ kind: "regex", start, end, rule: `patterns[${i}]` });
    }
  });
  return found.length === 0 ? NO_FINDINGS : found.sort((a, b) => a.start - b.start || b.end - a.end);
}
