/**
 * The `oauth_config` of an oauth MCP client and its rules. Every field is optional: empty endpoints are
 * discovered from the MCP server URL, an empty client_id means dynamic client registration. Endpoints a
 * browser or the gateway sends codes, tokens or secrets to must be https unless they are on a loopback host.
 * Those the gateway itself calls (token, registration, revocation) must also be permitted by network.egress;
 * the authorization URL is only opened by a browser, so the policy does not judge it.
 */
import { egressPolicy } from "../../config/egress-policy.js";
import { invalidField } from "../../errors.js";
import type { McpOauthConfig } from "../../store/index.js";

/** The configuration as the domain sees it, the stored columns plus the client secret; "" means unset. */
export type OauthConfigSpec = McpOauthConfig & { clientSecret: string };

/** A configuration with nothing set: everything is discovered. */
export function emptyOauthConfig(): OauthConfigSpec {
  return { clientId: "", clientSecret: "", authorizeUrl: "", tokenUrl: "", registrationUrl: "", revocationUrl: "", scopes: [], resource: "" };
}

/** True for localhost names and loopback addresses, where plain http cannot leak anything off the machine. */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, "").toLowerCase();
  return host === "localhost" || host.endsWith(".localhost") || host === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** Why `value` is not an acceptable OAuth endpoint, or undefined when it is. */
export function endpointProblem(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return `"${value}" is not a valid URL`;
  }
  if (url.protocol === "https:") return undefined;
  if (url.protocol === "http:" && isLoopbackHost(url.hostname)) return undefined;
  if (url.protocol === "http:") return `must be an https:// URL (plain http is accepted only on a loopback host), got "${value}"`;
  return `must be an https:// URL, got "${url.protocol}"`;
}

const SCOPE_PATTERN = /^[\x21\x23-\x5b\x5d-\x7e]+$/;

/** Checks a configuration; `field` is the prefix messages name (`oauth_config` or a config-file path). */
export function validateOauthConfig(cfg: OauthConfigSpec | null, field: string): void {
  if (cfg === null) return;
  for (const [name, value] of [
    ["authorize_url", cfg.authorizeUrl],
    ["token_url", cfg.tokenUrl],
    ["registration_url", cfg.registrationUrl],
    ["revocation_url", cfg.revocationUrl],
  ] as const) {
    if (value === "") continue;
    const problem = endpointProblem(value);
    if (problem) throw invalidField(`${field}.${name}`, problem);
    if (name !== "authorize_url") egressPolicy().checkUrl(value, `${field}.${name}`);
  }
  if (cfg.resource !== "") {
    let url: URL | undefined;
    try {
      url = new URL(cfg.resource);
    } catch {
      url = undefined;
    }
    if (!url || url.hash !== "") throw invalidField(`${field}.resource`, `"${cfg.resource}" must be an absolute URL without a fragment (RFC 8707)`);
  }
  if (cfg.clientSecret !== "" && cfg.clientId === "") {
    throw invalidField(`${field}.client_secret`, "needs client_id: a secret belongs to a pre-registered client (leave both empty for dynamic registration)");
  }
  const seen = new Set<string>();
  cfg.scopes.forEach((scope, i) => {
    if (!SCOPE_PATTERN.test(scope)) throw invalidField(`${field}.scopes[${i}]`, `"${scope}" is not a valid OAuth scope (no spaces, quotes or backslashes)`);
    if (seen.has(scope)) throw invalidField(`${field}.scopes[${i}]`, `duplicate scope "${scope}"`);
    seen.add(scope);
  });
}

/** An update's oauth_config replacing the stored one; a client_secret sent back as `redacted` keeps the stored secret. */
export function applyOauthPatch(current: OauthConfigSpec | null, next: OauthConfigSpec | null, redacted: string): OauthConfigSpec | null {
  if (next === null || next.clientSecret !== redacted) return next;
  const stored = current?.clientSecret ?? "";
  if (stored === "") throw invalidField("oauth_config.client_secret", `has no stored value to keep; send the real value instead of "${redacted}"`);
  return { ...next, clientSecret: stored };
}
