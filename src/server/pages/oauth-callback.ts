/**
 * GET /api/oauth/callback?code&state (or ?error): where an upstream authorization server sends the
 * browser back. It runs OauthService.OauthCallback through the in-process transport (with the RPC
 * interceptors) and redirects to the result page; a state that is unknown, used or expired gets a page
 * saying so. The query (code, state) is never logged.
 */
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { HTTP_STATUS_HEADER } from "../../errors.js";
import { AUTH_PAGE_PATH } from "../../mcp/credentials/index.js";
import { OAUTH_CALLBACK_PATH } from "../../mcp/oauth/flows.js";
import type { Logger } from "../../telemetry/logger.js";
import { OauthService } from "../../../gen/gw/admin/v1/oauth_pb.js";
import { forwardedHeaders } from "../rest/forward-headers.js";
import type { Req, Res } from "../node-http.js";
import { sendMessagePage } from "./mcp-auth-page.js";

/** The callback's path. */
export const OAUTH_CALLBACK_PAGE_PATH = OAUTH_CALLBACK_PATH;

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
      if (err instanceof ConnectError && (err.code === Code.InvalidArgument || err.code === Code.FailedPrecondition)) {
        const status = Number(err.metadata.get(HTTP_STATUS_HEADER) ?? "") || 400;
        sendMessagePage(res, status, status === 410 ? "Authorization expired" : "Authorization not accepted", err.rawMessage);
        return;
      }
      opts.logger.error({ err }, "the OAuth callback failed");
      sendMessagePage(res, 500, "Authorization failed", "The gateway could not finish this authorization; its log has the details.");
    }
  };
}
