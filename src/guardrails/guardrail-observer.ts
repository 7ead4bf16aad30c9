/**
 * What the guardrail runner reports: each check's result and time, and each check that failed. The runner
 * only says what happened; telemetry turns it into metrics and log lines. Reports carry the guardrail and
 * the stage, never the content.
 */
import type { TraceIdSource } from "../telemetry/tracing.js";
import type { GuardrailDefinition, GuardrailStage } from "./definition.js";

/** A check's result: its verdict, or `error` when the check (or its condition) failed, whatever on_error then chose. */
export type CheckResult = "pass" | "block" | "redact" | "warn" | "error";

/** Hears every guardrail check; no method throws. */
export interface GuardrailObserver {
  /**
   * One guardrail looked at a stage's content. `seconds` is how long its check took; null when no check
   * ran (its condition failed, or there was no text to send). `custom` are the request's custom metric label values.
   */
  checked(guardrail: GuardrailDefinition, stage: GuardrailStage, result: CheckResult, seconds: number | null, custom: Readonly<Record<string, string>> | undefined): void;
  /** A guardrail's check or condition failed with `error` (whose message quotes no content); on_error decided what followed. */
  failed(guardrail: GuardrailDefinition, stage: GuardrailStage, error: Error, logTrace: TraceIdSource | undefined): void;
}
