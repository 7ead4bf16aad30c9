/**
 * What guardrail checks leave behind: gw_guardrail_checks_total{guardrail, stage, result} and
 * gw_guardrail_duration_seconds{guardrail, type}, recorded off the request path in the metrics' own batch,
 * and a warning for a check that failed, at most once a minute per guardrail (a dead webhook must not flood
 * the log; the counter counts every failure). Labels and log lines name the guardrail, never the content.
 * A gateway without guardrails records nothing: the families stay empty.
 */
import type { Metric, Registry } from "prom-client";
import { boundedCache } from "../bounded-cache.js";
import type { GuardrailDefinition, GuardrailStage } from "../guardrails/definition.js";
import type { CheckResult, GuardrailObserver } from "../guardrails/guardrail-observer.js";
import type { FamilyGroup } from "./family-group.js";
import { LabelCap } from "./label-cap.js";
import type { Logger } from "./logger.js";
import { appendKey, CounterFamily, HistogramFamily, type Labels, type LabelSet } from "./metric-families.js";
import type { Metrics } from "./metrics.js";
import type { TraceIdSource } from "./tracing.js";

/** From an in-process scan (well under a millisecond) to a slow service at the longest timeout. */
const DURATION_BUCKETS = [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** Label sets kept resolved; beyond it the least recently used are resolved again. */
const MAX_CACHED_LABEL_SETS = 10_000;

const FAILURE_LOG_INTERVAL_MS = 60_000;

/** The guardrail families and the log lines of failed checks. */
export class GuardrailTelemetry implements GuardrailObserver, FamilyGroup {
  private checks: CounterFamily | null = null;
  private duration: HistogramFamily | null = null;
  private custom: readonly string[] = [];
  private cap = new LabelCap();
  private sets = boundedCache<string, LabelSet>(MAX_CACHED_LABEL_SETS);
  private readonly failuresLoggedAt = new Map<string, number>();

  constructor(
    private readonly metrics: Metrics,
    private readonly logger: Logger,
  ) {
    metrics.addGroup(this);
  }

  install(registry: Registry, custom: readonly string[], cap: LabelCap): void {
    this.custom = custom;
    this.cap = cap;
    this.sets = boundedCache(MAX_CACHED_LABEL_SETS);
    this.checks = new CounterFamily("gw_guardrail_checks_total", "Guardrail checks, by guardrail name, stage and result (pass, block, redact, warn, error).", ["guardrail", "stage", "result", ...custom]);
    this.duration = new HistogramFamily("gw_guardrail_duration_seconds", "Time a guardrail's check took, in seconds, by guardrail name and check type.", ["guardrail", "type", ...custom], DURATION_BUCKETS);
    // The Registry formats any object with name, help, type and get(); its typings only name prom-client's classes.
    registry.registerMetric(this.checks as unknown as Metric);
    registry.registerMetric(this.duration as unknown as Metric);
  }

  checked(guardrail: GuardrailDefinition, stage: GuardrailStage, result: CheckResult, seconds: number | null, custom: Readonly<Record<string, string>> | undefined): void {
    const name = guardrail.name;
    const type = guardrail.check.type;
    this.metrics.defer(() => {
      this.checks?.inc(this.labelSet({ guardrail: name, stage, result }, custom));
      if (seconds !== null && Number.isFinite(seconds) && seconds >= 0) this.duration?.observe(this.labelSet({ guardrail: name, type }, custom), seconds);
    });
  }

  failed(guardrail: GuardrailDefinition, stage: GuardrailStage, error: Error, logTrace: TraceIdSource | undefined): void {
    const now = Date.now();
    const last = this.failuresLoggedAt.get(guardrail.id);
    if (last !== undefined && now - last < FAILURE_LOG_INTERVAL_MS) return;
    this.failuresLoggedAt.set(guardrail.id, now);
    const type = (error as { type?: unknown }).type;
    this.logger.warn(
      {
        ...logTrace?.ids(),
        guardrail_id: guardrail.id,
        guardrail_name: guardrail.name,
        stage,
        check: guardrail.check.type,
        on_error: guardrail.onError,
        ...(typeof type === "string" ? { error_type: type } : {}),
        error: error.message,
      },
      "guardrail check failed; on_error decided (logged at most once a minute per guardrail)",
    );
  }

  /** `own` plus the custom labels, every value through the cardinality cap; resolved once per distinct set. */
  private labelSet(own: Labels, custom: Readonly<Record<string, string>> | undefined): LabelSet {
    let raw = "";
    for (const name in own) raw = appendKey(raw, own[name] as string);
    for (const name of this.custom) raw = appendKey(raw, custom?.[name] ?? "");
    let set = this.sets.get(raw);
    if (set === undefined) {
      const labels: Labels = {};
      let key = "";
      for (const name in own) {
        const value = this.cap.admit(name, own[name] as string);
        labels[name] = value;
        key = appendKey(appendKey(key, name), value);
      }
      for (const name of this.custom) {
        const value = this.cap.admit(name, custom?.[name] ?? "");
        labels[name] = value;
        key = appendKey(appendKey(key, name), value);
      }
      set = { labels, key };
      this.sets.set(raw, set);
    }
    return set;
  }
}
