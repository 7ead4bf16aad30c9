/**
 * The `token_exchange` block of a token_exchange MCP client and its rules: where the caller's IdP token
 * is exchanged (the SSO issuer's token endpoint unless authorization_server_url names another), for which
 * audience, as which client, and in which request form.
 */
import { egressPolicy } from "../../config/egress-policy.js";
import { invalidField } from "../../errors.js";
import type { McpTokenExchangeConfig } from "../../store/index.js";
import { endpointProblem } from "../oauth/oauth-config.js";

/** The configuration as the domain sees it, the stored columns plus the client secret; "" means unset. */
export type TokenExchangeSpec = McpTokenExchangeConfig & { clientSecret: string };

/** The request forms an exchange can take. */
export const GRANT_STYLES = ["rfc8693", "entra_obo"] as const;

const SCOPE_PATTERN = /^[\x21\x23-\x5b\x5d-\x7e]+$/;

/** Checks a token_exchange client's block; `field` is the prefix messages name (`token_exchange` or a config-file path). */
export function validateTokenExchange(cfg: TokenExchangeSpec | null, field: string): void {
  if (cfg === null) throw invalidField(field, "is required for token_exchange clients: {audience, client_id, ...}");
  if (cfg.audience.trim() === "") throw invalidField(`${field}.audience`, "is required: the audience the MCP server accepts tokens for");
  if (cfg.clientId.trim() === "") throw invalidField(`${field}.client_id`, "is required: the gateway's client at the authorization server");
  if (cfg.authorizationServerUrl !== "") {
    const problem = endpointProblem(cfg.authorizationServerUrl);
    if (problem) throw invalidField(`${field}.authorization_server_url`, problem);
    egressPolicy().checkUrl(cfg.authorizationServerUrl, `${field}.authorization_server_url`);
  }
  cfg.scopes.forEach((scope, i) => {
    if (!SCOPE_PATTERN.test(scope)) throw invalidField(`${field}.scopes[${i}]`, `"${scope}" is not a valid OAuth scope token`);
  });
  if (!GRANT_STYLES.includes(cfg.grantStyle)) throw invalidField(`${field}.grant_style`, `must be one of ${GRANT_STYLES.join(", ")}`);
}

/** Applies an update: a client_secret sent back as read (`redacted`) keeps the stored one. */
export function applyTokenExchangePatch(current: TokenExchangeSpec | null, next: TokenExchangeSpec | null, redacted: string): TokenExchangeSpec | null {
  if (next === null) return null;
  if (next.clientSecret !== redacted) return next;
  if (!current || current.clientSecret === "") throw invalidField("token_exchange.client_secret", `has no stored value to keep; send the real value instead of "${redacted}"`);
  return { ...next, clientSecret: current.clientSecret };
}
