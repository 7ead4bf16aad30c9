/**
 * Runs the guardrails that apply to one stage over a list of texts: sampling and `when` first, then each
 * guardrail's check; any block wins, redactions apply in the guardrails' order (broadest scope first), and
 * every guardrail that looked leaves its verdict for the x-gw-guardrails header and the metrics.
 */
import type { Finding } from "./check-types.js";
import type { GuardrailDefinition, GuardrailStage, GuardrailVariables } from "./definition.js";
import { redactSpans, type RedactionOptions, type RedactionSpan } from "./redaction.js";

/** What one guardrail concluded about the content it looked at. */
export type GuardrailVerdict = "pass" | "warn" | "redact" | "error" | "block";

/** One guardrail's verdict. */
export interface VerdictEntry {
  guardrail: GuardrailDefinition;
  verdict: GuardrailVerdict;
  /** The kinds it found (never the content), for a block's message. */
  kinds: readonly string[];
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
  /** Hears a condition or check that failed, with the guardrail. */
  onError?: (guardrail: GuardrailDefinition, error: Error) => void;
}

/** The header value of a list of verdicts: `name=verdict,...`. */
export function verdictHeader(verdicts: readonly VerdictEntry[]): string {
  return verdicts.map((entry) => `${entry.guardrail.name}=${entry.verdict}`).join(",");
}

function redactionOf(guardrail: GuardrailDefinition): RedactionOptions {
  const redaction = guardrail.redaction;
  if (redaction === null) return { strategy: "replace" };
  return redaction.strategy === "replace" && redaction.replacement !== "" ? { strategy: "replace", replacement: redaction.replacement } : { strategy: redaction.strategy };
}

/** The verdict of a guardrail whose check this gateway cannot run: an error, a block when on_error says so. */
export function unrunnable(guardrail: GuardrailDefinition): VerdictEntry {
  return { guardrail, verdict: guardrail.onError === "block" ? "block" : "error", kinds: [`no result from its ${guardrail.check.type} check, which this gateway does not run yet`] };
}

/** Runs `guardrails` over `texts`.  */
export function runGuardrails(guardrails: readonly GuardrailDefinition[], texts: readonly string[], context: RunContext): GuardrailPass {
  const verdicts: VerdictEntry[] = [];
  let blocked: VerdictEntry | null = null;
  let spans: RedactionSpan[][] | null = null;
  let vars: GuardrailVariables | null = null;
  for (const guardrail of guardrails) {
    if (guardrail.samplingRate < 1 && context.random() >= guardrail.samplingRate) continue;
    if (guardrail.condition !== null) {
      const applies = guardrail.condition((vars ??= context.variables()));
      if (applies instanceof Error) {
        context.onError?.(guardrail, applies);
        const entry: VerdictEntry = { guardrail, verdict: guardrail.onError === "block" ? "block" : "error", kinds: ["an error evaluating its condition"] };
        verdicts.push(entry);
        if (entry.verdict === "block") blocked ??= entry;
        continue;
      }
      if (!applies) continue;
    }
    const check = guardrail.content;
    if (check === null) {
      // moderation, llm_judge and webhook call out to a service, which this runner does not do yet: the
      // check counts as one that could not run, and on_error decides (block by default), never a silent pass.
      const entry = unrunnable(guardrail);
      verdicts.push(entry);
      if (entry.verdict === "block") blocked ??= entry;
      continue;
    }
    const kinds = new Set<string>();
    const found: Finding[][] = [];
    for (const text of texts) {
      const findings = check.scan(text);
      found.push(findings as Finding[]);
      for (const finding of findings) kinds.add(finding.kind);
    }
    if (kinds.size === 0) {
      verdicts.push({ guardrail, verdict: "pass", kinds: [] });
      continue;
    }
    const entry: VerdictEntry = { guardrail, verdict: guardrail.action, kinds: [...kinds] };
    verdicts.push(entry);
    if (guardrail.action === "block") blocked ??= entry;
    else if (guardrail.action === "redact") {
      spans ??= texts.map(() => []);
      const options = redactionOf(guardrail);
      found.forEach((findings, index) => {
        for (const finding of findings) spans?.[index]?.push({ ...finding, options });
      });
    }
  }
  if (blocked !== null || spans === null) return { texts, changed: false, verdicts, blocked };
  const redacted = texts.map((text, index) => redactSpans(text, spans?.[index] ?? []));
  return { texts: redacted, changed: redacted.some((text, index) => text !== texts[index]), verdicts, blocked };
}
