/** The bounds of one /mcp/<client> session's server-to-client requests. */

/** Server-to-client requests one downstream session may have waiting at once; one more fails at once. */
export const MAX_PENDING_SERVER_REQUESTS = 16;

/** The SDK's request timeout when the relay keeps its own deadline: the largest a Node.js timer takes. */
export const NO_SDK_TIMEOUT_MS = 2_147_483_647;
