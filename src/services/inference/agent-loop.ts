/**
 * Agent mode over the inference service: injects the caller's MCP tools into /v1/chat/completions,
 * /v1/responses and /anthropic/v1/messages requests and, when the model calls tools the gateway may run on its own
 * (tools_to_auto_execute and tools_to_execute, allowed by the key), runs them in parallel, feeds the
 * results back and calls the model again, up to max_agent_depth model calls that produced tool calls.
 * Every model call goes through ChatService.complete(), so routing, governance, budgets, rate limits and
 * telemetry apply to each call of the loop exactly as to a single request.
 */
import type { SsoCaller } from "./caller.js";
import type { IdpTokens } from "../sso/idp-tokens.js";
import type { RuntimeSettings } from "../../config/runtime-settings.js";
import { asAbortSignal } from "../../cancellation.js";
import { GatewayError } from "../../errors.js";
import { autoRunnableCalls, EXECUTE_TOOL_CODE, isMetaTool, runMetaTool } from "../../mcp/code-mode/meta-tools.js";
import { originOfHeaders } from "../../mcp/credentials/index.js";
import type { McpRuntime, OfferedTool } from "../../mcp/runtime.js";
import { isObject } from "../../providers/chat-translation/chat-input.js";
import type { ChatRequest, JsonObject, MessagesRequest, ResponsesRequest } from "../../providers/types.js";
import type { InferenceObserver } from "../../telemetry/inference-observer.js";
import type { TraceNode } from "../../telemetry/tracing.js";
import type { CustomLabelValues } from "../../telemetry/metrics.js";
import type { AdminAuth } from "../admin-auth.js";
import { injectTools, toolsForCaller, type AgentWire } from "./agent-tools.js";
import { INCLUDE_CLIENTS_HEADER, INCLUDE_TOOLS_HEADER, parseInclude, sentInclude, type Include } from "./tool-visibility.js";
import { addUsage, type ExecutedCall } from "./agent-summary.js";
import { WIRE_FORMATS, type ModelCall } from "./agent-wire-formats.js";
import { resolveToolCaller, type ToolCaller } from "./caller.js";
import type { ChatCall, ChatOutcome, ChatService } from "../../inference/calls.js";
import type { Inference } from "../../inference/state.js";
import { headerReader } from "../../http-headers.js";

/** What agent mode needs. */
export interface AgentDeps {
  /** The single-call inference service every model call of the loop goes through. */
  chat: ChatService;
  runtime: Pick<McpRuntime, "offeredTools" | "execute">;
  inference: Inference;
  settings: RuntimeSettings;
  /** Tells a signed-in user's session token from a virtual key, for per-user credentials. */
  auth: AdminAuth;
  /** IdP bearer tokens of the SSO issuer: the caller's user identity (absent: SSO off). */
  idp?: IdpTokens;
  /** The SSO user behind a request's gw_session cookie (absent: SSO off). */
  ssoSession?: (cookie: string | null | undefined) => SsoCaller | null;
  /** Hears the loop's tool calls. */
  observer: InferenceObserver;
}

/** Who runs the loop's tools, and where a submission link must point. */
interface LoopCaller extends ToolCaller {
  origin: string | null;
  custom: CustomLabelValues | undefined;
  /** The visible tools of code-mode clients, which the meta-tools reach. */
  codeMode: readonly OfferedTool[];
  /** The meta-tools injected (a request tool of the same name is the caller's own to run). */
  metaTools: ReadonlySet<string>;
}

/** The tools the runtime offers right now. */
type OfferedTools = ReturnType<McpRuntime["offeredTools"]>;

/** The wire format of a call. */
function wireOf(call: ChatCall): AgentWire {
  // Embeddings never come here: they go to the inference service directly, having no tools to inject.
  return call.method === undefined || call.method === "embedding" ? "chat" : call.method;
}

/** The call with another body, keeping its method. */
function withBody(call: ChatCall, body: JsonObject): ChatCall {
  // The client's raw body no longer describes the request.
  if (call.method === "responses") return { ...call, rawBody: undefined, method: "responses", body: body as ResponsesRequest };
  if (call.method === "messages") return { ...call, rawBody: undefined, method: "messages", body: body as MessagesRequest };
  return { ...call, rawBody: undefined, method: "chat", body: body as ChatRequest };
}

function errorResult(type: string, message: string): string {
  return JSON.stringify({ error: { type, message } });
}

/** Parses the model's JSON arguments; a message for the model when they are not a JSON object. */
function parseArguments(text: string): Record<string, unknown> | string {
  if (text.trim() === "") return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    return `the arguments are not valid JSON (${err instanceof Error ? err.message : String(err)})`;
  }
  return isObject(parsed) ? parsed : "the arguments must encode a JSON object";
}

function streamRefusal(wire: AgentWire): GatewayError {
  const endpoints = wire === "messages" ? "POST /anthropic/v1/messages" : "POST /v1/chat/completions or POST /v1/responses";
  return new GatewayError(
    "invalid_argument",
    "stream: true is not supported in agent mode (tools offered to this request run automatically in the gateway): " +
      `send the request without stream to ${endpoints}, or leave the auto-executed tools out ` +
      `with ${INCLUDE_CLIENTS_HEADER} or ${INCLUDE_TOOLS_HEADER}`,
    { type: "caller_agent_mode_streaming_unsupported", httpStatus: 400, field: "stream" },
  );
}

/** Creates the /v1 inference entry point with agent mode in front of `deps.chat`. */
export function createAgentService(deps: AgentDeps): ChatService {
  return { complete: (call) => complete(deps, call), countTokens: deps.chat.countTokens, refuse: deps.chat.refuse };
}

/**
 * A request without MCP tools to offer (the common case) goes straight to the inference service, with no
 * extra promise in between: hence not async.
 */
function complete(deps: AgentDeps, call: ChatCall): Promise<ChatOutcome> {
  let include: Include;
  try {
    // Checked even when no tool is offered: a malformed include header is a 400 either way.
    include = parseInclude(call.headers);
  } catch (err) {
    countRefusal(deps.chat, call, err);
    return Promise.reject(err);
  }
  // With client.mcp_disable_auto_tool_inject, only a request that asks for tools by header gets any.
  if (deps.settings.client.mcpDisableAutoToolInject && !sentInclude(include)) return deps.chat.complete(call);
  const available = deps.runtime.offeredTools();
  // No MCP tool at all: nothing to inject, no caller to resolve.
  if (available.length === 0) return deps.chat.complete(call);
  return completeWithTools(deps, call, available, include);
}

/** Injects the caller's tools; runs the loop when any of them is auto-executable. */
async function completeWithTools(deps: AgentDeps, sent: ChatCall, available: OfferedTools, { clients, tools }: Include): Promise<ChatOutcome> {
  const { chat } = deps;
  let caller: ToolCaller;
  try {
    caller = await resolveToolCaller(headerReader(sent.headers), deps);
  } catch {
    // The inference service refuses the same key itself, and records the refusal in the metrics.
    return chat.complete(sent);
  }
  const { key } = caller;
  // The inference service takes the key as found here rather than looking it up again.
  const call: ChatCall = { ...sent, virtualKey: key };
  const { tools: offered, codeMode } = toolsForCaller(available, { key, clients, tools });
  if (offered.length === 0) return chat.complete(call);
  const { tools: wireTools, injected } = injectTools(call.body, offered, wireOf(call));
  if (injected.length === 0) return chat.complete(call);
  const request: JsonObject = { ...call.body, tools: wireTools };
  const auto = new Set(injected.filter((tool) => tool.autoExecute).map((tool) => tool.name));
  if (auto.size === 0) return chat.complete(withBody(call, request));
  if (call.body.stream === true) {
    const refusal = streamRefusal(wireOf(call));
    countRefusal(chat, call, refusal);
    throw refusal;
  }
  const metaTools = new Set(injected.filter((tool) => isMetaTool(tool.name)).map((tool) => tool.name));
  // A per-user submission link points back at the origin the caller used, unless mcp_external_client_url says otherwise.
  const origin = originOfHeaders(call.headers);
  return loop(deps, call, request, auto, { ...caller, origin, custom: call.scope?.dims.metricValues, codeMode, metaTools });
}

/** The model calls and the tool calls they ask for, until an answer asks for none the gateway may run, or max_agent_depth. */
async function loop(deps: AgentDeps, call: ChatCall, request: JsonObject, auto: ReadonlySet<string>, caller: LoopCaller): Promise<ChatOutcome> {
  const { chat, settings, observer } = deps;
  const format = WIRE_FORMATS[wireOf(call)];
  // Read once per request, so a settings change applies from the next request on, never mid-loop.
  const { maxAgentDepth, toolExecutionTimeoutMs } = settings.toolManager;
  let usage: JsonObject | null = null;
  let depth = 0;
  let next = request;
  // The MCP SDK takes only a real AbortSignal.
  const signal = asAbortSignal(call.signal);
  const finish = (answer: JsonObject): ChatOutcome => ({ kind: "json", body: usage === null ? answer : { ...answer, usage } });
  const scope = call.scope;
  for (;;) {
    // Each model call and the tool calls it asks for hang under one iteration span.
    const iteration = scope?.trace?.iteration(depth + 1);
    try {
      const outcome = await chat.complete(withBody(iteration && scope ? { ...call, scope: { ...scope, trace: iteration } } : call, next));
      // Agent requests never stream; a stream here would mean the body changed under us.
      if (outcome.kind !== "json") return outcome;
      const answer = outcome.body;
      usage = addUsage(usage, answer["usage"]);
      const calls = format.calls(answer);
      if (calls.length === 0) return finish(answer);
      depth++;
      const decided = calls.map((c) => ({ call: c, run: runnable(c, auto, caller) }));
      const runs = decided.filter((d) => d.run !== null);
      if (runs.length === 0 || depth >= maxAgentDepth) {
        observer.toolCallsReturned(depth, calls.length);
        return finish(answer);
      }
      const executed = await Promise.all(runs.map((d) => execute(deps, d.call, caller, { timeoutMs: toolExecutionTimeoutMs, signal, trace: iteration }, d.run?.allowedCalls)));
      const pending = decided.filter((d) => d.run === null).map((d) => d.call);
      if (pending.length > 0) return finish(format.mixed(answer, executed, pending));
      next = format.followUp(next, answer, executed);
    } finally {
      iteration?.end();
    }
  }
}

/**
 * Whether the loop runs this call itself: an auto-executable tool, or executeToolCode whose code calls
 * only auto-executable tools by name (then the names it may call; read before the code runs).
 */
function runnable(call: ModelCall, auto: ReadonlySet<string>, caller: LoopCaller): { allowedCalls?: ReadonlySet<string> } | null {
  if (auto.has(call.name)) return {};
  if (call.name !== EXECUTE_TOOL_CODE || !caller.metaTools.has(call.name)) return null;
  const args = parseArguments(call.arguments);
  if (typeof args === "string") return {};
  const allowedCalls = autoRunnableCalls(args, caller.codeMode);
  return allowedCalls === null ? null : { allowedCalls };
}

/** How long one tool execution may take, what cancels it, and the iteration span its spans hang under. */
interface ExecutionLimits {
  timeoutMs: number;
  signal: AbortSignal;
  trace: TraceNode | undefined;
}

/** Runs one tool call the loop took on; a failure becomes the model's error result, never the request's. */
async function execute(deps: AgentDeps, call: ModelCall, caller: LoopCaller, limits: ExecutionLimits, allowedCalls?: ReadonlySet<string>): Promise<ExecutedCall> {
  const { runtime, settings, observer } = deps;
  const done = (content: string, isError: boolean): ExecutedCall => ({ id: call.id, name: call.name, content, isError });
  const args = parseArguments(call.arguments);
  if (typeof args === "string") return done(errorResult("invalid_arguments", `${call.name}: ${args}`), true);
  let failure: unknown = null;
  let executed: ExecutedCall;
  try {
    const options = executeOptions(caller, limits);
    if (caller.metaTools.has(call.name)) {
      const outcome = await runMetaTool(call.name, args, {
        tools: caller.codeMode,
        bindingLevel: settings.toolManager.codeModeBindingLevel,
        timeoutMs: limits.timeoutMs,
        signal: limits.signal,
        invoke: (name, toolArgs, inner) => runtime.execute(name, toolArgs, { ...options, signal: inner }),
        ...(allowedCalls ? { allowedCalls } : {}),
      });
      executed = done(outcome.content, outcome.isError);
    } else {
      const result = await runtime.execute(call.name, args, options);
      executed = done(result.content, result.isError);
    }
  } catch (err) {
    // A refusal that carries its own tool result (the per-user credential flow's mcp_auth_required
    // payload) reaches the model verbatim, so the application can show the user where to go.
    const toolResult: unknown = isObject(err) ? err["toolResult"] : undefined;
    if (typeof toolResult === "string") executed = done(toolResult, true);
    else if (err instanceof GatewayError) executed = done(errorResult(err.type, err.message), true);
    else {
      failure = err;
      executed = done(errorResult("tool_execution_failed", `tool ${call.name} could not be executed; the gateway log has the details`), true);
    }
  }
  observer.toolCall(call.name, failure);
  return executed;
}

/** The options of one tool execution for the loop's caller; its spans hang under the limits' trace. */
function executeOptions(caller: LoopCaller, { timeoutMs, signal, trace }: ExecutionLimits) {
  const { key } = caller;
  return {
    timeoutMs,
    signal,
    identity: caller.identity,
    subjectToken: caller.subjectToken,
    origin: caller.origin,
    ...(caller.custom ? { custom: caller.custom } : {}),
    ...(trace ? { trace } : {}),
    ...(key !== null ? { governance: { virtualKeyId: key.id, virtualKeyName: key.name } } : {}),
  };
}

/** Counts a refusal of agent mode's own (a bad include header, streaming with auto-executed tools). */
function countRefusal(chat: ChatService, call: ChatCall, err: unknown): void {
  if (err instanceof GatewayError) chat.refuse({ method: call.method ?? "chat", model: call.body.model, headers: call.headers, scope: call.scope }, err);
}
