/**
 * gw.inference.v1.McpToolService: POST /v1/mcp/tool/execute runs one OpenAI tool call and answers a
 * `role: tool` message. A caller with a virtual key may run only the tools its mcp_configs grant, and the
 * key's id and name label the tool's metrics. Per-user clients run with the caller's own credential
 * (identity: signed-in user > virtual key > session id); without one the answer is a 401
 * (mcp_identity_required, or mcp_auth_required with the submission link). The code-mode meta-tools run
 * here too, over the code-mode tools the caller sees, so an application can run a pending executeToolCode.
 */
import type { JsonObject } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import type { RuntimeSettings } from "../config/runtime-settings.js";
import { GatewayError, invalidField } from "../errors.js";
import { McpAuthRequiredError } from "../mcp/credentials/index.js";
import { isMetaTool, runMetaTool } from "../mcp/code-mode/meta-tools.js";
import type { McpRuntime } from "../mcp/runtime.js";
import { splitToolName } from "../mcp/tool-names.js";
import { McpToolService } from "../../gen/gw/inference/v1/tool_pb.js";
import type { AdminAuth } from "./admin-auth.js";
import { kRequestScope } from "./context.js";
import { errorWithFields } from "./connect-errors.js";
import { resolveToolCaller } from "./inference/caller.js";
import { INCLUDE_CLIENTS_HEADER, INCLUDE_TOOLS_HEADER, parseInclude, toolVisible, visibleTools } from "./inference/tool-visibility.js";
import type { Inference } from "../inference/state.js";

/** What the tool service needs. */
export interface McpToolServiceDeps {
  runtime: McpRuntime;
  inference: Inference;
  settings: RuntimeSettings;
  auth: AdminAuth;
}

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
export function createMcpToolService(deps: McpToolServiceDeps): ServiceImpl<typeof McpToolService> {
  const { runtime, settings } = deps;
  return {
    async executeTool(req, ctx) {
      if (req.type !== "" && req.type !== "function") throw invalidField("type", `must be "function", got "${req.type}"`);
      if (!req.function || req.function.name === "") throw invalidField("function.name", "is required");
      if (req.id === "") throw invalidField("id", "is required: the tool call's id, which the answer repeats as tool_call_id");
      const { key, identity, subjectToken } = await resolveToolCaller((name) => ctx.requestHeader.get(name), deps);
      const parts = splitToolName(req.function.name);
      const include = parseInclude(Object.fromEntries(ctx.requestHeader));
      const ref = parts && { clientName: parts.client, toolName: parts.tool, allowOnAllVirtualKeys: runtime.allowsAllVirtualKeys(parts.client) };
      if (ref && !toolVisible({ key, ...include }, ref)) {
        const who = key === null ? "this request" : `virtual key "${key.name}"`;
        throw new GatewayError("permission_denied", `${who} may not run tool "${ref.toolName}" of MCP client "${ref.clientName}": add it to the key's mcp_configs (and to the ${INCLUDE_CLIENTS_HEADER} / ${INCLUDE_TOOLS_HEADER} headers when sent)`, {
          type: "tool_not_allowed",
        });
      }
      const args = parseToolArguments(req.function.arguments);
      const scope = ctx.values.get(kRequestScope);
      if (scope.trace !== undefined && key !== null) scope.trace.virtualKey(key.id, key.name);
      const options = {
        signal: ctx.signal,
        identity,
        subjectToken,
        origin: scope.origin,
        custom: scope.dims.metricValues,
        ...(scope.trace !== undefined ? { trace: scope.trace } : {}),
        ...(key !== null ? { governance: { virtualKeyId: key.id, virtualKeyName: key.name } } : {}),
      };
      if (isMetaTool(req.function.name)) {
        const codeMode = visibleTools(runtime.offeredTools(), { key, ...include }).filter((offer) => offer.codeMode);
        if (codeMode.length === 0) {
          throw new GatewayError("not_found", `tool "${req.function.name}" is a code-mode tool and no code-mode MCP client is visible to this request`, { type: "mcp_client_not_found" });
        }
        const outcome = await runMetaTool(req.function.name, args, {
          tools: codeMode,
          bindingLevel: settings.toolManager.codeModeBindingLevel,
          timeoutMs: settings.toolManager.toolExecutionTimeoutMs,
          signal: ctx.signal,
          invoke: (name, toolArgs, signal) => runtime.execute(name, toolArgs, { ...options, signal }),
        });
        if (outcome.authRequired !== null) throw errorWithFields(outcome.authRequired, { mcp_auth_required: outcome.authRequired.payload as unknown as JsonObject });
        return { role: "tool", toolCallId: req.id, content: outcome.content };
      }
      try {
        const result = await runtime.execute(req.function.name, args, options);
        if (result.guardrails !== undefined) ctx.responseHeader.set("x-gw-guardrails", result.guardrails);
        return { role: "tool", toolCallId: req.id, content: result.content };
      } catch (err) {
        if (err instanceof McpAuthRequiredError) {
          throw errorWithFields(err, { mcp_auth_required: err.payload as unknown as JsonObject });
        }
        throw err;
      }
    },
  };
}
