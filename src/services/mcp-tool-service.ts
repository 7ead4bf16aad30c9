/** gw.inference.v1.McpToolService: POST /v1/mcp/tool/execute runs one OpenAI tool call and answers a `role: tool` message. */
import type { ServiceImpl } from "@connectrpc/connect";
import { invalidField } from "../errors.js";
import type { McpRuntime } from "../mcp/runtime.js";
import { McpToolService } from "../../gen/gw/inference/v1/tool_pb.js";

/** Parses OpenAI's JSON-encoded function arguments; empty means no arguments. */
export function parseToolArguments(text: string): Record<string, unknown> {
  if (text.trim() === "") return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw invalidField("function.arguments", `is not valid JSON (${err instanceof Error ? err.message : String(err)})`);
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    throw invalidField("function.arguments", "must encode a JSON object");
  }
  return parsed as Record<string, unknown>;
}

/** Creates the service implementation. */
export function createMcpToolService(runtime: McpRuntime): ServiceImpl<typeof McpToolService> {
  return {
    async executeTool(req, ctx) {
      if (req.type !== "" && req.type !== "function") throw invalidField("type", `must be "function", got "${req.type}"`);
      if (!req.function || req.function.name === "") throw invalidField("function.name", "is required");
      const args = parseToolArguments(req.function.arguments);
      const result = await runtime.execute(req.function.name, args, { signal: ctx.signal });
      return { role: "tool", toolCallId: req.id, content: result.content };
    },
  };
}
