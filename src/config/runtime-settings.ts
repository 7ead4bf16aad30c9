/**
 * Settings that change at run time (PUT /api/settings/mcp/tool-manager-config, PATCH /config). Held in
 * memory so the request path reads them without touching the database; services/ persists every change
 * before it lands here. Their types and defaults are the config file schema's: a setting is declared once.
 */
import {
  clientSchema,
  loadBalancerSchema,
  mcpSchema,
  toolManagerSchema,
  type ClientFileConfig,
  type LoadBalancerFileConfig,
  type McpFileConfig,
  type ToolManagerFileConfig,
} from "./file-config.js";

/** The adaptive load balancer's toggles. */
export type LoadBalancerSettings = LoadBalancerFileConfig;

/** The toggles of a file that sets none. */
export const DEFAULT_LOAD_BALANCER: LoadBalancerSettings = loadBalancerSchema.parse({});

/** Agent-mode tool manager settings. */
export type ToolManagerSettings = ToolManagerFileConfig;

/**
 * Gateway-wide client settings: the file's `client` section without the body limit (read at start only),
 * and with the global tool sync interval resolved (the file may set it in `mcp` or in `client`).
 */
export type ClientSettings = Omit<ClientFileConfig, "maxRequestBodyBytes" | "mcpToolSyncIntervalMinutes"> & {
  mcpToolSyncIntervalMinutes: McpFileConfig["toolSyncIntervalMinutes"];
};

/** The tool manager settings of a file that sets none. */
export const DEFAULT_TOOL_MANAGER: ToolManagerSettings = toolManagerSchema.parse({});

/** The client settings of a file that sets none. */
export const DEFAULT_CLIENT: ClientSettings = clientSettings(clientSchema.parse({}), mcpSchema.parse({}).toolSyncIntervalMinutes);

/** The run-time client settings of a file's `client` section, with the global tool sync interval it resolved. */
export function clientSettings(client: ClientFileConfig, toolSyncIntervalMinutes: number): ClientSettings {
  const { maxRequestBodyBytes: _startOnly, mcpToolSyncIntervalMinutes: _resolved, ...settings } = client;
  return { ...settings, mcpToolSyncIntervalMinutes: toolSyncIntervalMinutes };
}

type Listener = (settings: RuntimeSettings) => void;

/** The live settings; readers hold a reference and always see the latest values. */
export class RuntimeSettings {
  toolManager: ToolManagerSettings;
  client: ClientSettings;
  loadBalancer: LoadBalancerSettings;
  private readonly listeners = new Set<Listener>();

  constructor(toolManager: ToolManagerSettings = DEFAULT_TOOL_MANAGER, client: ClientSettings = DEFAULT_CLIENT, loadBalancer: LoadBalancerSettings = DEFAULT_LOAD_BALANCER) {
    this.toolManager = { ...toolManager };
    this.loadBalancer = { ...loadBalancer };
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

  /** Replaces the load balancer's toggles and tells listeners. */
  setLoadBalancer(next: LoadBalancerSettings): void {
    this.loadBalancer = { ...next };
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
