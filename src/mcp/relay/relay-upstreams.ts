/**
 * How a /mcp/<client> session reaches its upstream: an http or sse client gets an upstream session of its
 * own, opened with the caller's credential; a stdio client's sessions share its one process through one
 * hub per client. What each upstream last answered at initialize is kept, to announce it to sessions that
 * cannot reach the upstream yet (a caller without a per-user credential).
 */
import type { ClientCapabilities } from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "../../telemetry/logger.js";
import { OwnedUpstream } from "./owned-upstream.js";
import type { RelayCredentialContext, RelaySource } from "./relay-source.js";
import { SharedUpstream } from "./shared-upstream.js";
import type { DownstreamSink, UpstreamFacts, UpstreamLink } from "./upstream-link.js";

/** The upstream side of every relayed session. */
export class RelayUpstreams {
  private readonly hubs = new Map<string, SharedUpstream>();
  /** The newest source of each client: a hub dials through it. */
  private readonly sources = new Map<string, RelaySource>();
  private readonly facts = new Map<string, UpstreamFacts>();

  constructor(private readonly logger: Logger) {}

  /** Opens one session's link to the upstream of `source`; throws when a per-user credential is missing. */
  async connect(source: RelaySource, caller: RelayCredentialContext, sink: DownstreamSink, capabilities: ClientCapabilities): Promise<UpstreamLink> {
    const id = source.clientId;
    this.sources.set(id, source);
    let link: UpstreamLink;
    if (source.spec.connectionType === "stdio") {
      let hub = this.hubs.get(id);
      if (hub === undefined) {
        hub = new SharedUpstream(() => (this.sources.get(id) ?? source).shared(), this.logger);
        this.hubs.set(id, hub);
      }
      link = await hub.join(sink);
    } else {
      link = new OwnedUpstream(await source.open(caller, capabilities), sink);
    }
    this.facts.set(id, link.facts);
    return source.guard?.(link, caller) ?? link;
  }

  /** What the client's upstream last answered at initialize, if it was ever reached. */
  knownFacts(clientId: string): UpstreamFacts | undefined {
    return this.facts.get(clientId);
  }
}
