/**
 * One tool execution of the runtime with its guardrails around it: tool_input over the arguments (a block
 * answers without calling the upstream), the call with what they let through, tool_output over the result
 * (a block replaces it). The result carries the x-gw-guardrails value of every guardrail that looked.
 */
import { toolResultText } from "../tool-result.js";
import type { ToolCallResult } from "../upstream-session.js";
import { ToolCallBlocked, type ToolCallGuard } from "./tool-call-guard.js";

function blockedResult(blocked: ToolCallBlocked, guard: ToolCallGuard): ToolCallResult {
  return { content: blocked.text, isError: true, raw: blocked.result(), ...withHeader(guard) };
}

function withHeader(guard: ToolCallGuard): { guardrails?: string } {
  const header = guard.header();
  return header === null ? {} : { guardrails: header };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** The result as tool_output leaves it. */
async function guardedResult(guard: ToolCallGuard, result: ToolCallResult): Promise<ToolCallResult> {
  if (isObject(result.raw)) {
    const raw = await guard.result(result.raw);
    if (raw instanceof ToolCallBlocked) return blockedResult(raw, guard);
    if (raw === result.raw) return { ...result, ...withHeader(guard) };
    return { content: toolResultText(raw), isError: raw["isError"] === true, raw, ...withHeader(guard) };
  }
  // A result the gateway wrote (an upstream failure) may quote what the upstream said.
  const text = await guard.text(result.content);
  if (text instanceof ToolCallBlocked) return blockedResult(text, guard);
  return { ...result, content: text, ...withHeader(guard) };
}

/** Runs `call` with what tool_input lets through, and answers what tool_output leaves of its result; without a guard, just `call`. */
export async function guardedCall(guard: ToolCallGuard | null, args: Record<string, unknown>, call: (args: Record<string, unknown>) => Promise<ToolCallResult>): Promise<ToolCallResult> {
  if (guard === null) return call(args);
  const sent = await guard.arguments(args);
  if (sent instanceof ToolCallBlocked) return blockedResult(sent, guard);
  return guardedResult(guard, await call(sent));
}
