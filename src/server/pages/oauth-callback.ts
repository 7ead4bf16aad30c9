/**
 * GET /api/oauth/callback?code&state (or ?error): where an upstream authorization server sends the
 * browser back. It runs OauthService.OauthCallback through the in-process transport (with the RPC
 * interceptors) and redirects to the result page. A refusal (a state that is unknown, used or expired, a
 * user's flow reaching a browser not signed in as that user) is a page saying so for a browser, and the /api
 * error envelope for any other client. The query (code, state) is never logged.
 */
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { AUTH_PAGE_PATH } from "../../mcp/credentials/index.js";
import { OAUTH_CALLBACK_PATH } from "../../mcp/oauth/flows.js";
import type { Logger } from "../../telemetry/logger.js";
import { OauthService } from "../../../gen/gw/admin/v1/oauth_pb.js";
import { forwardedHeaders } from "../rest/forward-headers.js";
import { restErrorResponse } from "../rest/rest-error.js";
import { sendJson, type Req, type Res } from "../node-http.js";
import { sendMessagePage } from "./mcp-auth-page.js";

/** The callback's path. */
export const OAUTH_CALLBACK_PAGE_PATH = OAUTH_CALLBACK_PATH;

/** The callback's refusals a caller can act on: what the page is titled for each HTTP status. */
const REFUSAL_TITLES: Readonly<Record<number, string>> = {
  401: "Sign in to finish this authorization",
  403: "This authorization is for another user",
  410: "Authorization expired",
};

/** Whether the request came from a browser navigating (it asks for HTML), rather than a script or API client. */
function wantsHtml(req: Req): boolean {
  return (req.headers.accept ?? "").includes("text/html");
}

/** Creates the callback handler. */
export function createOauthCallback(opts: { transport: Transport; logger: Logger }): (req: Req, res: Res) => Promise<void> {
  const oauth = createClient(OauthService, opts.transport);
  return async (req, res) => {
    if (req.method !== "GET") {
      res.setHeader("allow", "GET");
      sendMessagePage(res, 405, "Method not allowed", "The authorization server sends the browser here with GET.");
      return;
    }
    const query = new URL(req.url ?? "/", "http://callback").searchParams;
    try {
      const outcome = await oauth.oauthCallback(
        { code: query.get("code") ?? "", state: query.get("state") ?? "", error: query.get("error") ?? "", errorDescription: query.get("error_description") ?? "" },
        { headers: forwardedHeaders(req) },
      );
      res.writeHead(302, { location: `${AUTH_PAGE_PATH}?flow=${encodeURIComponent(outcome.oauthConfigId)}&kind=oauth`, "cache-control": "no-store", "referrer-policy": "no-referrer" });
      res.end();
    } catch (err) {
      const refused = err instanceof ConnectError && [Code.InvalidArgument, Code.FailedPrecondition, Code.Unauthenticated, Code.PermissionDenied].includes(err.code) ? restErrorResponse(err) : undefined;
      if (refused !== undefined) {
        if (wantsHtml(req)) sendMessagePage(res, refused.status, REFUSAL_TITLES[refused.status] ?? "Authorization not accepted", refused.body.error.message);
        else sendJson(res, refused.status, refused.body);
        return;
      }
      opts.logger.error({ err }, "the OAuth callback failed");
      sendMessagePage(res, 500, "Authorization failed", "The gateway could not finish this authorization; its log has the details.");
    }
  };
}
