/**
 * The egress policy (`network.egress {allow, deny}` of the config file): which destinations the gateway
 * may open connections to. Entries are CIDRs (10.0.0.0/8, fe80::/10), single addresses, host names, or
 * `*.suffix` wildcards. Checked twice: on the literal host of a URL when it is saved (a 400), and on every
 * address a name resolves to when a connection opens (so a name pointing at a refused address is refused).
 *
 * Order: a configured `deny` entry refuses; else an `allow` entry permits (also lifting the built-in
 * denials); else a built-in denial refuses (link-local addresses, cloud metadata names); else, when `allow`
 * is non-empty, the destination is refused for matching none of it; else it is permitted.
 */
import { BlockList, isIP, type LookupFunction } from "node:net";
import { lookup as dnsLookup } from "node:dns";
import { invalidField } from "../errors.js";

/** Refused unless allowed: link-local (where cloud metadata services answer) and the metadata names. */
export const BUILT_IN_EGRESS_DENY: readonly string[] = [
  "169.254.0.0/16",
  "fe80::/10",
  "fd00:ec2::254/128",
  "metadata.google.internal",
  "metadata.goog",
  "metadata.azure.com",
  "instance-data.ec2.internal",
  "metadata.tencentyun.com",
];

/** The policy as the config file gives it. */
export interface EgressConfig {
  allow: readonly string[];
  deny: readonly string[];
}

/** A parsed list of entries: addresses and networks in a BlockList, names and wildcards in sets. */
class EntryList {
  readonly #addresses = new BlockList();
  readonly #names = new Set<string>();
  readonly #suffixes: string[] = [];
  readonly size: number;

  constructor(entries: readonly string[], path: string) {
    entries.forEach((entry, index) => this.#add(entry.trim().toLowerCase(), `${path}[${index}]`));
    this.size = entries.length;
  }

  #add(entry: string, path: string): void {
    const slash = entry.indexOf("/");
    const address = slash === -1 ? entry : entry.slice(0, slash);
    const family = isIP(address);
    if (family !== 0) {
      const type = family === 4 ? "ipv4" : "ipv6";
      const prefix = slash === -1 ? (family === 4 ? 32 : 128) : Number(entry.slice(slash + 1));
      if (!(Number.isInteger(prefix) && prefix >= 0 && prefix <= (family === 4 ? 32 : 128)) || (slash !== -1 && !/^\d+$/.test(entry.slice(slash + 1)))) {
        throw invalidField(path, `"${entry}" has a bad prefix length; use e.g. 10.0.0.0/8 or fd00::/8`);
      }
      this.#addresses.addSubnet(address, prefix, type);
      return;
    }
    const name = entry.startsWith("*.") ? entry.slice(2) : entry;
    if (slash !== -1 || !/^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/.test(name)) {
      throw invalidField(path, `"${entry}" is neither an address, a CIDR (10.0.0.0/8) nor a host name (api.example.com, *.example.com)`);
    }
    if (entry.startsWith("*.")) this.#suffixes.push(`.${name}`);
    else this.#names.add(name);
  }

  /** The host (a name or an address, lower case, no brackets) matches an entry. */
  matches(host: string): boolean {
    const family = isIP(host);
    if (family !== 0) return this.#addresses.check(host, family === 4 ? "ipv4" : "ipv6");
    const name = host.endsWith(".") ? host.slice(0, -1) : host;
    return this.#names.has(name) || this.#suffixes.some((suffix) => name.endsWith(suffix));
  }
}

/** A parsed egress policy. */
export class EgressPolicy {
  readonly #allow: EntryList;
  readonly #deny: EntryList;
  readonly #builtIn = new EntryList(BUILT_IN_EGRESS_DENY, "built-in");

  /** Parses `config`; a bad entry is a 400 naming `path` (e.g. `network.egress`) and its index. */
  constructor(config: EgressConfig = { allow: [], deny: [] }, path = "network.egress") {
    this.#allow = new EntryList(config.allow, `${path}.allow`);
    this.#deny = new EntryList(config.deny, `${path}.deny`);
  }

  /** Why connecting to `host` (a name or an address) is refused, or null when it is permitted. */
  refusal(rawHost: string): string | null {
    const host = bareHost(rawHost);
    if (this.#deny.matches(host)) return `${host} is refused by network.egress.deny`;
    if (this.#allow.matches(host)) return null;
    if (this.#builtIn.matches(host)) return `${host} is a link-local or cloud metadata destination, refused unless network.egress.allow lists it`;
    if (this.#allow.size > 0) return `${host} is not in network.egress.allow`;
    return null;
  }

  /**
   * Why the gateway may not fetch `url` (judged by its literal host, before resolution), or null when it
   * may; URLs that do not parse or have no host are left to the caller's own checks.
   */
  urlRefusal(url: string): string | null {
    let host: string;
    try {
      host = new URL(url).hostname;
    } catch {
      return null;
    }
    if (host === "") return null;
    const reason = this.refusal(host);
    return reason === null ? null : `${url} is not a permitted destination: ${reason}`;
  }

  /** Throws a 400 naming `field` when the URL's host is refused; URLs that do not parse are left to the caller's checks. */
  checkUrl(url: string, field: string): void {
    const refused = this.urlRefusal(url);
    if (refused !== null) throw invalidField(field, refused);
  }

  /**
   * A `lookup` for net.connect: resolves as usual, then refuses when any resolved address is refused (a
   * name must not smuggle a connection to a denied address). The name itself is checked first.
   */
  readonly lookup: LookupFunction = (hostname, options, callback) => {
    const byName = this.refusal(hostname);
    if (byName !== null) {
      callback(egressError(byName), "", 0);
      return;
    }
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) {
        callback(err, "", 0);
        return;
      }
      for (const { address } of addresses) {
        const reason = this.refusal(address);
        if (reason !== null) {
          callback(egressError(`${hostname} resolves to ${reason}`), "", 0);
          return;
        }
      }
      if (options.all) (callback as unknown as (e: null, a: typeof addresses) => void)(null, addresses);
      else {
        const first = addresses[0];
        if (first === undefined) callback(egressError(`${hostname} resolves to no address`), "", 0);
        else callback(null, first.address, first.family);
      }
    });
  };
}

function bareHost(host: string): string {
  const lower = host.toLowerCase();
  return lower.startsWith("[") && lower.endsWith("]") ? lower.slice(1, -1) : lower;
}

/** The code every connection the policy refuses fails with, in its error and at the end of its message. */
export const EGRESS_DENIED = "EGRESS_DENIED";

/** The error a refused connection fails with; the code in its message survives wrappers that keep only text. */
export function egressError(reason: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`connection refused by the egress policy: ${reason} (${EGRESS_DENIED})`), { code: EGRESS_DENIED });
}

/** How deep a cause chain is searched for a refusal (fetch wraps it once, its callers a few times more). */
const MAX_CAUSE_DEPTH = 8;

/** The policy's refusal in `err` or its cause chain, or undefined when the failure had another cause. */
export function egressDenial(err: unknown): Error | undefined {
  let current: unknown = err;
  for (let depth = 0; depth < MAX_CAUSE_DEPTH && current instanceof Error; depth++) {
    if ((current as NodeJS.ErrnoException).code === EGRESS_DENIED) return current;
    current = current.cause;
  }
  return undefined;
}

let active = new EgressPolicy();

/** The policy in force: the built-in denials until the gateway installs the configured one. */
export function egressPolicy(): EgressPolicy {
  return active;
}

/** Puts `policy` in force for every connection opened from now on. */
export function installEgressPolicy(policy: EgressPolicy): void {
  active = policy;
}
