/**
 * The tool_input and tool_output stages of one MCP tool call: the guardrails that cover the caller's
 * virtual key, its team and customer, and the tool's MCP client, run over the arguments' string values
 * before the upstream is called and over the result's texts after. A block stands in for the call (the
 * upstream is never called at tool_input) or for its result; a redaction rewrites a copy. No guardrail
 * configured for either stage: no guard at all, so a call pays nothing. A stage answers a promise only
 * when a guardrail that applies calls out to a service.
 */
import type { AbortSource } from "../../cancellation.js";
import type { CallOut } from "../../guardrails/call-out.js";
import { textsOf, writeTexts } from "../../guardrails/content-texts.js";
import { EMPTY_GUARDRAIL_VARIABLES, type GuardrailDefinition, type GuardrailStage, type GuardrailVariables } from "../../guardrails/definition.js";
import { GuardrailBlockedError } from "../../guardrails/guardrail-blocked.js";
import { blockDetail, runGuardrails, verdictHeader, type GuardrailPass, type RunContext, type VerdictEntry } from "../../guardrails/guardrail-run.js";
import type { GuardrailSet } from "../../guardrails/guardrail-set.js";
import type { RuleVariables } from "../../routing/cel-expression.js";
import type { TraceNode } from "../../telemetry/tracing.js";
import { walkArguments, walkResult, type Visit } from "./tool-texts.js";

/** What a guardrail's scope and `when` condition read of a caller's virtual key. */
export interface ToolCallerFacts {
  teamId: string;
  customerId: string;
  /** The key's routing-rule variables (its name, team, customer, budget use); built only for a `when` condition. */
  variables(): Partial<RuleVariables>;
}

/** What the tool stages need of the gateway. */
export interface ToolGuardrailDeps {
  guardrails: GuardrailSet;
  /** The facts of a virtual key by id; null when no such key is known. */
  callerOf(virtualKeyId: string): ToolCallerFacts | null;
  /** Runs the checks that call out (webhook, moderation, llm_judge); absent, they fail and on_error decides. */
  callOut?: CallOut;
  /** A number in [0, 1) for sampling. */
  random?: () => number;
}

/** One tool call as its guardrails see it. */
export interface ToolCallFacts {
  clientId: string;
  clientName: string;
  /** The tool's name without its client prefix. */
  tool: string;
  /** The caller's virtual key id; "" without one. */
  virtualKeyId: string;
  signal?: AbortSource;
  trace?: TraceNode;
  custom?: Readonly<Record<string, string>>;
}

/** The isError result of a call a guardrail blocked: the 446 error payload as JSON text. */
export class ToolCallBlocked {
  readonly text: string;

  constructor(readonly error: GuardrailBlockedError) {
    this.text = JSON.stringify({ error: error.toJson() });
  }

  /** The MCP result the caller receives. */
  result(): { content: [{ type: "text"; text: string }]; isError: true } {
    return { content: [{ type: "text", text: this.text }], isError: true };
  }
}

/** A guarded value: as it was, a redacted copy, or the block that replaces it. */
export type Guarded<T> = T | ToolCallBlocked | Promise<T | ToolCallBlocked>;

/** The guard of one call: its stages' guardrails and the verdicts they left. */
export class ToolCallGuard {
  readonly #verdicts: VerdictEntry[] = [];

  constructor(
    private readonly deps: ToolGuardrailDeps,
    private readonly call: ToolCallFacts,
    private readonly caller: ToolCallerFacts | null,
    private readonly input: readonly GuardrailDefinition[],
    private readonly output: readonly GuardrailDefinition[],
  ) {}

  /** The arguments to send upstream, or the block that stands in for the call. */
  arguments(args: Record<string, unknown>): Guarded<Record<string, unknown>> {
    return this.#guard("tool_input", this.input, args, walkArguments);
  }

  /** An MCP tool result (content blocks, structuredContent) for the caller, or the block that replaces it. */
  result(raw: Record<string, unknown>): Guarded<Record<string, unknown>> {
    return this.#guard("tool_output", this.output, raw, walkResult);
  }

  /** The text of a result the gateway made itself (an upstream failure), or the block that replaces it. */
  text(text: string): Guarded<string> {
    const guarded = this.#guard("tool_output", this.output, { text }, (holder, visit) => {
      const next = visit(holder.text);
      if (next !== undefined) holder.text = next;
    });
    const unwrap = (value: { text: string } | ToolCallBlocked): string | ToolCallBlocked => (value instanceof ToolCallBlocked ? value : value.text);
    return guarded instanceof Promise ? guarded.then(unwrap) : unwrap(guarded);
  }

  /** The x-gw-guardrails value of every guardrail that looked so far; null when none did. */
  header(): string | null {
    return this.#verdicts.length === 0 ? null : verdictHeader(this.#verdicts);
  }

  #guard<T extends object>(stage: GuardrailStage, guardrails: readonly GuardrailDefinition[], value: T, walk: (value: T, visit: Visit) => void): Guarded<T> {
    if (guardrails.length === 0) return value;
    const texts = textsOf((visit) => walk(value, visit));
    const settle = (pass: GuardrailPass): T | ToolCallBlocked => {
      this.#verdicts.push(...pass.verdicts);
      if (pass.blocked !== null) return new ToolCallBlocked(new GuardrailBlockedError(pass.blocked.guardrail, stage, blockDetail(pass.blocked), verdictHeader(this.#verdicts)));
      if (!pass.changed) return value;
      const copy = structuredClone(value);
      writeTexts((visit) => walk(copy, visit), pass.texts);
      return copy;
    };
    const ran = runGuardrails(guardrails, texts, this.#context(stage));
    return ran instanceof Promise ? ran.then(settle) : settle(ran);
  }

  #context(stage: GuardrailStage): RunContext {
    const { call, caller, deps } = this;
    const variables = (): GuardrailVariables => ({ ...EMPTY_GUARDRAIL_VARIABLES, ...caller?.variables(), virtual_key_id: call.virtualKeyId, stage, mcp_client: call.clientName, tool: call.tool });
    const observer = deps.guardrails.observer;
    return {
      stage,
      variables,
      random: deps.random ?? Math.random,
      ...(deps.callOut ? { callOut: deps.callOut } : {}),
      metadata: { virtualKeyId: call.virtualKeyId, model: "", tool: { mcpClient: call.clientName, name: call.tool } },
      ...(call.signal ? { signal: call.signal } : {}),
      ...(observer ? { observer } : {}),
      ...(call.trace ? { trace: call.trace } : {}),
      ...(call.custom ? { custom: call.custom } : {}),
    };
  }
}

/** The guard of a call, or null when no guardrail of either tool stage covers it. */
export function toolCallGuard(deps: ToolGuardrailDeps, call: ToolCallFacts): ToolCallGuard | null {
  const snapshot = deps.guardrails.snapshot;
  if (!snapshot.hasStage("tool_input") && !snapshot.hasStage("tool_output")) return null;
  const caller = call.virtualKeyId === "" ? null : deps.callerOf(call.virtualKeyId);
  const subject = { virtualKeyId: call.virtualKeyId, teamId: caller?.teamId ?? "", customerId: caller?.customerId ?? "", mcpClientId: call.clientId };
  const input = snapshot.applicable("tool_input", subject);
  const output = snapshot.applicable("tool_output", subject);
  if (input.length === 0 && output.length === 0) return null;
  return new ToolCallGuard(deps, call, caller, input, output);
}
