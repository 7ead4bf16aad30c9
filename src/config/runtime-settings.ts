/**
 * Settings that change at run time (PUT /api/settings/mcp/tool-manager-config, PATCH /config). Held in
 * memory so the request path reads them without touching the database; services/ persists every change
 * before it lands here.
 */

/** Agent-mode tool manager settings. */
export interface ToolManagerSettings {
  maxAgentDepth: number;
  toolExecutionTimeoutMs: number;
  codeModeBindingLevel: "tool";
}

/** Gateway-wide client settings. */
export interface ClientSettings {
  prometheusLabels: string[];
  dropExcessRequests: boolean;
  initialPoolSize: number;
  allowedHeaders: string[];
  mcpEnableTempTokenAuth: boolean;
  mcpExternalClientUrl: string;
  mcpToolSyncIntervalMinutes: number;
  enforceGovernance: boolean;
}

export const DEFAULT_TOOL_MANAGER: ToolManagerSettings = {
  maxAgentDepth: 10,
  toolExecutionTimeoutMs: 30_000,
  codeModeBindingLevel: "tool",
};

export const DEFAULT_CLIENT: ClientSettings = {
  prometheusLabels: [],
  dropExcessRequests: false,
  initialPoolSize: 300,
  allowedHeaders: ["*"],
  mcpEnableTempTokenAuth: false,
  mcpExternalClientUrl: "",
  mcpToolSyncIntervalMinutes: 10,
  enforceGovernance: false,
};

type Listener = (settings: RuntimeSettings) => void;

/** The live settings; readers hold a reference and always see the latest values. */
export class RuntimeSettings {
  toolManager: ToolManagerSettings;
  client: ClientSettings;
  private readonly listeners = new Set<Listener>();

  constructor(toolManager: ToolManagerSettings = DEFAULT_TOOL_MANAGER, client: ClientSettings = DEFAULT_CLIENT) {
    this.toolManager = { ...toolManager };
    this.client = { ...client, prometheusLabels: [...client.prometheusLabels], allowedHeaders: [...client.allowedHeaders] };
  }

  /** Replaces the tool manager settings and tells listeners. */
  setToolManager(next: ToolManagerSettings): void {
    this.toolManager = { ...next };
    this.emit();
  }

  /** Replaces the client settings and tells listeners. */
  setClient(next: ClientSettings): void {
    this.client = { ...next };
    this.emit();
  }

  /** Calls `listener` after every change; returns the unsubscribe function. */
  onChange(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private emit(): void {
    for (const listener of this.listeners) listener(this);
  }
}
