/**
 * Outbound connections that obey the egress policy: one undici connector that every upstream connection
 * goes through (providers, MCP servers, OAuth and SSO endpoints, the pricing download). It checks a
 * literal address before dialling and every address a name resolves to before connecting, so a redirect
 * or an endpoint announced by an upstream is judged like a configured URL. Requests over a connection
 * that is already open went to an origin that passed when it was opened.
 */
import { isIP } from "node:net";
import { Agent, buildConnector, fetch as undiciFetch, type Dispatcher, type RequestInit as UndiciRequestInit } from "undici";
import { egressDenial, egressError, egressPolicy, type EgressPolicy } from "./egress-policy.js";

/** The policy is read per connection, so the connector serves whichever policy the gateway installed. */
const resolveAndDial = buildConnector({ lookup: (hostname, options, callback) => egressPolicy().lookup(hostname, options, callback) });

/**
 * Opens a connection unless the policy refuses its destination: a name is checked, then resolved and every
 * address checked (by the policy's lookup); a literal address skips the lookup, so it is checked here.
 */
export const egressConnector: buildConnector.connector = (options, callback) => {
  if (isIP(options.hostname) !== 0) {
    const reason = egressPolicy().refusal(options.hostname);
    if (reason !== null) {
      process.nextTick(callback, egressError(reason), null);
      return;
    }
  }
  resolveAndDial(options, callback);
};

/** An undici Agent whose every new connection goes through egressConnector. */
export function egressAgent(options: Omit<Agent.Options, "connect"> = {}): Agent {
  return new Agent({ ...options, connect: egressConnector });
}

/**
 * A fetch through `dispatcher` (whose connections must obey the policy) that rejects with the policy's
 * own error, code EGRESS_DENIED, rather than fetch's bare "fetch failed": callers and the libraries they
 * use (which may read a TypeError as a CORS failure and move on) then see and report the refusal.
 */
export function egressFetchVia(dispatcher: Dispatcher): typeof globalThis.fetch {
  return async (input, init) => {
    try {
      // undici's Request and Response are shaped like the runtime's but are other classes: the MCP transports
      // only read them, and egressFetch converts for callers that test instanceof.
      const response = await undiciFetch(input as Parameters<typeof undiciFetch>[0], { ...(init as unknown as UndiciRequestInit), dispatcher });
      return response as unknown as Response;
    } catch (err) {
      throw egressDenial(err) ?? err;
    }
  };
}

/** Statuses whose Response may not have a body. */
const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);

/**
 * undici's Response as the runtime's own: libraries such as the MCP SDK test `instanceof Response`, which
 * undici's class fails. The body stream is handed over, not copied.
 */
function asGlobalResponse(response: Response): Response {
  // Typed as the runtime's Response by egressFetchVia's cast, so the check must see past the type.
  const value: unknown = response;
  if (value instanceof Response) return value;
  const copy = new Response(NULL_BODY_STATUSES.has(response.status) ? null : response.body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
  // The final URL after redirects, which the constructor cannot set.
  Object.defineProperty(copy, "url", { value: response.url });
  return copy;
}

/** The shared agent and the policy its connections were checked against. */
let shared: { policy: EgressPolicy; agent: Agent; fetch: typeof globalThis.fetch } | undefined;

/**
 * fetch for one-off requests (OAuth, SSO, pricing) through one shared egress-checked agent. Its kept-alive
 * connections were judged by the policy in force when they opened, so a newly installed policy starts a
 * fresh agent rather than reuse a connection that policy may refuse.
 */
export const egressFetch: typeof globalThis.fetch = (input, init) => {
  const policy = egressPolicy();
  if (shared?.policy !== policy) {
    void shared?.agent.destroy().catch(() => undefined);
    const agent = egressAgent();
    shared = { policy, agent, fetch: egressFetchVia(agent) };
  }
  return shared.fetch(input, init).then(asGlobalResponse);
};
