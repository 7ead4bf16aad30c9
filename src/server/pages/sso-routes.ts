/**
 * The SSO browser routes: GET /api/sso/login?return_to= (redirects to the identity provider), GET
 * /api/sso/callback (finishes the login, sets the gw_session cookie, redirects to return_to) and POST
 * /api/sso/logout. They are plain HTTP routes rather than RPCs because the first two answer with a browser
 * redirect and a cookie, which a proto RPC cannot express; logout sits with them to clear that cookie.
 */
import { GatewayError, httpStatusOf } from "../../errors.js";
import { sessionCookie, SSO_CALLBACK_PATH, SSO_LOGIN_PATH, type SsoLogin } from "../../services/sso/sso-login.js";
import type { Logger } from "../../telemetry/logger.js";
import { sendError, sendJson, type Req, type Res } from "../node-http.js";

export const SSO_LOGOUT_PATH = "/api/sso/logout";
export { SSO_CALLBACK_PATH, SSO_LOGIN_PATH };

/** What the routes need. */
export interface SsoRoutesOptions {
  login: SsoLogin;
  /** The public base URL the provider redirects back to: mcp_external_client_url or the request's origin. */
  base: (req: Req) => string;
  logger: Logger;
}

/** True when the request reached the gateway over TLS (directly or, as a proxy says, in front of it). */
export function overTls(req: Req): boolean {
  const socket = req.socket as { encrypted?: boolean };
  const forwarded = req.headers["x-forwarded-proto"];
  return socket.encrypted === true || (typeof forwarded === "string" && forwarded.split(",")[0]?.trim() === "https");
}


/** Builds the handler of the three paths; it answers every request it is given. */
export function createSsoRoutes(opts: SsoRoutesOptions): (req: Req, res: Res, path: string) => void {
  async function serve(req: Req, res: Res, path: string): Promise<void> {
    const query = new URL(req.url ?? "/", "http://gateway").searchParams;
    if (path === SSO_LOGIN_PATH && req.method === "GET") {
      const location = await opts.login.begin(query.get("return_to"), opts.base(req));
      res.writeHead(302, { location, "cache-control": "no-store", "referrer-policy": "no-referrer" });
      res.end();
      return;
    }
    if (path === SSO_CALLBACK_PATH && req.method === "GET") {
      const done = await opts.login.finish(query);
      res.writeHead(302, { location: done.returnTo, "set-cookie": sessionCookie(done.sessionId, done.maxAgeS, overTls(req)), "cache-control": "no-store", "referrer-policy": "no-referrer" });
      res.end();
      return;
    }
    if (path === SSO_LOGOUT_PATH && req.method === "POST") {
      await opts.login.logout(req.headers.cookie);
      sendJson(res, 200, { status: "success" }, { "set-cookie": sessionCookie("", 0, overTls(req)) });
      return;
    }
    sendError(res, 405, "method_not_allowed", `method ${req.method ?? ""} is not allowed on ${path}; use ${path === SSO_LOGOUT_PATH ? "POST" : "GET"}`);
  }

  return (req, res, path) => {
    serve(req, res, path).catch((err: unknown) => {
      if (err instanceof GatewayError) {
        if (!res.headersSent) sendError(res, httpStatusOf(err), err.type, err.message);
        return;
      }
      opts.logger.error({ err, path }, "the SSO route failed");
      if (!res.headersSent) sendError(res, 500, "internal", "internal error: the gateway log has the details");
    });
  };
}
