/**
 * gw.admin.v1.SettingsService: tool manager settings and the run-time gateway configuration. Every
 * change is validated, persisted, then published to the in-memory RuntimeSettings the request path reads.
 */
import type { ServiceImpl } from "@connectrpc/connect";
import type { EntityManager } from "@mikro-orm/postgresql";
import { allowedHeaderProblem } from "../config/allowed-headers.js";
import { allowedHostProblem, allowedOriginProblem, mcpServerAuthModeOf, mcpServerAuthModeProblem } from "../config/mcp-server-settings.js";
import { durationField, formatDuration } from "../config/duration.js";
import { MCP_RELAY_REQUEST_TIMEOUT_RULES } from "../config/file-config.js";
import type { ClientSettings, RuntimeSettings, ToolManagerSettings } from "../config/runtime-settings.js";
import { invalidField } from "../errors.js";
import { SettingRecord, type Store } from "../store/index.js";
import { customLabelProblem } from "../telemetry/label-names.js";
import type { Logger } from "../telemetry/logger.js";
import { create } from "@bufbuild/protobuf";
import {
  ClientSettingsSchema,
  SettingsService,
  type ClientSettings as ClientSettingsMessage,
  type ToolManagerConfig,
} from "../../gen/gw/admin/v1/settings_pb.js";
import { FOR_UPDATE, writeEntity } from "./entity-write-lock.js";
import { gatewayStatus, type GatewayStatusDeps } from "./gateway-status.js";

/** Keys of the persisted settings rows. */
export const SETTING_TOOL_MANAGER = "tool_manager_config";
export const SETTING_CLIENT = "client_settings";
export const SETTING_LOAD_BALANCER = "load_balancer_config";

/** What the settings service needs. */
export interface SettingsServiceDeps extends GatewayStatusDeps {
  store: Store;
  settings: RuntimeSettings;
  logger: Logger;
}

/** Writes one settings row (insert or update). */
export async function saveSetting(em: EntityManager, key: string, value: unknown): Promise<void> {
  await em.upsert(SettingRecord, { key, value, updatedAt: new Date() });
}

/**
 * Changes one settings row: `change` gets the value as last committed (another node's write included), over
 * `current` (what this node holds, the defaults included) for the fields the row does not hold; the result
 * is stored, then `install`ed. Writes of one row take turns on this node and, through its row lock, across
 * nodes; a row not written yet is first inserted as `current`, so that there is a row to lock.
 */
async function writeSetting<T extends object>(
  store: Store,
  key: string,
  current: T,
  change: (base: T) => T,
  install: (next: T) => void,
): Promise<T> {
  return writeEntity(store, { kind: "setting", id: key }, async (tx) => {
    await tx.createQueryBuilder(SettingRecord).insert({ key, value: current, updatedAt: new Date() }).onConflict("key").ignore().execute();
    const row = await tx.findOne(SettingRecord, { key }, FOR_UPDATE);
    const stored = row !== null && typeof row.value === "object" && row.value !== null ? (row.value as Partial<T>) : {};
    const next = change({ ...current, ...stored });
    await saveSetting(tx, key, next);
    return next;
  }, install);
}

function toolManagerMessage(s: ToolManagerSettings) {
  return {
    maxAgentDepth: s.maxAgentDepth,
    toolExecutionTimeout: formatDuration(s.toolExecutionTimeoutMs),
    codeModeBindingLevel: s.codeModeBindingLevel,
  };
}

function clientMessage(s: ClientSettings) {
  return {
    prometheusLabels: s.prometheusLabels,
    dropExcessRequests: s.dropExcessRequests,
    initialPoolSize: s.initialPoolSize,
    allowedHeaders: s.allowedHeaders,
    mcpEnableTempTokenAuth: s.mcpEnableTempTokenAuth,
    mcpExternalClientUrl: s.mcpExternalClientUrl,
    mcpToolSyncInterval: s.mcpToolSyncIntervalMinutes,
    enforceGovernance: s.enforceGovernance,
    mcpDisableAutoToolInject: s.mcpDisableAutoToolInject,
    allowedHosts: s.allowedHosts,
    allowedOrigins: s.allowedOrigins,
    mcpServerAuthMode: s.mcpServerAuthMode,
    mcpRelayRequestTimeout: formatDuration(s.mcpRelayRequestTimeoutMs),
  };
}

/** Validates and applies the masked tool manager fields. */
export function applyToolManager(current: ToolManagerSettings, paths: readonly string[], cfg: ToolManagerConfig): ToolManagerSettings {
  if (paths.length === 0) throw invalidField("update_mask", "names no field: send at least one field to change");
  const next = { ...current };
  for (const path of paths) {
    switch (path) {
      case "max_agent_depth":
        if (!Number.isInteger(cfg.maxAgentDepth) || cfg.maxAgentDepth < 1 || cfg.maxAgentDepth > 50) {
          throw invalidField("max_agent_depth", `must be an integer from 1 to 50, got ${cfg.maxAgentDepth}`);
        }
        next.maxAgentDepth = cfg.maxAgentDepth;
        break;
      case "tool_execution_timeout":
        next.toolExecutionTimeoutMs = durationField(cfg.toolExecutionTimeout, "tool_execution_timeout", { example: "30s", sign: "positive" });
        break;
      case "code_mode_binding_level":
        if (cfg.codeModeBindingLevel !== "server" && cfg.codeModeBindingLevel !== "tool") {
          throw invalidField("code_mode_binding_level", `must be "server" or "tool", got "${cfg.codeModeBindingLevel}"`);
        }
        next.codeModeBindingLevel = cfg.codeModeBindingLevel;
        break;
      default:
        throw invalidField("update_mask", `unknown field "${path}"`);
    }
  }
  return next;
}

/** A copy of a list setting whose every entry passes `problem`; a 400 names the first bad entry. */
function checkedList(field: string, entries: readonly string[], problem: (entry: string) => string | null): string[] {
  entries.forEach((entry, i) => {
    const found = problem(entry);
    if (found !== null) throw invalidField(`${field}[${i}]`, found);
  });
  return [...entries];
}

/** Validates and applies the masked client settings (paths relative to GatewayConfig, e.g. client.prometheus_labels). */
export function applyClientSettings(current: ClientSettings, paths: readonly string[], msg: ClientSettingsMessage | undefined): ClientSettings {
  if (paths.length === 0) throw invalidField("update_mask", "names no field: send at least one field to change");
  const next = { ...current };
  const src = msg ?? create(ClientSettingsSchema);
  const expanded = paths.flatMap((p) =>
    p === "client"
      ? ["prometheus_labels", "drop_excess_requests", "initial_pool_size", "allowed_headers", "mcp_enable_temp_token_auth", "mcp_external_client_url", "mcp_tool_sync_interval", "enforce_governance", "mcp_disable_auto_tool_inject", "allowed_hosts", "allowed_origins", "mcp_server_auth_mode", "mcp_relay_request_timeout"].map((f) => `client.${f}`)
      : [p],
  );
  for (const path of expanded) {
    switch (path) {
      case "client.prometheus_labels": {
        const seen = new Set<string>();
        src.prometheusLabels.forEach((label, i) => {
          const problem = customLabelProblem(label);
          if (problem) throw invalidField(`client.prometheus_labels[${i}]`, problem);
          if (seen.has(label)) throw invalidField(`client.prometheus_labels[${i}]`, `duplicate label "${label}"`);
          seen.add(label);
        });
        next.prometheusLabels = [...src.prometheusLabels];
        break;
      }
      case "client.drop_excess_requests": next.dropExcessRequests = src.dropExcessRequests; break;
      case "client.initial_pool_size":
        if (src.initialPoolSize < 0) throw invalidField("client.initial_pool_size", `must be a whole number >= 0 (0 opens no connection ahead of requests), got ${src.initialPoolSize}`);
        next.initialPoolSize = src.initialPoolSize;
        break;
      case "client.allowed_headers":
        src.allowedHeaders.forEach((h, i) => {
          const problem = allowedHeaderProblem(h);
          if (problem !== null) throw invalidField(`client.allowed_headers[${i}]`, problem);
        });
        next.allowedHeaders = [...src.allowedHeaders];
        break;
      case "client.mcp_enable_temp_token_auth": next.mcpEnableTempTokenAuth = src.mcpEnableTempTokenAuth; break;
      case "client.mcp_external_client_url":
        if (src.mcpExternalClientUrl !== "") {
          let ok = false;
          try { ok = /^https?:$/.test(new URL(src.mcpExternalClientUrl).protocol); } catch { ok = false; }
          if (!ok) throw invalidField("client.mcp_external_client_url", `"${src.mcpExternalClientUrl}" is not an http(s) URL`);
        }
        next.mcpExternalClientUrl = src.mcpExternalClientUrl;
        break;
      case "client.mcp_tool_sync_interval":
        if (src.mcpToolSyncInterval === 0) throw invalidField("client.mcp_tool_sync_interval", "must be a number of minutes, positive (or negative to disable)");
        next.mcpToolSyncIntervalMinutes = src.mcpToolSyncInterval;
        break;
      case "client.enforce_governance": next.enforceGovernance = src.enforceGovernance; break;
      case "client.mcp_disable_auto_tool_inject": next.mcpDisableAutoToolInject = src.mcpDisableAutoToolInject; break;
      case "client.allowed_hosts":
        next.allowedHosts = checkedList("client.allowed_hosts", src.allowedHosts, allowedHostProblem);
        break;
      case "client.allowed_origins":
        next.allowedOrigins = checkedList("client.allowed_origins", src.allowedOrigins, allowedOriginProblem);
        break;
      case "client.mcp_server_auth_mode": {
        const problem = mcpServerAuthModeProblem(src.mcpServerAuthMode);
        if (problem !== null) throw invalidField("client.mcp_server_auth_mode", problem);
        next.mcpServerAuthMode = mcpServerAuthModeOf(src.mcpServerAuthMode);
        break;
      }
      case "client.mcp_relay_request_timeout":
        next.mcpRelayRequestTimeoutMs = durationField(src.mcpRelayRequestTimeout, "client.mcp_relay_request_timeout", MCP_RELAY_REQUEST_TIMEOUT_RULES);
        break;
      default:
        throw invalidField("update_mask", `unknown or read-only field "${path}"`);
    }
  }
  return next;
}

/** Creates the service implementation. */
export function createSettingsService(deps: SettingsServiceDeps): ServiceImpl<typeof SettingsService> {
  const { store, settings } = deps;
  return {
    getStatus() {
      return gatewayStatus(deps);
    },
    getToolManagerConfig() {
      return { config: toolManagerMessage(settings.toolManager) };
    },
    async updateToolManagerConfig(req) {
      const config = req.config;
      if (!config) throw invalidField("config", "is required");
      const next = await writeSetting(store, SETTING_TOOL_MANAGER, settings.toolManager, (base) => applyToolManager(base, req.updateMask?.paths ?? [], config), (written) =>
        settings.setToolManager(written),
      );
      deps.logger.info({ fields: req.updateMask?.paths }, "tool manager settings updated");
      return { status: "success", config: toolManagerMessage(next) };
    },
    getLoadBalancerConfig() {
      return { ...settings.loadBalancer };
    },
    async updateLoadBalancerConfig(req) {
      const next = await writeSetting(store, SETTING_LOAD_BALANCER, settings.loadBalancer, (base) => {
        const changed = { ...base };
        if (req.directionSelectionEnabled !== undefined) changed.directionSelectionEnabled = req.directionSelectionEnabled;
        if (req.routeSelectionEnabled !== undefined) changed.routeSelectionEnabled = req.routeSelectionEnabled;
        if (req.appendFallbacksToPinned !== undefined) changed.appendFallbacksToPinned = req.appendFallbacksToPinned;
        if (req.rerouteFailedDirections !== undefined) changed.rerouteFailedDirections = req.rerouteFailedDirections;
        if (req.pruneFailedFallbacks !== undefined) changed.pruneFailedFallbacks = req.pruneFailedFallbacks;
        return changed;
      }, (written) => settings.setLoadBalancer(written));
      deps.logger.info({ load_balancer_config: next }, "load balancer settings updated");
      return next;
    },
    getConfig() {
      return { config: { client: clientMessage(settings.client) } };
    },
    async updateConfig(req) {
      const paths = req.updateMask?.paths ?? [];
      const next = await writeSetting(store, SETTING_CLIENT, settings.client, (base) => applyClientSettings(base, paths, req.config?.client), (written) =>
        settings.setClient(written),
      );
      deps.logger.info({ fields: paths }, "gateway configuration updated");
      return { status: "success", config: { client: clientMessage(next) } };
    },
  };
}
