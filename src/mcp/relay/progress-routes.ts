/**
 * Progress of relayed requests on one upstream connection. The relay puts a token of its own on each
 * request whose caller asked for progress and routes notifications/progress back by it. The SDK's own
 * progress handling is not used: it runs notifications a turn after responses, so progress sent just
 * before a response found its handler already gone.
 */
import type { Notification, Progress, Request } from "@modelcontextprotocol/sdk/types.js";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";

/** The progress routes of one upstream connection. */
export class ProgressRoutes {
  private next = 0;
  private readonly routes = new Map<string, (progress: Progress) => void>();

  /** Takes notifications/progress off the SDK's handling, so they reach the client's fallback handler (and deliver()). */
  static install(client: Client): ProgressRoutes {
    client.removeNotificationHandler("notifications/progress");
    return new ProgressRoutes();
  }

  /** The request carrying a token of the relay's in place of the caller's, and the release of that token. */
  tag(request: Request, onprogress: (progress: Progress) => void): { request: Request; release: () => void } {
    const token = `gw-relay-${++this.next}`;
    this.routes.set(token, onprogress);
    const params = request.params ?? {};
    return {
      request: { method: request.method, params: { ...params, _meta: { ...params._meta, progressToken: token } } },
      release: () => this.routes.delete(token),
    };
  }

  /** Delivers a progress notification to its request, its token removed; false when the token is not one of the relay's. */
  deliver(notification: Notification): boolean {
    const { progressToken, ...progress } = (notification.params ?? {}) as Record<string, unknown>;
    const route = typeof progressToken === "string" ? this.routes.get(progressToken) : undefined;
    if (route === undefined) return false;
    route(progress as Progress);
    return true;
  }
}
