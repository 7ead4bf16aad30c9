/**
 * What every built-in content check shares: the finding it reports, the interface a compiled check offers,
 * the configuration of each built-in check, and the error a bad configuration raises. A check is compiled
 * once when the configuration changes and then scans every request's text, so compiling does the costly
 * work (validation, building patterns) and scanning only reads the text.
 */
import { GatewayError } from "../errors.js";

/** Every check type a guardrail can name; the built-in ones are the content checks compiled here. */
export const CHECK_TYPES = ["pii", "secrets", "regex", "keywords", "prompt_injection", "moderation", "llm_judge", "webhook"] as const;

/** A guardrail's check type. */
export type CheckType = (typeof CHECK_TYPES)[number];

/** The check types that run in-process over the text, with no call to anything outside. */
export const CONTENT_CHECK_TYPES = ["pii", "secrets", "regex", "keywords", "prompt_injection"] as const;

/** A check type that runs in-process. */
export type ContentCheckType = (typeof CONTENT_CHECK_TYPES)[number];

/** One match in a scanned text: `[start, end)` in UTF-16 code units, as `String.prototype.slice` takes them. */
export interface Finding {
  /** What was found, e.g. `email`, `credit_card`, `aws_access_key`, `regex`, `keyword`, `prompt_injection`. */
  readonly kind: string;
  readonly start: number;
  readonly end: number;
  /** Which of the check's patterns matched, where a check has several under one kind (e.g. `role_override`, `patterns[1]`). */
  readonly rule?: string;
}

/** A compiled check: scanning is pure and synchronous, and may be called for many texts. */
export interface ContentCheck {
  readonly type: ContentCheckType;
  /** Findings in order of their start; findings of different patterns may overlap (a redaction merges them). */
  scan(text: string): readonly Finding[];
}

/** The answer of a scan that found nothing; shared, so a clean text costs no allocation. */
export const NO_FINDINGS: readonly Finding[] = Object.freeze([]);

/** `pii`: personal data; `entities` left out means all of them. */
export interface PiiCheckConfig {
  readonly type: "pii";
  readonly entities?: readonly string[];
}

/** `secrets`: credentials of well-known providers, bearer tokens, JWTs and private keys. */
export interface SecretsCheckConfig {
  readonly type: "secrets";
}

/** `regex`: the operator's own patterns, in RE2 syntax. */
export interface RegexCheckConfig {
  readonly type: "regex";
  readonly patterns: readonly string[];
  readonly case_insensitive?: boolean;
}

/** `keywords`: whole words or phrases, matched without regard to case. */
export interface KeywordsCheckConfig {
  readonly type: "keywords";
  readonly words: readonly string[];
}

/** `prompt_injection`: the built-in set of injection and jailbreak patterns. */
export interface PromptInjectionCheckConfig {
  readonly type: "prompt_injection";
}

/** The configuration of any built-in content check. */
export type ContentCheckConfig =
  | PiiCheckConfig
  | SecretsCheckConfig
  | RegexCheckConfig
  | KeywordsCheckConfig
  | PromptInjectionCheckConfig;

/** The stable type of the error a bad check configuration raises (its code is `invalid_argument`, a 400). */
export const INVALID_CHECK_ERROR = "invalid_guardrail_check";

/** The error for a bad setting at `field`, e.g. `check.entities[2]: unknown PII entity "passport"`. */
export function invalidCheck(field: string, message: string): GatewayError {
  return new GatewayError("invalid_argument", `${field}: ${message}`, { type: INVALID_CHECK_ERROR, field });
}

/** Refuses any setting of `config` not in `known`, so a setting that would be ignored is never accepted. */
export function rejectUnknownSettings(config: object, known: readonly string[], field: string): void {
  for (const key of Object.keys(config)) {
    if (key !== "type" && !known.includes(key)) throw invalidCheck(`${field}.${key}`, `unknown setting of a ${String((config as { type?: unknown }).type)} check`);
  }
}

/** The strings of a list setting, each checked to be a non-blank string; refuses an empty list. */
export function nonEmptyStrings(value: unknown, field: string): readonly string[] {
  if (!Array.isArray(value)) throw invalidCheck(field, "must be a list of strings");
  if (value.length === 0) throw invalidCheck(field, "must not be empty");
  value.forEach((item: unknown, i) => {
    if (typeof item !== "string" || item.trim() === "") throw invalidCheck(`${field}[${i}]`, `must be a non-empty string`);
  });
  return value as readonly string[];
}
