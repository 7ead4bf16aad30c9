/**
 * What callers see of the clients' tools: the offered list, per-client counts and states, and the
 * screening (tool_definition guardrails, tool pinning) every tool list passes before anyone sees it.
 * Listeners hear of anything that may change the offered list.
 */
import { McpClientRecord } from "../../store/index.js";
import type { ClientRuntime, ClientSnapshot } from "../client-runtime.js";
import type { RuntimeClientView } from "../client-state.js";
import type { DiscoveredTool } from "../discover.js";
import { prefixedToolName, toolAllowed, toolAutoExecutable } from "../tool-names.js";
import { storePins } from "../tool-guardrails/stored-pins.js";
import { ToolScreens, visibleTools, type ScreenedTools, type ScreenTarget } from "../tool-guardrails/tool-screens.js";
import { refusingState } from "./call-refusals.js";
import type { RuntimeState } from "./runtime-state.js";

/** A tool as offered to models. */
export interface OfferedTool {
  /** `<client>-<tool>`. */
  name: string;
  clientId: string;
  clientName: string;
  tool: DiscoveredTool;
  /** In tools_to_auto_execute as well as tools_to_execute: agent mode runs it without approval. */
  autoExecute: boolean;
  /** The client's allow_on_all_virtual_keys: keys whose mcp_configs do not name it still see it. */
  allowOnAllVirtualKeys: boolean;
  /** The client's is_code_mode_client: callers reach the tool only through the code-mode meta-tools. */
  codeMode: boolean;
}

/** What screening reads of a client. */
function screenTarget(id: string, spec: ClientRuntime["spec"], tools: readonly DiscoveredTool[]): ScreenTarget {
  return { id, name: spec.name, pinning: spec.toolPinning ?? false, tools };
}

/** The clients' tools as callers see them, screened, with change notification. */
export class ToolCatalog {
  private readonly toolListeners = new Set<() => void>();
  /** What callers may see of each client's tools (quarantine, redacted descriptions). */
  private readonly screens: ToolScreens;
  private readonly unwatchGuardrails: () => void;

  constructor(private readonly state: RuntimeState) {
    const { deps } = state;
    // A client entering or leaving a refusing state adds or removes its tools from offeredTools().
    deps.states.onStateChange(() => this.toolsMayHaveChanged());
    this.screens = new ToolScreens({
      ...(deps.guardrails ? { guardrails: deps.guardrails } : {}),
      logger: deps.logger,
      storePins: (id, pins, replace) => storePins(deps.store, id, pins, replace),
      definitionChanged: (client, tool) => {
        deps.logger.warn({ client_id: client.id, client: client.name, tool }, `MCP tool definition changed since it was pinned; the tool is quarantined until POST /api/mcp/client/${client.id}/tools/{tool}/approve`);
        deps.metrics?.recordMcpToolDefinitionChange(client.name);
      },
      changed: () => this.toolsMayHaveChanged(),
    });
    // A tool_definition guardrail added, changed or removed may hide or release tools already discovered.
    this.unwatchGuardrails = deps.guardrails?.guardrails.onChange(() => void this.screenAll()) ?? (() => undefined);
  }

  /** Stops re-screening on guardrail changes (shutdown). */
  stopWatching(): void {
    this.unwatchGuardrails();
  }

  /** How many tools this runtime holds for a client (0 for one it does not hold). */
  toolsCount(clientId: string): number {
    return this.state.clients.get(clientId)?.tools.length ?? 0;
  }

  /** The live state of a client, or undefined when the runtime does not hold it. */
  stateOf(clientId: string): RuntimeClientView | undefined {
    return this.state.clients.has(clientId) ? this.state.deps.states.stateOf(clientId) : undefined;
  }

  /** Adds a listener of toolsMayHaveChanged(); returns the unsubscribe. */
  onToolsChanged(listener: () => void): () => void {
    this.toolListeners.add(listener);
    return () => this.toolListeners.delete(listener);
  }

  /** Tells every listener that offeredTools() may have changed; a failing listener is logged. */
  toolsMayHaveChanged(): void {
    for (const listener of this.toolListeners) {
      try {
        listener();
      } catch (err) {
        this.state.deps.logger.error({ err }, "a tool-list listener failed");
      }
    }
  }

  /** Whether the client of this name shows its tools to keys whose mcp_configs do not name it (false when unknown). */
  allowsAllVirtualKeys(clientName: string): boolean {
    return this.state.byName(clientName)?.spec.allowOnAllVirtualKeys ?? false;
  }

  /** The tools of every running client, filtered by its tools_to_execute, named `<client>-<tool>`. */
  offeredTools(): OfferedTool[] {
    const out: OfferedTool[] = [];
    for (const client of this.state.clients.values()) {
      if (client.spec.disabled || refusingState(this.state.deps.states.stateOf(client.id)?.state)) continue;
      for (const tool of this.visibleTools(client)) {
        if (!toolAllowed(client.spec.toolsToExecute, tool.name)) continue;
        out.push({
          name: prefixedToolName(client.spec.name, tool.name),
          clientId: client.id,
          clientName: client.spec.name,
          tool,
          autoExecute: toolAutoExecutable(client.spec, tool.name),
          allowOnAllVirtualKeys: client.spec.allowOnAllVirtualKeys,
          codeMode: client.spec.isCodeModeClient,
        });
      }
    }
    return out;
  }

  /** The client's tools callers may see (quarantined ones left out, descriptions as screened). */
  visibleTools(client: ClientRuntime): readonly DiscoveredTool[] {
    return visibleTools(client.tools, this.screens.of(client.id));
  }

  /** What screening decided of a client's tools. */
  screened(clientId: string): ScreenedTools {
    return this.screens.of(clientId);
  }

  /** Throws when the client's tool is quarantined. */
  refuseQuarantined(client: ClientRuntime, tool: string): void {
    this.screens.refuseQuarantined({ id: client.id, name: client.spec.name }, tool);
  }

  /** Screens a client's tool list under its current spec. */
  screen(id: string, spec: ClientRuntime["spec"], tools: readonly DiscoveredTool[]): Promise<void> {
    return this.screens.screen(screenTarget(id, spec, tools));
  }

  /** Takes the snapshot's tool pins, then screens `tools` under them and the snapshot's spec. */
  async pinAndScreen(snapshot: ClientSnapshot, tools: readonly DiscoveredTool[]): Promise<void> {
    this.screens.setPins(snapshot.id, snapshot.toolPins);
    await this.screen(snapshot.id, snapshot.spec, tools);
  }

  /** Drops what screening holds of a removed client. */
  forget(clientId: string): void {
    this.screens.forget(clientId);
  }

  /** Screens every client's tools again (the guardrails changed). */
  private async screenAll(): Promise<void> {
    await Promise.all([...this.state.clients.values()].map((client) => this.screen(client.id, client.spec, client.tools)));
  }

  /** The client's discovered tool of this name, as the upstream listed it; undefined when there is none. */
  toolOf(clientId: string, toolName: string): DiscoveredTool | undefined {
    return this.state.clients.get(clientId)?.tools.find((tool) => tool.name === toolName);
  }

  /** Why each quarantined tool of the client is, by tool name (empty for a client this runtime does not hold). */
  quarantined(clientId: string): ReadonlyMap<string, string> {
    return this.screens.of(clientId).quarantined;
  }

  /**
   * Pins the current definition of a tool its pin quarantined; answers why it is still quarantined (a
   * tool_definition guardrail blocks it), or null. A tool the client lacks is a 404, one not quarantined
   * by its pin a 400.
   */
  approveTool(clientId: string, toolName: string): Promise<string | null> {
    const client = this.state.held(clientId);
    return this.screens.approve(screenTarget(clientId, client.spec, client.tools), toolName);
  }

  /** Stores a client's re-synced tool list, after telling the listeners. */
  async persistTools(clientId: string, tools: DiscoveredTool[]): Promise<void> {
    this.toolsMayHaveChanged();
    const em = this.state.deps.store.fork();
    await em.nativeUpdate(McpClientRecord, { id: clientId }, { tools, updatedAt: new Date() });
  }
}
