/**
 * The tool_definition stage over one client's tools: the guardrails that apply (global and the client's
 * own) run over each tool's name, description and input-schema descriptions. A block quarantines the tool;
 * a redaction rewrites the descriptions callers see, never the name (a call names the tool as the upstream
 * does). Each tool is judged apart, so a block names the tool it hides.
 */
import { textsOf, writeTexts } from "../../guardrails/content-texts.js";
import { EMPTY_GUARDRAIL_VARIABLES, type GuardrailDefinition } from "../../guardrails/definition.js";
import { blockDetail, runGuardrails, type GuardrailPass, type RunContext } from "../../guardrails/guardrail-run.js";
import type { DiscoveredTool } from "../upstream-session.js";
import type { ToolGuardrailDeps } from "./tool-call-guard.js";
import { walkDescriptions, type Visit } from "./tool-texts.js";

/** What the stage decided of one tool. */
export interface DefinitionVerdict {
  /** Why the tool is quarantined; null when no guardrail blocked it. */
  blocked: string | null;
  /** The definition callers see, when a guardrail redacted its descriptions; null otherwise. */
  shown: DiscoveredTool | null;
}

/** Visits the name, then the descriptions; a replacement of the name is dropped, since a call must still reach the tool by it. */
function walkDefinition(tool: DiscoveredTool, visit: Visit): void {
  visit(tool.name);
  walkDescriptions(tool, visit);
}

function contextOf(deps: ToolGuardrailDeps, clientName: string, tool: string): RunContext {
  const observer = deps.guardrails.observer;
  return {
    stage: "tool_definition",
    variables: () => ({ ...EMPTY_GUARDRAIL_VARIABLES, stage: "tool_definition", mcp_client: clientName, tool }),
    random: deps.random ?? Math.random,
    ...(deps.callOut ? { callOut: deps.callOut } : {}),
    metadata: { virtualKeyId: "", model: "", tool: { mcpClient: clientName, name: tool } },
    ...(observer ? { observer } : {}),
  };
}

function verdictOf(tool: DiscoveredTool, pass: GuardrailPass): DefinitionVerdict {
  if (pass.blocked !== null) return { blocked: `guardrail "${pass.blocked.guardrail.name}" blocked its definition: ${blockDetail(pass.blocked)}`, shown: null };
  if (!pass.changed) return { blocked: null, shown: null };
  const shown = structuredClone(tool);
  writeTexts((visit) => walkDefinition(shown, visit), pass.texts);
  return { blocked: null, shown };
}

/** The verdict of each tool by name: synchronous unless a guardrail calls out. */
export function screenDefinitions(
  deps: ToolGuardrailDeps,
  guardrails: readonly GuardrailDefinition[],
  clientName: string,
  tools: readonly DiscoveredTool[],
): Map<string, DefinitionVerdict> | Promise<Map<string, DefinitionVerdict>> {
  const out = new Map<string, DefinitionVerdict>();
  const pending: Promise<void>[] = [];
  for (const tool of tools) {
    const ran = runGuardrails(guardrails, textsOf((visit) => walkDefinition(tool, visit)), contextOf(deps, clientName, tool.name));
    if (ran instanceof Promise) pending.push(ran.then((pass) => void out.set(tool.name, verdictOf(tool, pass))));
    else out.set(tool.name, verdictOf(tool, ran));
  }
  return pending.length === 0 ? out : Promise.all(pending).then(() => out);
}
