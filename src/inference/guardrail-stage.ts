/**
 * Guardrails on a request's content: the input stage before routing (a block refuses the request, a
 * redaction rewrites what goes upstream) and the output stage on the answer (a block replaces it with a
 * 446, or ends a stream with an error event; a redaction rewrites it, a stream's through a hold-back
 * window). No guardrail configured for a stage: the stage returns at once. A stage answers a promise only
 * when a guardrail that applies calls out to a service (webhook, moderation, llm_judge); a streamed answer
 * with such an output guardrail is held whole until it ends, since the service can only judge it whole, up
 * to the answering provider's max_response_bytes. The gateway's own calls that ask it (a judge's request to
 * its model) skip both stages.
 */
import { DEFAULT_MAX_RESPONSE_BYTES } from "../providers/http/upstream-http.js";
import { chunkFields, forgetRawText } from "../providers/raw-event.js";
import type { JsonObject } from "../providers/types.js";
import type { CallOut, JudgeModel } from "../guardrails/call-out.js";
import { callOutChecks } from "../guardrails/call-out-checks.js";
import { rewriteFinalTexts, textKey, textsOf, walkAnswer, walkDelta, walkRequest, writeTexts, type ContentApi } from "../guardrails/content-texts.js";
import type { GuardrailDefinition, GuardrailStage, GuardrailVariables } from "../guardrails/definition.js";
import { GuardrailBlockedError } from "../guardrails/guardrail-blocked.js";
import { HeldBytes, heldTooLarge } from "../guardrails/held-answer.js";
import { blockDetail, callsOut, runGuardrails, runSelected, selectGuardrails, spanFacts, verdictHeader, type GuardrailPass, type RunContext, type SelectedGuardrail, type VerdictEntry } from "../guardrails/guardrail-run.js";
import { StreamHoldback, type StreamGuard } from "../guardrails/stream-holdback.js";
import type { GuardrailSpan } from "../telemetry/tracing.js";
import type { ChatOutcome } from "./calls.js";
import type { Engine } from "./engine-deps.js";
import { internalOptionsOf } from "./internal-calls.js";
import type { InferenceRequest } from "./request-context.js";
import { ruleVariables } from "./rule-variables.js";

function apiOf(req: InferenceRequest): ContentApi {
  return req.call.method ?? "chat";
}

/**
 * The guardrails of `stage` that cover the request's key, team and customer; none when nothing is configured,
 * and none for a call of the gateway's own that skips them.
 */
function applicable(engine: Engine, req: InferenceRequest, stage: GuardrailStage): readonly GuardrailDefinition[] {
  const snapshot = engine.guardrails?.snapshot;
  if (snapshot === undefined || !snapshot.hasStage(stage)) return [];
  // Read only once a guardrail could apply: a gateway without guardrails pays nothing for it.
  if (internalOptionsOf(req.call)?.skipGuardrails === true) return [];
  const { virtualKey } = req;
  const members = virtualKey === null ? null : engine.inference.hierarchy.membership(virtualKey);
  return snapshot.applicable(stage, { virtualKeyId: virtualKey?.id ?? "", teamId: members?.team?.id ?? "", customerId: members?.customer?.id ?? "", mcpClientId: "" });
}

function variables(engine: Engine, req: InferenceRequest, stage: GuardrailStage): () => GuardrailVariables {
  return () => {
    const target = req.decision?.primary;
    const vars = ruleVariables(req.call, req.method, req.virtualKey, target?.provider ?? "", target?.model ?? req.call.body.model, engine.inference, req.complexity?.tier ?? "");
    return { ...vars, stage, mcp_client: "", tool: "" };
  };
}

/** The call-out of each engine's providers, made once. */
const callOuts = new WeakMap<Engine, CallOut>();

/** A judge for an engine without guardrails, which never runs a check (contextOf is reached only when one applies). */
const NO_JUDGE: JudgeModel = () => Promise.reject(new Error("no guardrails are configured on this engine"));

/** What the runner needs of the request at `stage`. */
function contextOf(engine: Engine, req: InferenceRequest, stage: GuardrailStage): RunContext {
  let callOut = callOuts.get(engine);
  if (callOut === undefined) callOuts.set(engine, (callOut = callOutChecks(engine.inference, engine.guardrails?.judge ?? NO_JUDGE)));
  return {
    stage,
    variables: variables(engine, req, stage),
    random: engine.inference.random,
    callOut,
    metadata: { virtualKeyId: req.virtualKey?.id ?? "", model: req.call.body.model },
    signal: req.call.signal,
    observer: engine.guardrails?.observer,
    trace: req.trace,
    custom: req.custom,
  };
}

/** Runs a stage's guardrails over `texts`: the redacted texts, null when none changed; throws (or rejects with) the 446 of a block. */
function run(engine: Engine, req: InferenceRequest, stage: GuardrailStage, guardrails: readonly GuardrailDefinition[], texts: readonly string[]): readonly string[] | null | Promise<readonly string[] | null> {
  const ran = runGuardrails(guardrails, texts, contextOf(engine, req, stage));
  return ran instanceof Promise ? ran.then((pass) => settle(req, stage, pass)) : settle(req, stage, ran);
}

/** Keeps the verdicts for the header; throws the 446 of a block. */
function settle(req: InferenceRequest, stage: GuardrailStage, pass: GuardrailPass): readonly string[] | null {
  req.guardrailVerdicts.push(...pass.verdicts);
  if (pass.blocked !== null) throw blockedError(req, stage, pass.blocked);
  return pass.changed ? pass.texts : null;
}

function blockedError(req: InferenceRequest, stage: GuardrailStage, entry: VerdictEntry): GuardrailBlockedError {
  return new GuardrailBlockedError(entry.guardrail, stage, blockDetail(entry), verdictHeader(req.guardrailVerdicts));
}

/** The input stage: checks the request's texts before routing, and rewrites the body a redaction changed. */
export function guardInput(engine: Engine, req: InferenceRequest): void | Promise<void> {
  const guardrails = applicable(engine, req, "input");
  if (guardrails.length === 0) return;
  const api = apiOf(req);
  const body = req.call.body as JsonObject;
  const redacted = run(engine, req, "input", guardrails, textsOf((visit) => walkRequest(api, body, visit)));
  if (redacted instanceof Promise) return redacted.then((texts) => rewriteRequest(req, api, body, texts));
  rewriteRequest(req, api, body, redacted);
}

function rewriteRequest(req: InferenceRequest, api: ContentApi, body: JsonObject, redacted: readonly string[] | null): void {
  if (redacted === null) return;
  const copy = structuredClone(body);
  writeTexts((visit) => walkRequest(api, copy, visit), redacted);
  // The client's own bytes no longer match what goes upstream.
  req.call = { ...req.call, body: copy as typeof req.call.body, rawBody: undefined } as typeof req.call;
}

/** The output stage: checks a JSON answer at once, a stream through a hold-back window (or whole, when a check calls out). */
export function guardOutput(engine: Engine, req: InferenceRequest, outcome: ChatOutcome): ChatOutcome | Promise<ChatOutcome> {
  const guardrails = applicable(engine, req, "output");
  if (guardrails.length === 0) return withVerdicts(req, outcome);
  const api = apiOf(req);
  if (outcome.kind === "json") {
    const redacted = run(engine, req, "output", guardrails, textsOf((visit) => walkAnswer(api, outcome.body, visit)));
    if (redacted instanceof Promise) return redacted.then((texts) => jsonAnswer(req, api, outcome, texts));
    return jsonAnswer(req, api, outcome, redacted);
  }
  const context = contextOf(engine, req, "output");
  const selected = selectGuardrails(guardrails, context);
  // A failed condition is judged now: its block is still a 446, before any of the stream is sent.
  const decided = selected.filter((entry) => entry.fixed !== null);
  if (decided.length > 0) {
    const pass = runSelected(decided, [], context);
    if (!(pass instanceof Promise)) settle(req, "output", pass);
  }
  const checking = selected.filter((entry) => entry.fixed === null);
  if (checking.length === 0) return withVerdicts(req, outcome);
  const cache = outcome.cache ? { cache: outcome.cache } : {};
  if (checking.some((entry) => callsOut(entry.guardrail))) return withVerdicts(req, { kind: "stream", chunks: heldStream(api, outcome.chunks, checking, context, heldLimit(engine, req)), ...cache });
  return withVerdicts(req, { kind: "stream", chunks: guardStream(api, outcome.chunks, checking.map((entry) => entry.guardrail), context), ...cache });
}

function jsonAnswer(req: InferenceRequest, api: ContentApi, outcome: Extract<ChatOutcome, { kind: "json" }>, redacted: readonly string[] | null): ChatOutcome {
  if (redacted === null) return withVerdicts(req, outcome);
  const copy = structuredClone(outcome.body);
  writeTexts((visit) => walkAnswer(api, copy, visit), redacted);
  return withVerdicts(req, { kind: "json", body: copy, ...(outcome.cache ? { cache: outcome.cache } : {}) });
}

/** The answer with the x-gw-guardrails header value of every guardrail that looked, when any did. */
function withVerdicts(req: InferenceRequest, outcome: ChatOutcome): ChatOutcome {
  if (req.guardrailVerdicts.length === 0) return outcome;
  const guardrails = verdictHeader(req.guardrailVerdicts);
  // Each kind built as one literal: spreading the outcome took V8's slow object-copying path on every answer.
  if (outcome.kind === "json") return { kind: "json", body: outcome.body, raw: outcome.raw, cache: outcome.cache, guardrails };
  return { kind: "stream", chunks: outcome.chunks, cache: outcome.cache, guardrails };
}

/**
 * The most bytes of events a held stream may keep: the max_response_bytes of the provider that answered (the
 * primary target's for a cached answer), the gateway's default for a provider removed since.
 */
function heldLimit(engine: Engine, req: InferenceRequest): number {
  const provider = req.lastLabels?.provider ?? req.decision?.primary.provider ?? "";
  return engine.inference.providers.get(provider)?.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
}

/**
 * A stream held whole: every event is kept until the end, the guardrails judge the whole text as one, and
 * then the events go out, their text rewritten when a guardrail redacted (the whole text in the first
 * event that carried text, the others' text emptied), or the stream ends with the block's error event.
 * Events past `limit` bytes end it at once with the error event of a block made for the bound, nothing of
 * it sent; leaving the loop closes the upstream call.
 */
async function* heldStream(api: ContentApi, chunks: AsyncIterable<JsonObject>, selected: readonly SelectedGuardrail[], context: RunContext, limit: number): AsyncGenerator<JsonObject> {
  const events: JsonObject[] = [];
  const carrying = new Set<JsonObject>();
  const held = new HeldBytes(limit);
  let whole = "";
  for await (const chunk of chunks) {
    const fields = chunkFields(chunk);
    if (!held.add(fields ?? chunk)) throw heldTooLarge(selected.map((entry) => entry.guardrail), limit, context);
    if (fields === null) {
      events.push(chunk);
      continue;
    }
    walkDelta(api, fields, (text) => {
      whole += text;
      carrying.add(fields);
      return undefined;
    });
    events.push(fields);
  }
  const ran = runSelected(selected, [whole], context);
  const pass = ran instanceof Promise ? await ran : ran;
  if (pass.blocked !== null) throw new GuardrailBlockedError(pass.blocked.guardrail, "output", blockDetail(pass.blocked), verdictHeader(pass.verdicts));
  if (!pass.changed) {
    yield* events;
    return;
  }
  const text = pass.texts[0] ?? "";
  let first = true;
  let firstKey: string | null = null;
  for (const event of events) {
    if (carrying.has(event)) {
      forgetRawText(event);
      firstKey ??= textKey(event);
      walkDelta(api, event, () => {
        const out = first ? text : "";
        first = false;
        return out;
      });
      yield event;
    } else yield finalRewritten(api, event, (key) => (key === firstKey ? text : ""));
  }
}

/** The event with the whole texts it repeats at the end replaced (Responses streams); any other event as it is. */
function finalRewritten(api: ContentApi, chunk: JsonObject, textAt: (key: string) => string): JsonObject {
  if (api !== "responses") return chunk;
  const fields = chunkFields(chunk);
  if (fields === null) return chunk;
  const copy = structuredClone(fields);
  return rewriteFinalTexts(api, copy, textAt) ? copy : chunk;
}

/** The stream guard of an in-process guardrail. */
function streamGuard(guardrail: GuardrailDefinition): StreamGuard | null {
  if (guardrail.content === null) return null;
  const redaction = guardrail.redaction;
  return { name: guardrail.name, check: guardrail.content, action: guardrail.action, ...(redaction ? { redaction: redaction.strategy === "replace" && redaction.replacement !== "" ? { strategy: "replace", replacement: redaction.replacement } : { strategy: redaction.strategy } } : {}) };
}

/**
 * Relays a stream's events with their text deltas passed through the hold-back: text goes out once the
 * guardrails have seen what follows it. Events without text after the first text (tool-call deltas, the
 * finish event, usage) wait for the end, so none overtakes text still held: what is held at the end goes
 * out first, in a copy of the last text event, then they do. Each guardrail's result is reported once the
 * stream ends or is blocked.
 */
async function* guardStream(api: ContentApi, chunks: AsyncIterable<JsonObject>, guardrails: readonly GuardrailDefinition[], context: RunContext): AsyncGenerator<JsonObject> {
  const guards = guardrails.map(streamGuard).filter((guard): guard is StreamGuard => guard !== null);
  const holdback = new StreamHoldback(guards);
  const spans = guardrails.map((guardrail) => context.trace?.guardrailCheck(spanFacts(guardrail, "output")));
  let reported = false;
  const report = (): void => {
    reported = true;
    reportStream(context, guardrails, holdback, spans);
  };
  const stop = (guardrailName: string, kind: string): GuardrailBlockedError => {
    report();
    const guardrail = guardrails.find((g) => g.name === guardrailName) ?? { id: "", name: guardrailName };
    return new GuardrailBlockedError(guardrail, "output", `found ${kind}`, `${guardrailName}=block`);
  };
  let last: JsonObject | null = null;
  const waiting: JsonObject[] = [];
  // What went out of each text (Responses: by output and content index), for the finishing events that repeat it.
  const released = new Map<string, string>();
  const sent = (key: string, text: string): void => {
    released.set(key, (released.get(key) ?? "") + text);
  };
  try {
    for await (const chunk of chunks) {
      const fields = chunkFields(chunk);
      let carried = false;
      if (fields !== null) {
        walkDelta(api, fields, (text) => {
          carried = true;
          const release = holdback.push(text);
          if (release.block !== null) throw stop(release.block.guardrail, release.block.kind);
          sent(textKey(fields), release.text);
          return release.text;
        });
      }
      if (!carried || fields === null) {
        if (last !== null) waiting.push(chunk);
        else yield chunk;
        continue;
      }
      forgetRawText(fields);
      last = fields;
      yield fields;
    }
    const rest = holdback.flush();
    if (rest.block !== null) throw stop(rest.block.guardrail, rest.block.kind);
    report();
    if (rest.text !== "" && last !== null) {
      const copy = structuredClone(last);
      let first = true;
      walkDelta(api, copy, () => {
        const text = first ? rest.text : "";
        first = false;
        return text;
      });
      sent(textKey(copy), rest.text);
      yield copy;
    }
    for (const chunk of waiting) yield finalRewritten(api, chunk, (key) => released.get(key) ?? "");
  } finally {
    // A stream its client left, or whose upstream failed, was never judged whole: its spans end without a result.
    if (!reported) for (const span of spans) span?.end("incomplete");
  }
}

/** Reports each guardrail's result on a stream and ends its span. */
function reportStream(context: RunContext, guardrails: readonly GuardrailDefinition[], holdback: StreamHoldback, spans: readonly (GuardrailSpan | undefined)[]): void {
  const outcomes = holdback.outcomes();
  const spent = holdback.secondsSpent();
  guardrails.forEach((guardrail, index) => {
    const result = outcomes.get(guardrail.name) ?? "pass";
    context.observer?.checked(guardrail, "output", result, spent.get(guardrail.name) ?? 0, context.custom);
    spans[index]?.end(result);
  });
}
