/**
 * A guardrail as the request path runs it: plain values with every default applied and its `when`
 * condition compiled, so nothing is parsed or looked up per request.
 */
import { CelScalar } from "@bufbuild/cel";
import type { ContentCheck } from "./check-types.js";
import type { PiiEntity } from "./checks/pii.js";
import { EMPTY_RULE_VARIABLES, RULE_VARIABLE_TYPES, conditionVariables, type Condition, type RuleVariables } from "../routing/cel-expression.js";

/** Where in a request a guardrail looks. */
export type GuardrailStage = "input" | "output" | "tool_input" | "tool_output" | "tool_definition";

/** Every stage, in the order a request meets them. */
export const GUARDRAIL_STAGES: readonly GuardrailStage[] = ["input", "output", "tool_input", "tool_output", "tool_definition"];

/** The level a guardrail applies at. */
export type GuardrailScope = "global" | "customer" | "team" | "virtual_key" | "mcp_client";

/** The order guardrails of one stage are listed in, and their redactions applied: broadest first. */
export const GUARDRAIL_SCOPE_ORDER: readonly GuardrailScope[] = ["global", "customer", "team", "virtual_key", "mcp_client"];

export type { PiiEntity };

/** What a guardrail looks for, with its type's settings. */
export type GuardrailCheck =
  /** `entities` empty: every entity. */
  | { type: "pii"; entities: readonly PiiEntity[] }
  | { type: "secrets" }
  | { type: "regex"; patterns: readonly string[]; caseInsensitive: boolean }
  | { type: "keywords"; words: readonly string[] }
  | { type: "prompt_injection" }
  | { type: "moderation"; provider: string; model: string }
  | { type: "llm_judge"; provider: string; model: string; instructions: string }
  | { type: "webhook"; url: string; headers: Readonly<Record<string, string>>; timeoutMs: number };

/** The check types. */
export type GuardrailCheckType = GuardrailCheck["type"];

/** The checks whose findings can be cut out of the content, so `redact` is valid for them. */
export const REDACTABLE_CHECKS: ReadonlySet<GuardrailCheckType> = new Set<GuardrailCheckType>(["pii", "secrets", "regex", "keywords", "webhook"]);

/** What a guardrail does with a finding. */
export type GuardrailAction = "block" | "redact" | "warn";

/** How a redact guardrail replaces what it found. */
export interface GuardrailRedaction {
  strategy: "mask" | "replace" | "hash";
  /** The replace strategy's text; "<kind>" stands for the kind found. "" for the other strategies. */
  replacement: string;
}

/** The variables a `when` condition reads: the routing-rule variables, the stage, and the MCP client and tool of a tool stage. */
export interface GuardrailVariables extends RuleVariables {
  stage: GuardrailStage | "";
  /** The MCP client's name at a tool stage; "" otherwise. */
  mcp_client: string;
  /** The tool's name (without its client prefix) at a tool stage; "" otherwise. */
  tool: string;
}

/** The values every variable takes when nothing is known. */
export const EMPTY_GUARDRAIL_VARIABLES: Readonly<GuardrailVariables> = { ...EMPTY_RULE_VARIABLES, stage: "", mcp_client: "", tool: "" };

/** The CEL variable set of `when` conditions. */
export const GUARDRAIL_CONDITION_VARIABLES = conditionVariables<GuardrailVariables>(
  { ...RULE_VARIABLE_TYPES, stage: CelScalar.STRING, mcp_client: CelScalar.STRING, tool: CelScalar.STRING },
  EMPTY_GUARDRAIL_VARIABLES,
);

/** A compiled `when` condition. */
export type GuardrailCondition = Condition<GuardrailVariables>;

/** One guardrail, ready to run. */
export interface GuardrailDefinition {
  readonly id: string;
  readonly name: string;
  readonly enabled: boolean;
  readonly stages: ReadonlySet<GuardrailStage>;
  readonly scope: GuardrailScope;
  /** "" for global; the customer's, team's, virtual key's or MCP client's id otherwise. */
  readonly scopeId: string;
  /** null when the guardrail always applies (no `when`). */
  readonly condition: GuardrailCondition | null;
  readonly check: GuardrailCheck;
  /** The check compiled, for the in-process types (pii, secrets, regex, keywords, prompt_injection); null for those that call out. */
  readonly content: ContentCheck | null;
  readonly action: GuardrailAction;
  /** Set exactly when the action is redact. */
  readonly redaction: GuardrailRedaction | null;
  readonly onError: "allow" | "block";
  readonly timeoutMs: number;
  /** The share of requests checked, 0 to 1. */
  readonly samplingRate: number;
}
