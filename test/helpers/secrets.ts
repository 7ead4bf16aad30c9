/** A gateway holding one secret of each kind, created through the admin API, for the secret-handling tests. */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { api } from "./app.js";

/** The secret values configured, by what they are. */
export interface SeededSecrets {
  providerKey: string;
  virtualKey: string;
  mcpHeader: string;
}

/** A value no other part of a run could produce by chance, so finding it anywhere means it leaked. */
export function uniqueSecret(prefix: string): string {
  return `${prefix}${randomBytes(12).toString("hex")}`;
}

/**
 * Creates an openai provider at `upstreamUrl` with a key, a virtual key routed to it, and an HTTP MCP client
 * at `mcpUrl` sending a secret header; `headers` authorize the admin calls.
 */
export async function seedSecrets(app: { url: string }, upstreamUrl: string, mcpUrl: string, headers: Record<string, string> = {}): Promise<SeededSecrets> {
  const secrets: SeededSecrets = { providerKey: uniqueSecret("sk-prov-"), virtualKey: uniqueSecret("sk-gw-vk-"), mcpHeader: uniqueSecret("mcp-hdr-") };
  const provider = await api(
    app,
    "POST",
    "/api/v1/providers",
    { name: "openai", keys: [{ id: "k1", name: "main", value: secrets.providerKey, models: [], weight: 1 }], network_config: { base_url: upstreamUrl } },
    headers,
  );
  assert.equal(provider.status, 200, JSON.stringify(provider.body));
  const mcp = await api(
    app,
    "POST",
    "/api/mcp/client",
    { name: "vault", connection_type: "http", connection_string: mcpUrl, auth_type: "headers", headers: { "x-vault-token": { value: secrets.mcpHeader } }, tools_to_execute: ["*"] },
    headers,
  );
  assert.equal(mcp.status, 200, JSON.stringify(mcp.body));
  const vk = await api(
    app,
    "POST",
    "/api/governance/virtual-keys",
    { name: "secret-test", value: secrets.virtualKey, provider_configs: [{ provider: "openai", allowed_models: ["*"], key_ids: ["*"], weight: 1 }], mcp_configs: [{ mcp_client_name: "vault", tools_to_execute: ["*"] }] },
    headers,
  );
  assert.equal(vk.status, 200, JSON.stringify(vk.body));
  return secrets;
}
