/**
 * Which of a /v1 caller's request headers go upstream (client.allowed_headers). The list is compiled once
 * per settings change into a HeaderForwarding; picking a request's headers is then a few set lookups per
 * header. Headers the gateway owns never go, whatever the list says.
 */
import type { IncomingHttpHeaders } from "node:http";
import { CONNECTION_AND_BODY_HEADERS } from "../proxy-headers.js";
import { VIRTUAL_KEY_HEADERS } from "./credential.js";

/**
 * Headers of the connection and of the body the gateway sends itself, cookies, and every credential a
 * caller sends to the gateway (the virtual-key headers, and Azure's `api-key`).
 */
const GATEWAY_OWNED: ReadonlySet<string> = new Set([...CONNECTION_AND_BODY_HEADERS, "cookie", "api-key", ...VIRTUAL_KEY_HEADERS]);

/** proxy-* headers are hop-by-hop, the ones not listed above too. */
const PROXY_PREFIX = "proxy-";
/** The gateway's own headers (virtual key, dimensions, MCP selection, ...). */
const GATEWAY_PREFIX = "x-gw-";

/** The forwarding rule of one allowed_headers list. */
export class HeaderForwarding {
  readonly #all: boolean;
  readonly #names: ReadonlySet<string>;
  readonly #prefixes: readonly string[];

  /** Compiles `allowed`: names (any case), "*" for every header, or a prefix ending in "*" ("x-stainless-*"). */
  constructor(allowed: readonly string[]) {
    const names = new Set<string>();
    const prefixes: string[] = [];
    let all = false;
    for (const entry of allowed) {
      const lower = entry.toLowerCase();
      if (lower === "*") all = true;
      else if (lower.endsWith("*")) prefixes.push(lower.slice(0, -1));
      else names.add(lower);
    }
    this.#all = all;
    this.#names = names;
    this.#prefixes = prefixes;
  }

  /** The caller's headers that go upstream (names lower-case, repeated values joined), or undefined when none does. */
  pick(headers: IncomingHttpHeaders): Record<string, string> | undefined {
    const connection = headers["connection"];
    // Headers the client named in Connection are hop-by-hop too; "keep-alive" and "close" name none.
    const hopByHop = connection === undefined || connection === "keep-alive" || connection === "close" ? null : connectionTokens(connection);
    let picked: Record<string, string> | undefined;
    for (const name in headers) {
      const value = headers[name];
      if (value === undefined || !this.#allows(name) || hopByHop?.has(name) === true) continue;
      picked ??= {};
      picked[name] = typeof value === "string" ? value : value.join(", ");
    }
    return picked;
  }

  /** `name` is lower-case, as Node gives it. */
  #allows(name: string): boolean {
    // ":"-prefixed names are HTTP/2 pseudo-headers.
    if (GATEWAY_OWNED.has(name) || name.startsWith(":") || name.startsWith(PROXY_PREFIX) || name.startsWith(GATEWAY_PREFIX)) return false;
    if (this.#all || this.#names.has(name)) return true;
    for (const prefix of this.#prefixes) if (name.startsWith(prefix)) return true;
    return false;
  }
}

function connectionTokens(value: string): ReadonlySet<string> {
  return new Set(value.split(",").map((token) => token.trim().toLowerCase()));
}
