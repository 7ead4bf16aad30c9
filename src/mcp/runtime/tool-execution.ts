/**
 * Tool execution by prefixed name (execute() for /v1, agent and code mode and /mcp): the checks, the
 * tool_input and tool_output guardrails, the upstream call with the caller's credential, and the
 * call's metric and span. Each execution is resolved once into a ToolCallPlan that the steps share.
 */
import { GatewayError } from "../../errors.js";
import type { CustomLabelValues, GovernanceLabels, McpErrorType } from "../../telemetry/metrics.js";
import type { TraceNode } from "../../telemetry/tracing.js";
import type { CallerCredential, ClientRuntime } from "../client-runtime.js";
import { McpAuthRequiredError, type CallerIdentity } from "../credentials/index.js";
import { splitToolName, toolAllowed } from "../tool-names.js";
import { guardedCall } from "../tool-guardrails/guarded-call.js";
import { toolCallGuard, type ToolCallFacts } from "../tool-guardrails/tool-call-guard.js";
import type { ToolCallResult } from "../upstream-session.js";
import { refusalOf } from "./call-refusals.js";
import { perUserClient, type CallerCredentials, type CallerContext } from "./caller-credentials.js";
import type { RuntimeState } from "./runtime-state.js";
import type { ToolCatalog } from "./tool-catalog.js";

/** Options of one tool execution. */
export interface ExecuteOptions {
  /** Overrides tool_execution_timeout. */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Virtual key labels of the tool's metric. */
  governance?: GovernanceLabels;
  /** Who is calling (user > virtual key > session); per_user_headers clients need it. */
  identity?: CallerIdentity | null;
  /** The signed-in caller's own IdP access token, which token_exchange clients exchange (never sent upstream). */
  subjectToken?: string | null;
  /** The origin the request came in by, for submission links when mcp_external_client_url is unset. */
  origin?: string | null;
  /** The request's dimension values for the metric's custom labels. */
  custom?: CustomLabelValues;
  /** The span the tool call's span hangs under, when the request is traced. */
  trace?: TraceNode;
}

/** One execution as execute() resolved it, built once and handed whole to each step. */
export interface ToolCallPlan {
  readonly client: ClientRuntime;
  /** The tool's name at the upstream. */
  readonly tool: string;
  /** `<client>-<tool>`, as the caller named it. */
  readonly prefixedName: string;
  readonly options: ExecuteOptions;
  /** Who the call acts for, read from `options`. */
  readonly caller: CallerContext;
  /** The traceparent of the tool call's span, when the request is traced. */
  readonly traceparent: string | undefined;
}

/** The time limits of one tool execution. */
interface CallLimits {
  timeoutMs: number;
  deadline: AbortSignal;
  signal: AbortSignal;
}

/** How a call with a credential of the caller's renews it after the upstream rejected it. */
interface RejectionRenewal<C extends CallerCredential> {
  credential: () => Promise<C>;
  /** Renews what it can after a rejection of `sent`; false: the call fails with the error. */
  rejected: (sent: C) => Promise<boolean>;
}

/** True when the tool says a second run cannot do harm (read-only or idempotent), so a call the upstream rejected may be retried. */
function safeToRetry(client: ClientRuntime, tool: string): boolean {
  const hints = client.tools.find((t) => t.name === tool)?.annotations;
  return hints?.readOnlyHint === true || hints?.idempotentHint === true;
}

/** The error result of a call that failed upstream. */
function failedResult(err: unknown, prefixedName: string, limits: Pick<CallLimits, "timeoutMs" | "deadline">): ToolCallResult {
  if (limits.deadline.aborted || (err instanceof GatewayError && err.type === "upstream_timeout")) {
    return { content: `Error: tool ${prefixedName} timed out after ${limits.timeoutMs} ms`, isError: true, raw: null };
  }
  const message = err instanceof Error ? err.message : String(err);
  return { content: `Error: tool ${prefixedName} failed: ${message}`, isError: true, raw: null };
}

/** Runs tools by prefixed name. */
export class ToolExecution {
  constructor(
    private readonly state: RuntimeState,
    private readonly catalog: ToolCatalog,
    private readonly callerCredentials: CallerCredentials,
  ) {}

  /**
   * Executes `<client>-<tool>`. Caller mistakes (no such client, tool not allowed, client refusing
   * calls) throw; what happens upstream (tool error, failure, timeout) comes back as an error result.
   * A per-user (per_user_headers, per_user_oauth) client needs `identity`: without one the call is a 401 (mcp_identity_required),
   * and without a usable credential it throws McpAuthRequiredError, whose `toolResult` is the
   * mcp_auth_required JSON, and the tool does not run.
   */
  async execute(prefixedName: string, args: Record<string, unknown>, options: ExecuteOptions): Promise<ToolCallResult> {
    const parts = splitToolName(prefixedName);
    if (!parts) {
      throw new GatewayError("invalid_argument", `function.name: "${prefixedName}" is not a gateway tool name; use <client>-<tool>`, { field: "function.name" });
    }
    const client = this.state.byName(parts.client);
    if (!client) throw new GatewayError("not_found", `no MCP client named "${parts.client}" (tool names are <client>-<tool>)`, { type: "mcp_client_not_found" });
    // From here on the call names a configured client, so it is a tool execution and is measured;
    // unparseable names and unknown clients are caller mistakes, not MCP operations.
    const started = performance.now();
    let errorType: McpErrorType = "_OTHER";
    const span = options.trace?.toolCall({ tool: parts.tool, client: client.spec.name, authType: client.spec.authType, name: prefixedName, args });
    let result: ToolCallResult | undefined;
    try {
      const caller = { identity: options.identity ?? null, subjectToken: options.subjectToken ?? null, origin: options.origin ?? null };
      result = await this.run({ client, tool: parts.tool, prefixedName, options, caller, traceparent: span?.traceparent() }, args);
      if (!result.isError) errorType = "";
      return result;
    } catch (err) {
      if (err instanceof McpAuthRequiredError || (err instanceof GatewayError && err.type === "mcp_identity_required")) errorType = "auth_required";
      throw err;
    } finally {
      span?.end({ status: null, ...(errorType !== "" ? { errorType: errorType === "_OTHER" ? "tool_error" : errorType } : {}), ...(result ? { completion: result.content } : {}) });
      this.state.deps.metrics?.recordMcpToolCall({
        mcpClient: client.spec.name,
        toolName: parts.tool,
        durationS: (performance.now() - started) / 1000,
        errorType,
        ...(options.governance ? { governance: options.governance } : {}),
        ...(options.custom ? { custom: options.custom } : {}),
      });
    }
  }

  /** The checks, the guardrails and the upstream call of one execution (execute() measures it). */
  private async run(plan: ToolCallPlan, args: Record<string, unknown>): Promise<ToolCallResult> {
    const { client, tool } = plan;
    if (!toolAllowed(client.spec.toolsToExecute, tool)) {
      throw new GatewayError("permission_denied", `tool "${tool}" is not in tools_to_execute of MCP client "${client.spec.name}"`, { type: "tool_not_allowed" });
    }
    const refused = refusalOf(client, this.state.deps.states);
    if (refused) throw refused;
    // Only tools the upstream listed were screened (tool_definition guardrails, pinning), so a name it
    // never listed must not reach it; it reads exactly like a tool that does not exist.
    if (!client.tools.some((t) => t.name === tool)) {
      throw new GatewayError("not_found", `MCP client "${client.spec.name}" has no tool "${tool}" (tools/list shows the ones it has)`, { type: "tool_not_found" });
    }
    this.catalog.refuseQuarantined(client, tool);
    const { guardrails } = this.state.deps;
    const guard = guardrails ? toolCallGuard(guardrails, this.callFacts(plan)) : null;
    return guardedCall(guard, args, (sent) => this.callUpstream(plan, sent));
  }

  /** The guardrails' view of one call by the caller of the plan's options. */
  private callFacts({ client, tool, options }: ToolCallPlan): ToolCallFacts {
    return {
      clientId: client.id,
      clientName: client.spec.name,
      tool,
      // The metric's key labels are the caller's key: the same key whose guardrails cover the call.
      virtualKeyId: options.governance?.virtualKeyId ?? "",
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.trace ? { trace: options.trace } : {}),
      ...(options.custom ? { custom: options.custom } : {}),
    };
  }

  /** The upstream call of one execution, with the caller's credential where the client needs one. */
  private async callUpstream(plan: ToolCallPlan, args: Record<string, unknown>): Promise<ToolCallResult> {
    const { client, options } = plan;
    const timeoutMs = options.timeoutMs ?? this.state.deps.settings.toolManager.toolExecutionTimeoutMs;
    const deadline = AbortSignal.timeout(timeoutMs);
    const signal = options.signal ? AbortSignal.any([deadline, options.signal]) : deadline;
    const limits = { timeoutMs, deadline, signal };
    if (client.spec.authType === "per_user_oauth") return this.runAsCaller(plan, args, limits);
    if (client.spec.authType === "token_exchange") return this.runExchanged(plan, args, limits);
    // From memory: the per-user lookup never waits on the database (per_user_headers; undefined for the rest).
    const credential = await this.callerCredentials.of(client, plan.caller);
    try {
      return await client.call(plan.tool, args, timeoutMs, signal, credential, plan.traceparent);
    } catch (err) {
      return failedResult(err, plan.prefixedName, limits);
    }
  }

  /**
   * A per_user_oauth call with the caller's own token. When the upstream rejects it (401/403) the token is
   * refreshed; a grant the authorization server refused for good answers mcp_auth_required, so the caller
   * can consent again.
   */
  private runAsCaller(plan: ToolCallPlan, args: Record<string, unknown>, limits: CallLimits): Promise<ToolCallResult> {
    const { client, caller } = plan;
    const perUser = perUserClient(client);
    return this.callRetryingRejection(plan, args, limits, {
      credential: () => this.callerCredentials.oauthBearer(perUser, caller),
      rejected: async ({ bearer }) => {
        if (!caller.identity) return false;
        // A 403 never reached the token source: refresh here (shared with a refresh already running).
        if (bearer.lastSent !== null) await this.state.credentials.refreshRejected(perUser, caller.identity, bearer.lastSent).catch(() => undefined);
        const again = await this.state.credentials.oauthAuthRequiredIfDead(perUser, caller.identity, caller.origin);
        if (again) throw again;
        return true;
      },
    });
  }

  /**
   * A token_exchange call with a token exchanged for the caller. When the upstream rejects it (401/403) the
   * cached exchanged token is dropped, so the next call (or the retry) exchanges afresh.
   */
  private runExchanged(plan: ToolCallPlan, args: Record<string, unknown>, limits: CallLimits): Promise<ToolCallResult> {
    const { client, caller } = plan;
    return this.callRetryingRejection(plan, args, limits, {
      credential: async () => ({ values: await this.callerCredentials.exchangedHeaders(client, caller) }),
      rejected: async () => {
        // exchangedHeaders only answers when both are set.
        if (caller.identity && caller.subjectToken) this.state.exchanger.forget(client.id, caller.identity, caller.subjectToken);
        return true;
      },
    });
  }

  /**
   * One call with a credential of the caller's that the upstream may reject (401/403). After a rejection
   * `rejected` renews what it can (false: the call fails with the error), and the call is retried once with
   * a fresh credential, but only for a tool whose annotations say it is read-only or idempotent; any other
   * call fails closed with the error (it may have had an effect before the rejection was seen).
   */
  private async callRetryingRejection<C extends CallerCredential>(
    plan: ToolCallPlan,
    args: Record<string, unknown>,
    limits: CallLimits,
    auth: RejectionRenewal<C>,
  ): Promise<ToolCallResult> {
    const { client, tool } = plan;
    const retryable = safeToRetry(client, tool);
    for (let attempt = 0; ; attempt++) {
      const credential = await auth.credential();
      try {
        return await client.call(tool, args, limits.timeoutMs, limits.signal, credential, plan.traceparent);
      } catch (err) {
        if (!(err instanceof GatewayError && err.type === "upstream_auth_rejected")) return failedResult(err, plan.prefixedName, limits);
        if (!(await auth.rejected(credential)) || attempt > 0 || !retryable) return failedResult(err, plan.prefixedName, limits);
      }
    }
  }
}
