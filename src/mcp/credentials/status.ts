/**
 * The status rules of per-user credentials (docs/credentials-oauth-sso.md) as pure functions: what a
 * schema change, a change of a virtual key's access, or a submission does to a credential.
 */
import type { McpCredentialStatus } from "../../store/index.js";

/** True when two header name lists name the same headers (header names are case-insensitive). */
export function sameHeaderKeys(a: readonly string[], b: readonly string[]): boolean {
  const left = new Set(a.map((k) => k.toLowerCase()));
  const right = new Set(b.map((k) => k.toLowerCase()));
  return left.size === right.size && [...left].every((k) => right.has(k));
}

/** The value stored for `key`, matched case-insensitively, or undefined. */
export function valueFor(values: Readonly<Record<string, string>>, key: string): string | undefined {
  const lower = key.toLowerCase();
  for (const [name, value] of Object.entries(values)) if (name.toLowerCase() === lower) return value;
  return undefined;
}

/** The values whose header is still in `keys`, renamed to the schema's spelling; the rest are dropped. */
export function keptValues(values: Readonly<Record<string, string>>, keys: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of keys) {
    const value = valueFor(values, key);
    if (value !== undefined) out[key] = value;
  }
  return out;
}

/** A credential's status and values as the transitions see them. */
export interface CredentialState {
  status: McpCredentialStatus;
  values: Record<string, string>;
}

/**
 * The admin changed per_user_header_keys (a key added, removed or renamed): values of keys still declared
 * are kept, and an active credential needs an update. Orphaned credentials keep their status; they are
 * checked against the schema again when their access returns.
 */
export function afterSchemaChange(state: CredentialState, keys: readonly string[]): CredentialState {
  if (sameHeaderKeys(Object.keys(state.values), keys)) return state;
  const values = keptValues(state.values, keys);
  return { status: state.status === "active" ? "needs_update" : state.status, values };
}

/**
 * A virtual key's access to the credential's client changed: losing it orphans the credential (kept),
 * regaining it makes it active again, or needs_update when the schema moved on meanwhile.
 */
export function afterAccessChange(state: CredentialState, hasAccess: boolean, keys: readonly string[]): McpCredentialStatus {
  if (!hasAccess) return "orphaned";
  if (state.status !== "orphaned") return state.status;
  return sameHeaderKeys(Object.keys(state.values), keys) ? "active" : "needs_update";
}

/** True when the credential can be attached to a call: active and covering exactly the declared keys. */
export function usable(state: CredentialState, keys: readonly string[]): boolean {
  return state.status === "active" && sameHeaderKeys(Object.keys(state.values), keys);
}

/** Whether a virtual key's mcp_configs grant any tool of the client named `clientName` (a key without mcp_configs reaches every client). */
export function keyHasClientAccess(key: { mcpConfigs: readonly { mcpClientName: string; toolsToExecute: readonly string[] }[] | null }, clientName: string): boolean {
  if (key.mcpConfigs === null) return true;
  return key.mcpConfigs.some((config) => config.mcpClientName === clientName && config.toolsToExecute.length > 0);
}
