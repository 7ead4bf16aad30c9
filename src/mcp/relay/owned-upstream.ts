/**
 * The upstream of one /mcp/<client> session that has an upstream session of its own (http and sse
 * clients): every message of that upstream session belongs to this downstream session, so the
 * upstream's requests and notifications go straight to its sink, and its requests go straight on the
 * session's transport (upstream-requests.ts).
 */
import type { Notification, Request, Result } from "@modelcontextprotocol/sdk/types.js";
import type { UpstreamSession } from "../upstream-session.js";
import { relayedServerCapabilities } from "./capabilities.js";
import { ProgressRoutes } from "./progress-routes.js";
import { UpstreamRequests } from "./upstream-requests.js";
import type { DownstreamSink, LinkRequestOptions, UpstreamFacts, UpstreamLink } from "./upstream-link.js";

/** The facts an initialized upstream session answered with. */
export function factsOf(session: UpstreamSession): UpstreamFacts {
  const client = session.sdkClient;
  return {
    capabilities: relayedServerCapabilities(client.getServerCapabilities()),
    serverInfo: client.getServerVersion() ?? { name: "upstream", version: "unknown" },
    instructions: client.getInstructions(),
  };
}

/** A link over an upstream session owned by one downstream session. */
export class OwnedUpstream implements UpstreamLink {
  readonly shared = false;
  readonly facts: UpstreamFacts;
  private readonly progress: ProgressRoutes;
  private readonly requests: UpstreamRequests;

  constructor(
    private readonly session: UpstreamSession,
    sink: DownstreamSink,
  ) {
    this.facts = factsOf(session);
    const client = session.sdkClient;
    this.progress = ProgressRoutes.install(client);
    this.requests = UpstreamRequests.install(client);
    client.fallbackRequestHandler = (request, extra) => sink.serverRequest(request.params === undefined ? { method: request.method } : { method: request.method, params: request.params }, extra.signal);
    client.fallbackNotificationHandler = async (notification) => {
      if (notification.method === "notifications/progress") this.progress.deliver(notification);
      else sink.serverNotification(notification);
    };
    session.onLost((err) => sink.upstreamLost(err));
  }

  async request(request: Request, options: LinkRequestOptions): Promise<Result> {
    const tagged = options.onprogress ? this.progress.tag(request, options.onprogress) : undefined;
    try {
      return await this.requests.send(tagged?.request ?? request, options.signal);
    } finally {
      tagged?.release();
    }
  }

  notify(notification: Notification): Promise<void> {
    return this.session.sdkClient.notification(notification);
  }

  close(): Promise<void> {
    return this.session.close();
  }
}
