/**
 * What the gateway's own MCP endpoint (/mcp) asks of the services: who is calling (the /v1 caller
 * headers), the tools that caller sees (tool-visibility.ts: the same rule as /v1 injection), and one tool
 * call through the MCP runtime, exactly as POST /v1/mcp/tool/execute runs it. A tool the caller may not
 * use and a tool that does not exist give the same answer.
 */
import type { SsoCaller } from "./inference/caller.js";
import type { IdpTokens } from "./sso/idp-tokens.js";
import type { IncomingHttpHeaders } from "node:http";
import type { RuntimeSettings } from "../config/runtime-settings.js";
import { GatewayError } from "../errors.js";
import { McpAuthRequiredError, originOfHeaders, type AuthRequiredPayload } from "../mcp/credentials/index.js";
import { isMetaTool, META_TOOLS, runMetaTool } from "../mcp/code-mode/meta-tools.js";
import type { McpRuntime, OfferedTool } from "../mcp/runtime.js";
import { splitToolName } from "../mcp/tool-names.js";
import type { CustomLabelValues } from "../telemetry/metrics.js";
import type { TraceNode } from "../telemetry/tracing.js";
import type { AdminAuth } from "./admin-auth.js";
import { resolveToolCaller, type ToolCaller } from "./inference/caller.js";
import type { Inference } from "../inference/state.js";
import { parseInclude, toolVisible, visibleTools, type Include } from "./inference/tool-visibility.js";
import { headerReader } from "../http-headers.js";

/** What the MCP endpoint's tool side needs. */
export interface McpServerToolsDeps {
  runtime: McpRuntime;
  inference: Inference;
  settings: RuntimeSettings;
  auth: AdminAuth;
  /** IdP bearer tokens of the SSO issuer: the caller's user identity (absent: SSO off). */
  idp?: IdpTokens;
  /** The SSO user behind a request's gw_session cookie (absent: SSO off). */
  ssoSession?: (cookie: string | null | undefined) => SsoCaller | null;
}

/** One /mcp request's caller: its key and identity, its include headers, and where links point back to. */
export interface McpCaller extends ToolCaller {
  include: Include;
  origin: string | null;
  /** Who the caller is, for binding a session to it: the identity and the key, never a secret. */
  owner: string;
  /** The span of the HTTP request that carried the call, when it is traced. */
  trace?: TraceNode;
}

/** A tool as tools/list shows it. */
export interface ListedTool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

/** The answer of one tools/call. */
export interface CallOutcome {
  /** The upstream result as received, when the tool ran. */
  raw: unknown;
  /** The text of the result (the error text when the tool did not run). */
  text: string;
  isError: boolean;
  /** Set when the caller must submit a per-user credential first (the flow the text's JSON names). */
  authRequired: AuthRequiredPayload | null;
}

/** Options of one call. */
export interface CallOptions {
  signal?: AbortSignal;
  custom?: CustomLabelValues;
}

/** The caller, listing and call logic of /mcp. */
export class McpServerTools {
  constructor(private readonly deps: McpServerToolsDeps) {}

  /** Resolves a request's caller; throws the GatewayError /v1 would give (401 unknown key, 403 inactive, 400 bad header). */
  async caller(headers: IncomingHttpHeaders): Promise<McpCaller> {
    const include = parseInclude(headers);
    const resolved = await resolveToolCaller(headerReader(headers), this.deps);
    const owner = JSON.stringify([resolved.identity?.kind ?? null, resolved.identity?.id ?? null, resolved.key?.id ?? null]);
    return { ...resolved, include, origin: originOfHeaders(headers), owner };
  }

  /**
   * The tools the caller sees, named `<client>-<tool>`. The key is read again by id, so a session told of a
   * change sees its key as it is now; a key deleted or switched off since sees nothing.
   */
  list(caller: McpCaller): ListedTool[] {
    const visible = this.visible(caller);
    const listed: ListedTool[] = visible
      .filter((offer) => !offer.codeMode)
      .map((offer) => ({ name: offer.name, description: offer.tool.description, inputSchema: offer.tool.inputSchema }));
    // Code-mode clients' tools are reached only through the meta-tools, listed once for all of them.
    if (visible.some((offer) => offer.codeMode)) {
      for (const meta of META_TOOLS) listed.push({ name: meta.name, description: meta.description, inputSchema: meta.inputSchema });
    }
    return listed;
  }

  /** The offered tools the caller sees; a key deleted or switched off since the caller was resolved sees none. */
  private visible(caller: McpCaller): OfferedTool[] {
    const key = caller.key === null ? null : this.deps.inference.virtualKeys.byId(caller.key.id);
    if (caller.key !== null && (key === null || !key.isActive)) return [];
    return visibleTools(this.deps.runtime.offeredTools(), { key, ...caller.include });
  }

  /** The options of one tool execution for the caller. */
  private executeOptions(caller: McpCaller, options: CallOptions) {
    return {
      identity: caller.identity,
      subjectToken: caller.subjectToken,
      origin: caller.origin,
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.custom ? { custom: options.custom } : {}),
      ...(caller.trace ? { trace: caller.trace } : {}),
      ...(caller.key !== null ? { governance: { virtualKeyId: caller.key.id, virtualKeyName: caller.key.name } } : {}),
    };
  }

  /** Runs a code-mode meta-tool over the code-mode tools the caller sees. */
  private async callMeta(caller: McpCaller, name: string, args: Record<string, unknown>, options: CallOptions): Promise<CallOutcome> {
    const codeMode = this.visible(caller).filter((offer) => offer.codeMode);
    if (codeMode.length === 0) return failed(`tool "${name}" is not available: no code-mode MCP client is visible to this caller`);
    const base = this.executeOptions(caller, options);
    const outcome = await runMetaTool(name, args, {
      tools: codeMode,
      bindingLevel: this.deps.settings.toolManager.codeModeBindingLevel,
      timeoutMs: this.deps.settings.toolManager.toolExecutionTimeoutMs,
      ...(options.signal ? { signal: options.signal } : {}),
      invoke: (tool, toolArgs, signal) => this.deps.runtime.execute(tool, toolArgs, { ...base, signal }),
    });
    return { raw: null, text: outcome.content, isError: outcome.isError, authRequired: outcome.authRequired?.payload ?? null };
  }

  /** Calls `<client>-<tool>` for the caller; every failure is an error result, never a throw. */
  async call(caller: McpCaller, name: string, args: Record<string, unknown>, options: CallOptions = {}): Promise<CallOutcome> {
    if (isMetaTool(name)) return this.callMeta(caller, name, args, options);
    const parts = splitToolName(name);
    const visible =
      parts !== null &&
      this.deps.runtime.offeredTools().some((offer) => offer.name === name && !offer.codeMode) &&
      toolVisible({ key: caller.key, ...caller.include }, { clientName: parts.client, toolName: parts.tool, allowOnAllVirtualKeys: this.deps.runtime.allowsAllVirtualKeys(parts.client) });
    if (!visible) return failed(`tool "${name}" is not available: no tool of that name is visible to this caller (tools/list shows the ones that are)`);
    try {
      const result = await this.deps.runtime.execute(name, args, this.executeOptions(caller, options));
      return { raw: result.raw, text: result.content, isError: result.isError, authRequired: null };
    } catch (err) {
      if (err instanceof McpAuthRequiredError) return { raw: null, text: err.toolResult, isError: true, authRequired: err.payload };
      if (err instanceof GatewayError) return failed(err.message);
      throw err;
    }
  }

  /** Calls `listener` after anything that may change some caller's tools; returns the unsubscribe. */
  onToolsChanged(listener: () => void): () => void {
    const offRuntime = this.deps.runtime.onToolsChanged(listener);
    const offSettings = this.deps.settings.onChange(listener);
    const offKeys = this.deps.inference.virtualKeys.onChange(listener);
    return () => {
      offRuntime();
      offSettings();
      offKeys();
    };
  }
}

function failed(text: string): CallOutcome {
  return { raw: null, text: `Error: ${text}`, isError: true, authRequired: null };
}
