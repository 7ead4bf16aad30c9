/**
 * Runs the guardrails that apply to one stage over a list of texts: sampling and `when` first, then each
 * guardrail's check. In-process checks scan at once; checks that call out (webhook, moderation,
 * llm_judge) start together and run concurrently, each within its guardrail's timeout, and only then does
 * the run answer a promise: a stage without them stays synchronous. Any block wins; redactions apply in
 * the guardrails' order (broadest scope first); every guardrail that looked leaves its verdict for the
 * x-gw-guardrails header, and is reported to the observer and, on a traced request, in a span.
 *
 * Every check sees the content as it reached the stage. A webhook's redaction rewrites whole texts, so it
 * cannot be merged with the spans the in-process checks found: the texts a webhook returned replace the
 * content, the in-process redactions are then found again in them, and a later webhook that also redacted
 * is asked again with the texts as they are by then, so no redaction is lost.
 */
import type { AbortSource } from "../cancellation.js";
import type { GuardrailCheckFacts, GuardrailSpan, TraceNode } from "../telemetry/tracing.js";
import type { ContentCheck, Finding } from "./check-types.js";
import { checkFailure, checkTimedOut, GuardrailCheckError } from "./check-failure.js";
import { withinTimeout } from "./check-deadline.js";
import type { CallOut, CallOutFinding, CallOutMetadata } from "./call-out.js";
import type { GuardrailDefinition, GuardrailStage, GuardrailVariables } from "./definition.js";
import type { CheckResult, GuardrailObserver } from "./guardrail-observer.js";
import { redactSpans, type RedactionOptions, type RedactionSpan } from "./redaction.js";

/** What one guardrail concluded about the content it looked at. */
export type GuardrailVerdict = "pass" | "warn" | "redact" | "error" | "block";

/** One guardrail's verdict. */
export interface VerdictEntry {
  guardrail: GuardrailDefinition;
  verdict: GuardrailVerdict;
  /** The kinds it found (never the content). */
  kinds: readonly string[];
  /** How a block's message tells what happened, when "found <kinds>" does not (a service's refusal, a failed check). */
  detail?: string;
  /** Its check or its condition failed, so on_error chose the verdict. */
  failed?: boolean;
}

/** What a stage's guardrails decided. */
export interface GuardrailPass {
  /** The texts, redacted where a guardrail redacted. */
  texts: readonly string[];
  /** Whether any text changed. */
  changed: boolean;
  verdicts: readonly VerdictEntry[];
  /** The first guardrail that blocked, or null. */
  blocked: VerdictEntry | null;
}

/** What the runner needs besides the guardrails and texts. */
export interface RunContext {
  stage: GuardrailStage;
  /** The variables of `when` conditions, built only if a guardrail has one. */
  variables: () => GuardrailVariables;
  /** A number in [0, 1) for sampling. */
  random: () => number;
  /** Runs the checks that call out; absent, such a check fails and on_error decides. */
  callOut?: CallOut;
  /** What a service is told about the request. */
  metadata?: CallOutMetadata;
  /** The caller's cancellation: aborting it aborts the call-outs, and the run then rejects with its reason. */
  signal?: AbortSource;
  /** Hears every check and every failure. */
  observer?: GuardrailObserver;
  /** The request's span when it is traced: each check gets a span under it. */
  trace?: TraceNode;
  /** The request's custom metric label values. */
  custom?: Readonly<Record<string, string>>;
}

/** A guardrail that applies (its sampling and condition let it), or the verdict of one whose condition failed. */
export interface SelectedGuardrail {
  guardrail: GuardrailDefinition;
  /** Set when the condition failed: the verdict on_error gave, and no check runs. */
  fixed: VerdictEntry | null;
}

/** One guardrail's check done: its verdict and what a redaction needs. */
interface Outcome {
  entry: VerdictEntry;
  /** An in-process check's findings, one list per text; null for a check that calls out. */
  findings: readonly (readonly Finding[])[] | null;
  /** The texts a webhook's redaction returned; null otherwise. */
  replaced: readonly string[] | null;
}

const NO_METADATA: CallOutMetadata = { virtualKeyId: "", model: "" };

/** Each guardrail's `name=verdict` strings, made once: most answers carry one guardrail's verdict alone. */
const verdictTexts = new WeakMap<GuardrailDefinition, Partial<Record<GuardrailVerdict, string>>>();

function verdictText(entry: VerdictEntry): string {
  let texts = verdictTexts.get(entry.guardrail);
  if (texts === undefined) verdictTexts.set(entry.guardrail, (texts = {}));
  return (texts[entry.verdict] ??= `${entry.guardrail.name}=${entry.verdict}`);
}

/** The header value of a list of verdicts: `name=verdict,...`. */
export function verdictHeader(verdicts: readonly VerdictEntry[]): string {
  if (verdicts.length === 1 && verdicts[0] !== undefined) return verdictText(verdicts[0]);
  return verdicts.map(verdictText).join(",");
}

/** What a block's message says happened (never the content). */
export function blockDetail(entry: VerdictEntry): string {
  return entry.detail ?? `found ${entry.kinds.join(", ")}`;
}

/** Whether the guardrail's check calls a service rather than scanning in-process. */
export function callsOut(guardrail: GuardrailDefinition): boolean {
  return guardrail.content === null;
}

function redactionOf(guardrail: GuardrailDefinition): RedactionOptions {
  const redaction = guardrail.redaction;
  if (redaction === null) return { strategy: "replace" };
  return redaction.strategy === "replace" && redaction.replacement !== "" ? { strategy: "replace", replacement: redaction.replacement } : { strategy: redaction.strategy };
}

/** The guardrails that look this time, in order: sampling drawn and conditions evaluated once. */
export function selectGuardrails(guardrails: readonly GuardrailDefinition[], context: RunContext): SelectedGuardrail[] {
  const selected: SelectedGuardrail[] = [];
  let vars: GuardrailVariables | null = null;
  for (const guardrail of guardrails) {
    if (guardrail.samplingRate < 1 && context.random() >= guardrail.samplingRate) continue;
    if (guardrail.condition !== null) {
      const applies = guardrail.condition((vars ??= context.variables()));
      if (applies instanceof Error) {
        context.observer?.failed(guardrail, context.stage, applies, context.trace);
        const verdict = guardrail.onError === "block" ? "block" : "error";
        selected.push({ guardrail, fixed: { guardrail, verdict, kinds: [], detail: "its condition could not be evaluated", failed: true } });
        continue;
      }
      if (!applies) continue;
    }
    selected.push({ guardrail, fixed: null });
  }
  return selected;
}

/** Runs `guardrails` over `texts`: the pass itself, or a promise of it when a check calls out. */
export function runGuardrails(guardrails: readonly GuardrailDefinition[], texts: readonly string[], context: RunContext): GuardrailPass | Promise<GuardrailPass> {
  return runSelected(selectGuardrails(guardrails, context), texts, context);
}

/** Runs the checks of guardrails already selected over `texts`. */
export function runSelected(selected: readonly SelectedGuardrail[], texts: readonly string[], context: RunContext): GuardrailPass | Promise<GuardrailPass> {
  const outcomes: Outcome[] = [];
  let calls: Promise<void>[] | null = null;
  for (const { guardrail, fixed } of selected) {
    if (fixed !== null) {
      report(context, fixed, null);
      outcomes.push({ entry: fixed, findings: null, replaced: null });
      continue;
    }
    if (guardrail.content !== null) {
      outcomes.push(scan(guardrail, guardrail.content, texts, context));
      continue;
    }
    if (!texts.some((text) => text !== "")) {
      // Nothing to send: a service would be asked about no content at all.
      const entry: VerdictEntry = { guardrail, verdict: "pass", kinds: [] };
      report(context, entry, null);
      outcomes.push({ entry, findings: null, replaced: null });
      continue;
    }
    const index = outcomes.length;
    outcomes.push({ entry: { guardrail, verdict: "pass", kinds: [] }, findings: null, replaced: null });
    (calls ??= []).push(
      callOnce(guardrail, texts, context).then((outcome) => {
        outcomes[index] = outcome;
      }),
    );
  }
  if (calls === null) return decide(outcomes, texts);
  return Promise.all(calls).then(() => {
    const signal = context.signal;
    if (signal?.aborted) throw signal.reason;
    return decideAfterCalls(outcomes, texts, context);
  });
}

/** An in-process check over every text. */
function scan(guardrail: GuardrailDefinition, check: ContentCheck, texts: readonly string[], context: RunContext): Outcome {
  const span = context.trace?.guardrailCheck(spanFacts(guardrail, context.stage));
  const started = performance.now();
  const kinds = new Set<string>();
  const findings: (readonly Finding[])[] = [];
  for (const text of texts) {
    const found = check.scan(text);
    findings.push(found);
    for (const finding of found) kinds.add(finding.kind);
  }
  const seconds = (performance.now() - started) / 1000;
  const entry: VerdictEntry = kinds.size === 0 ? { guardrail, verdict: "pass", kinds: [] } : { guardrail, verdict: guardrail.action, kinds: [...kinds] };
  report(context, entry, seconds, span);
  return { entry, findings, replaced: null };
}

/** A check that calls out, within its timeout; never rejects: a failure is an outcome on_error decides. */
async function callOnce(guardrail: GuardrailDefinition, texts: readonly string[], context: RunContext): Promise<Outcome> {
  const { stage } = context;
  const type = guardrail.check.type;
  const service = `the ${type} check`;
  const span = context.trace?.guardrailCheck(spanFacts(guardrail, stage));
  const started = performance.now();
  let outcome: Outcome;
  try {
    const callOut = context.callOut;
    if (callOut === undefined) throw new GuardrailCheckError("guardrail_check_unavailable", `${type} checks do not run at the ${stage} stage`);
    const metadata = context.metadata ?? NO_METADATA;
    const finding = await withinTimeout(guardrail.timeoutMs, context.signal, () => checkTimedOut(service, guardrail.timeoutMs), (signal) => callOut(guardrail, { stage, texts, metadata, signal }));
    outcome = foundOutcome(guardrail, finding);
  } catch (err) {
    if (context.signal?.aborted) {
      // The caller is gone: the run rejects with its reason, and nothing was decided to count.
      span?.end("error", "caller_closed_request");
      return { entry: { guardrail, verdict: "error", kinds: [], failed: true }, findings: null, replaced: null };
    }
    const error = checkFailure(err, service);
    context.observer?.failed(guardrail, stage, error, context.trace);
    const verdict = guardrail.onError === "block" ? "block" : "error";
    outcome = { entry: { guardrail, verdict, kinds: [], detail: `its ${type} check failed (${error.type})`, failed: true }, findings: null, replaced: null };
    report(context, outcome.entry, (performance.now() - started) / 1000, span, error.type);
    return outcome;
  }
  report(context, outcome.entry, (performance.now() - started) / 1000, span);
  return outcome;
}

/** The outcome of a service's answer: its finding acted on by the guardrail's action. */
function foundOutcome(guardrail: GuardrailDefinition, finding: CallOutFinding | null): Outcome {
  if (finding === null) return { entry: { guardrail, verdict: "pass", kinds: [] }, findings: null, replaced: null };
  // A redact guardrail whose service gave no redacted texts cannot let the content through unchanged.
  const verdict = guardrail.action === "redact" && finding.redacted === null ? "block" : guardrail.action;
  const detail = `${finding.summary ?? `found ${finding.kinds.join(", ")}`}${finding.reason === "" ? "" : `: ${finding.reason}`}`;
  return { entry: { guardrail, verdict, kinds: finding.kinds, detail }, findings: null, replaced: verdict === "redact" ? finding.redacted : null };
}

/** The pass of in-process checks alone: the first block, else every redaction's spans merged in order. */
function decide(outcomes: readonly Outcome[], texts: readonly string[]): GuardrailPass {
  const verdicts = outcomes.map((outcome) => outcome.entry);
  const blocked = verdicts.find((entry) => entry.verdict === "block") ?? null;
  if (blocked !== null) return { texts, changed: false, verdicts, blocked };
  let spans: RedactionSpan[][] | null = null;
  for (const { entry, findings } of outcomes) {
    if (entry.verdict !== "redact" || findings === null) continue;
    spans ??= texts.map(() => []);
    const options = redactionOf(entry.guardrail);
    findings.forEach((found, index) => {
      for (const finding of found) spans?.[index]?.push({ ...finding, options });
    });
  }
  if (spans === null) return { texts, changed: false, verdicts, blocked: null };
  const redacted = texts.map((text, index) => redactSpans(text, spans?.[index] ?? []));
  return { texts: redacted, changed: redacted.some((text, index) => text !== texts[index]), verdicts, blocked: null };
}

/** The pass once every call-out answered: as `decide`, unless a webhook rewrote the texts. */
async function decideAfterCalls(outcomes: Outcome[], texts: readonly string[], context: RunContext): Promise<GuardrailPass> {
  const first = decide(outcomes, texts);
  const rewriting = outcomes.findIndex((outcome) => outcome.replaced !== null);
  if (first.blocked !== null || rewriting === -1) return first;
  let current = outcomes[rewriting]?.replaced ?? texts;
  for (let index = rewriting + 1; index < outcomes.length; index++) {
    const outcome = outcomes[index];
    if (outcome?.replaced === null || outcome === undefined) continue;
    // It redacted the texts as they reached the stage, not as the webhook before it left them.
    const again = await callOnce(outcome.entry.guardrail, current, context);
    if (context.signal?.aborted) throw context.signal.reason;
    outcomes[index] = again;
    if (again.entry.verdict === "block") return { texts, changed: false, verdicts: outcomes.map((o) => o.entry), blocked: again.entry };
    if (again.replaced !== null) current = again.replaced;
  }
  current = redactAgain(outcomes, current);
  return { texts: current, changed: current.some((text, index) => text !== texts[index]), verdicts: outcomes.map((o) => o.entry), blocked: null };
}

/** `texts` with the redactions of every in-process redact guardrail found again in them, merged in order. */
function redactAgain(outcomes: readonly Outcome[], texts: readonly string[]): readonly string[] {
  const spans: RedactionSpan[][] = texts.map(() => []);
  let any = false;
  for (const { entry } of outcomes) {
    const { guardrail } = entry;
    if (guardrail.action !== "redact" || guardrail.content === null) continue;
    const options = redactionOf(guardrail);
    texts.forEach((text, index) => {
      for (const finding of guardrail.content?.scan(text) ?? []) {
        spans[index]?.push({ ...finding, options });
        any = true;
      }
    });
  }
  return any ? texts.map((text, index) => redactSpans(text, spans[index] ?? [])) : texts;
}

/** What the span of a guardrail's check at `stage` records. */
export function spanFacts(guardrail: GuardrailDefinition, stage: GuardrailStage): GuardrailCheckFacts {
  return { id: guardrail.id, name: guardrail.name, type: guardrail.check.type, stage, callsOut: callsOut(guardrail) };
}

/** Tells the observer and the span what a guardrail concluded; `seconds` null when no check ran. */
function report(context: RunContext, entry: VerdictEntry, seconds: number | null, span?: GuardrailSpan, errorType?: string): void {
  const result: CheckResult = entry.failed === true ? "error" : entry.verdict;
  context.observer?.checked(entry.guardrail, context.stage, result, seconds, context.custom);
  span?.end(result, errorType);
}
