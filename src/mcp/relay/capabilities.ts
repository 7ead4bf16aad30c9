/**
 * The capabilities the /mcp/<client> relay carries: the server capabilities it announces downstream (the
 * upstream's, limited to what it relays), the client capabilities it declares upstream (the downstream
 * client's, limited the same way; or all it can route, for a shared stdio process), and whether the
 * downstream client of a session declared what a server-to-client request needs.
 */
import type { ClientCapabilities, ServerCapabilities } from "@modelcontextprotocol/sdk/types.js";
import type { McpError } from "@modelcontextprotocol/sdk/types.js";
import { capabilityMissing, elicitationModeMissing } from "./relay-errors.js";

/** Server capabilities the relay carries; tasks and experimental ones need a relay of their own and are left out. */
const RELAYED_SERVER_CAPABILITIES = ["tools", "resources", "prompts", "completions", "logging"] as const;
/** Client capabilities the relay carries. */
const RELAYED_CLIENT_CAPABILITIES = ["sampling", "elicitation", "roots"] as const;

/**
 * What a process shared by several downstream sessions (stdio) is told at initialize: everything the relay
 * can hand to a session, since any session may be the one whose request a server-to-client request is tied to.
 */
export const SHARED_CLIENT_CAPABILITIES: ClientCapabilities = {
  sampling: { tools: {} },
  elicitation: { form: {}, url: {} },
  roots: { listChanged: true },
};

/** The upstream's server capabilities as announced at /mcp/<client>. */
export function relayedServerCapabilities(upstream: ServerCapabilities | undefined): ServerCapabilities {
  const out: ServerCapabilities = {};
  if (upstream === undefined) return out;
  for (const name of RELAYED_SERVER_CAPABILITIES) {
    const value = upstream[name];
    if (value !== undefined) Object.assign(out, { [name]: value });
  }
  return out;
}

/** The downstream client's capabilities as declared upstream on its own session. */
export function relayedClientCapabilities(downstream: ClientCapabilities | undefined): ClientCapabilities {
  const out: ClientCapabilities = {};
  if (downstream === undefined) return out;
  for (const name of RELAYED_CLIENT_CAPABILITIES) {
    const value = downstream[name];
    if (value !== undefined) Object.assign(out, { [name]: value });
  }
  return out;
}

/** An elicitation capability of `{}` is the form mode of clients older than the URL mode. */
function elicitationModes(declared: NonNullable<ClientCapabilities["elicitation"]>): { form: boolean; url: boolean } {
  const raw = declared as Record<string, unknown>;
  const form = raw["form"] !== undefined;
  const url = raw["url"] !== undefined;
  return { form: form || !url, url };
}

/**
 * The error a server-to-client request gets when the downstream client of the session did not declare
 * what it needs; null when it did (or when the method needs nothing).
 */
export function undeclaredCapability(method: string, params: Record<string, unknown> | undefined, declared: ClientCapabilities | undefined): McpError | null {
  switch (method) {
    case "sampling/createMessage":
      if (declared?.sampling === undefined) return capabilityMissing(method, "sampling");
      if ((params?.["tools"] !== undefined || params?.["toolChoice"] !== undefined) && declared.sampling.tools === undefined) return capabilityMissing(method, "sampling.tools");
      return null;
    case "elicitation/create": {
      if (declared?.elicitation === undefined) return capabilityMissing(method, "elicitation");
      const mode = params?.["mode"] === "url" ? "url" : "form";
      return elicitationModes(declared.elicitation)[mode] ? null : elicitationModeMissing(mode);
    }
    case "roots/list":
      return declared?.roots === undefined ? capabilityMissing(method, "roots") : null;
    default:
      return null;
  }
}
