/**
 * Guardrails on a request's content: the input stage before routing (a block refuses the request, a
 * redaction rewrites what goes upstream) and the output stage on the answer (a block replaces it with a
 * 446, or ends a stream with an error event; a redaction rewrites it, a stream's through a hold-back
 * window). No guardrail configured for a stage: the stage returns at once.
 */
import { chunkFields, forgetRawText } from "../providers/raw-event.js";
import type { JsonObject } from "../providers/types.js";
import { textsOf, walkAnswer, walkDelta, walkRequest, writeTexts, type ContentApi } from "../guardrails/content-texts.js";
import type { GuardrailDefinition, GuardrailStage, GuardrailVariables } from "../guardrails/definition.js";
import { GuardrailBlockedError } from "../guardrails/guardrail-blocked.js";
import { runGuardrails, unrunnable, verdictHeader, type VerdictEntry } from "../guardrails/guardrail-run.js";
import { StreamHoldback, type StreamGuard } from "../guardrails/stream-holdback.js";
import type { ChatOutcome } from "./calls.js";
import type { Engine } from "./engine-deps.js";
import type { InferenceRequest } from "./request-context.js";
import { ruleVariables } from "./rule-variables.js";

function apiOf(req: InferenceRequest): ContentApi {
  return req.call.method ?? "chat";
}

/** The guardrails of `stage` that cover the request's key, team and customer; none when nothing is configured. */
function applicable(engine: Engine, req: InferenceRequest, stage: GuardrailStage): readonly GuardrailDefinition[] {
  const snapshot = engine.guardrails?.snapshot;
  if (snapshot === undefined || !snapshot.hasStage(stage)) return [];
  const { subject } = req.keyPlan;
  return snapshot.applicable(stage, { virtualKeyId: subject.virtualKeyId, teamId: subject.teamId, customerId: subject.customerId, mcpClientId: "" });
}

function variables(engine: Engine, req: InferenceRequest, stage: GuardrailStage): () => GuardrailVariables {
  return () => {
    const target = req.decision?.primary;
    const vars = ruleVariables(req.call, req.method, req.virtualKey, target?.provider ?? "", target?.model ?? req.call.body.model, engine.inference, req.complexity?.tier ?? "");
    return { ...vars, stage, mcp_client: "", tool: "" };
  };
}

/** Runs a stage's guardrails over `texts`; throws the 446 of a block. */
function run(engine: Engine, req: InferenceRequest, stage: GuardrailStage, guardrails: readonly GuardrailDefinition[], texts: readonly string[]): readonly string[] | null {
  const pass = runGuardrails(guardrails, texts, {
    stage,
    variables: variables(engine, req, stage),
    random: engine.inference.random,
    onError: (guardrail, error) => engine.observer.ruleFailed(guardrail.id, guardrail.name, error, req.trace),
  });
  req.guardrailVerdicts.push(...pass.verdicts);
  if (pass.blocked !== null) throw blockedError(req, stage, pass.blocked);
  return pass.changed ? pass.texts : null;
}

function blockedError(req: InferenceRequest, stage: GuardrailStage, entry: VerdictEntry): GuardrailBlockedError {
  return new GuardrailBlockedError(entry.guardrail, stage, `found ${entry.kinds.join(", ")}`, verdictHeader(req.guardrailVerdicts));
}

/**
 * The input stage: checks the request's texts before routing, and rewrites the body a redaction changed.
 * An output guardrail whose check this gateway cannot run is judged here too, before any upstream call,
 * since it would block every answer anyway.
 */
export function guardInput(engine: Engine, req: InferenceRequest): void {
  for (const guardrail of applicable(engine, req, "output")) {
    if (guardrail.content !== null) continue;
    const entry = unrunnable(guardrail);
    req.guardrailVerdicts.push(entry);
    if (entry.verdict === "block") throw blockedError(req, "output", entry);
  }
  const guardrails = applicable(engine, req, "input");
  if (guardrails.length === 0) return;
  const api = apiOf(req);
  const body = req.call.body as JsonObject;
  const redacted = run(engine, req, "input", guardrails, textsOf((visit) => walkRequest(api, body, visit)));
  if (redacted === null) return;
  const copy = structuredClone(body);
  writeTexts((visit) => walkRequest(api, copy, visit), redacted);
  // The client's own bytes no longer match what goes upstream.
  req.call = { ...req.call, body: copy as typeof req.call.body, rawBody: undefined } as typeof req.call;
}

/** The output stage: checks a JSON answer at once, a stream through a hold-back window. */
export function guardOutput(engine: Engine, req: InferenceRequest, outcome: ChatOutcome): ChatOutcome {
  // Those whose check this gateway cannot run were judged before the upstream call.
  const guardrails = applicable(engine, req, "output").filter((guardrail) => guardrail.content !== null);
  if (guardrails.length === 0) return withVerdicts(req, outcome);
  const api = apiOf(req);
  if (outcome.kind === "json") {
    const redacted = run(engine, req, "output", guardrails, textsOf((visit) => walkAnswer(api, outcome.body, visit)));
    if (redacted === null) return withVerdicts(req, outcome);
    const copy = structuredClone(outcome.body);
    writeTexts((visit) => walkAnswer(api, copy, visit), redacted);
    return withVerdicts(req, { kind: "json", body: copy, ...(outcome.cache ? { cache: outcome.cache } : {}) });
  }
  const guards: StreamGuard[] = [];
  for (const guardrail of guardrails) {
    if (guardrail.content === null) {
      continue;
    }
    if (guardrail.samplingRate < 1 && engine.inference.random() >= guardrail.samplingRate) continue;
    if (guardrail.condition !== null && guardrail.condition(variables(engine, req, "output")()) !== true) continue;
    const redaction = guardrail.redaction;
    guards.push({ name: guardrail.name, check: guardrail.content, action: guardrail.action, ...(redaction ? { redaction: redaction.strategy === "replace" && redaction.replacement !== "" ? { strategy: "replace", replacement: redaction.replacement } : { strategy: redaction.strategy } } : {}) });
  }
  if (guards.length === 0) return withVerdicts(req, outcome);
  return withVerdicts(req, { kind: "stream", chunks: guardStream(api, outcome.chunks, guards, guardrails), ...(outcome.cache ? { cache: outcome.cache } : {}) });
}

/** The answer with the x-gw-guardrails header value of every guardrail that looked, when any did. */
function withVerdicts(req: InferenceRequest, outcome: ChatOutcome): ChatOutcome {
  if (req.guardrailVerdicts.length === 0) return outcome;
  return { ...outcome, guardrails: verdictHeader(req.guardrailVerdicts) };
}

/**
 * Relays a stream's events with their text deltas passed through the hold-back: text goes out once the
 * guardrails have seen what follows it. Events without text after the first text (tool-call deltas, the
 * finish event, usage) wait for the end, so none overtakes text still held: what is held at the end goes
 * out first, in a copy of the last text event, then they do.
 */
async function* guardStream(api: ContentApi, chunks: AsyncIterable<JsonObject>, guards: readonly StreamGuard[], guardrails: readonly GuardrailDefinition[]): AsyncGenerator<JsonObject> {
  const holdback = new StreamHoldback(guards);
  let last: JsonObject | null = null;
  const waiting: JsonObject[] = [];
  const stop = (guardrailName: string, kind: string): GuardrailBlockedError => {
    const guardrail = guardrails.find((g) => g.name === guardrailName) ?? { id: "", name: guardrailName };
    return new GuardrailBlockedError(guardrail, "output", `found ${kind}`, `${guardrailName}=block`);
  };
  for await (const chunk of chunks) {
    const fields = chunkFields(chunk);
    let carried = false;
    if (fields !== null) {
      walkDelta(api, fields, (text) => {
        carried = true;
        const release = holdback.push(text);
        if (release.block !== null) throw stop(release.block.guardrail, release.block.kind);
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
  if (rest.text !== "" && last !== null) {
    const copy = structuredClone(last);
    let first = true;
    walkDelta(api, copy, () => {
      const text = first ? rest.text : "";
      first = false;
      return text;
    });
    yield copy;
  }
  yield* waiting;
}
