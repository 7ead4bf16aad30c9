/**
 * Applying findings to a text: each found span is masked, replaced or hashed, and overlapping spans are
 * merged first, so one piece of text is replaced once. Which check types may redact at all lives here too:
 * a redaction only makes sense where a finding is the sensitive text itself.
 */
import { sha256Hex } from "../sha256.js";
import type { CheckType, Finding } from "./check-types.js";

/** How a found span is rewritten. */
export type RedactionStrategy = "mask" | "replace" | "hash";

/** The strategies, for validation and documentation. */
export const REDACTION_STRATEGIES: readonly RedactionStrategy[] = ["mask", "replace", "hash"];

/** The replacement a `replace` redaction uses when none is configured; `<kind>` stands for the finding's kind. */
export const DEFAULT_REPLACEMENT = "[REDACTED:<kind>]";

/** A guardrail's redaction settings. */
export interface RedactionOptions {
  readonly strategy: RedactionStrategy;
  /** For `replace`; `<kind>` in it is replaced by the finding's kind. */
  readonly replacement?: string;
}

/** The check types whose findings can be redacted; the others (prompt_injection, moderation, llm_judge) can only block or warn. */
export const REDACTABLE_CHECK_TYPES: readonly CheckType[] = ["pii", "secrets", "regex", "keywords", "webhook"];

/** Whether a guardrail with a check of `type` may use the `redact` action. */
export function canRedact(type: CheckType): boolean {
  return REDACTABLE_CHECK_TYPES.includes(type);
}

/** A finding with the redaction that applies to it, for texts that several guardrails redact at once. */
export interface RedactionSpan extends Finding {
  readonly options: RedactionOptions;
}

/**
 * Sorted, with overlapping spans merged into one; the merged span keeps the kind and options of the span
 * that starts first (of spans starting together, the one listed first). Spans that only touch stay apart.
 */
export function mergeSpans<T extends Finding>(spans: readonly T[]): T[] {
  const sorted = spans.map((span, order) => ({ span, order })).sort((a, b) => a.span.start - b.span.start || a.order - b.order);
  const merged: T[] = [];
  for (const { span } of sorted) {
    const last = merged[merged.length - 1];
    if (last !== undefined && span.start < last.end) {
      if (span.end > last.end) merged[merged.length - 1] = { ...last, end: span.end };
    } else {
      merged.push(span);
    }
  }
  return merged;
}

/** `text` with every finding rewritten by `options` (default: replace with `[REDACTED:<kind>]`). */
export function redact(text: string, findings: readonly Finding[], options: RedactionOptions = { strategy: "replace" }): string {
  if (findings.length === 0) return text;
  return redactSpans(
    text,
    findings.map((f) => ({ ...f, options })),
  );
}

/** `text` with every span rewritten by its own options; spans are clipped to the text. */
export function redactSpans(text: string, spans: readonly RedactionSpan[]): string {
  if (spans.length === 0) return text;
  let out = "";
  let at = 0;
  for (const span of mergeSpans(spans)) {
    const start = Math.max(span.start, at);
    const end = Math.min(span.end, text.length);
    if (end <= start) continue;
    out += text.slice(at, start) + rewrite(text.slice(start, end), span.kind, span.options);
    at = end;
  }
  return out + text.slice(at);
}

/** The text that takes the place of `found`, a finding of `kind`. */
export function rewrite(found: string, kind: string, options: RedactionOptions): string {
  switch (options.strategy) {
    case "mask":
      // One `*` per character as a reader counts them (code points), so an emoji is not two stars.
      return "*".repeat(countCodePoints(found));
    case "hash":
      return `[${kind}:${sha256Hex(found).slice(0, 12)}]`;
    case "replace":
      return (options.replacement ?? DEFAULT_REPLACEMENT).replaceAll("<kind>", kind);
  }
}

function countCodePoints(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
    n++;
  }
  return n;
}
