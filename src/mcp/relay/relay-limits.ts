/** The bounds of one /mcp/<client> session's server-to-client requests. */

/** Server-to-client requests one downstream session may have waiting at once; one more fails at once. */
export const MAX_PENDING_SERVER_REQUESTS = 16;

/**
 * How long a server-to-client request waits for the downstream client's answer: a person may be answering
 * an elicitation. A constant until the setting client.mcp_relay_request_timeout exists.
 */
export const SERVER_REQUEST_TIMEOUT_MS = 10 * 60_000;

/** The SDK's request timeout when the relay keeps its own deadline: the largest a Node.js timer takes. */
export const NO_SDK_TIMEOUT_MS = 2_147_483_647;
