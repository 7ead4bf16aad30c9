/**
 * GET /workspace/mcp-sessions/auth?flow=<flow_id>&kind=headers|oauth: with kind=oauth, a per_user_oauth
 * caller's consent flow (the server, the identity, a Connect button to the authorization server) or the
 * outcome of an admin's upstream OAuth authorization the callback just handled; with kind=headers, the browser page where a caller submits
 * their own header values for a per_user_headers MCP client (docs/credentials-oauth-sso.md). Rendered on the server
 * from CredentialService.GetFlow (through the same in-process transport and interceptors as the REST
 * bridge); a small inline script submits to PUT /api/mcp/per-user-headers/flows/{flow_id} and shows the
 * saved confirmation or the upstream's error with a Retry. No external asset; a strict CSP with a nonce.
 * A flow bound to an SSO user is shown to that user only: a visitor who is not signed in is sent through the
 * SSO login and back, someone signed in as another user is refused. With `&connect=1` (a user's OAuth flow,
 * the authorize link of its mcp_auth_required answer) the page, once it knows the browser is signed in as
 * that user, goes on to the authorization server itself. A user's OAuth flow page also gives the browser its
 * flow cookie, which Connect binds to the authorization and the callback checks.
 */
import { randomBytes } from "node:crypto";
import { parseCookie, stringifyCookie } from "cookie";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { AUTH_PAGE_PATH, FLOW_BROWSER_COOKIE } from "../../mcp/credentials/index.js";
import { browserCookie, cookieValue } from "../../services/sso/sso-login.js";
import type { Logger } from "../../telemetry/logger.js";
import { CredentialService, type GetFlowResponse } from "../../../gen/gw/credential/v1/credential_pb.js";
import { OauthService, type GetOauthFlowResponse } from "../../../gen/gw/admin/v1/oauth_pb.js";
import { forwardedHeaders } from "../rest/forward-headers.js";
import { restErrorResponse } from "../rest/rest-error.js";
import { escapeHtml as esc } from "../html-escape.js";
import { overTls, SSO_LOGIN_PATH, SSO_LOGOUT_PATH } from "./sso-routes.js";
import type { Req, Res } from "../node-http.js";

/** The page's path; the flow links point here. */
export const MCP_AUTH_PAGE_PATH = AUTH_PAGE_PATH;

/** What the page needs. */
export interface McpAuthPageOptions {
  /** In-process transport to the services, with the RPC interceptors. */
  transport: Transport;
  logger: Logger;
}

/** A flow cookie's value as minted here; anything else a browser presents is replaced. */
const FLOW_BROWSER_VALUE = /^[A-Za-z0-9_-]{43}$/;
/** Outlives any flow (15 minutes), so a cookie set when the page was opened is still there at the callback. */
const FLOW_BROWSER_MAX_AGE_S = 60 * 60;

/** The browser's flow cookie (the one it has, else a new one) and the Set-Cookie that renews it. */
function flowBrowser(req: Req): { value: string; setCookie: string } {
  const held = cookieValue(req.headers.cookie, FLOW_BROWSER_COOKIE);
  const value = held !== null && FLOW_BROWSER_VALUE.test(held) ? held : randomBytes(32).toString("base64url");
  return { value, setCookie: browserCookie(FLOW_BROWSER_COOKIE, value, FLOW_BROWSER_MAX_AGE_S, overTls(req)) };
}

/** The request's headers for an in-process call, with the browser's flow cookie in its Cookie header. */
function withFlowBrowser(req: Req, browser: string): Headers {
  const headers = forwardedHeaders(req);
  headers.set("cookie", stringifyCookie({ ...parseCookie(req.headers.cookie ?? ""), [FLOW_BROWSER_COOKIE]: browser }));
  return headers;
}

/** JSON safe inside a <script> element (no `</script>`, no HTML comment openers). */
function scriptJson(value: unknown): string {
  return JSON.stringify(value).replace(/</g, "\\u003c").replace(/>/g, "\\u003e").replace(/&/g, "\\u0026");
}

const STYLE = `
:root { color-scheme: light dark; font-family: system-ui, sans-serif; line-height: 1.5; }
body { margin: 0; padding: 2rem 1rem; }
main { max-width: 36rem; margin: 0 auto; }
h1 { font-size: 1.5rem; margin: 0 0 1rem; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .25rem 1rem; }
dt { font-weight: 600; } dd { margin: 0; overflow-wrap: anywhere; }
fieldset { border: 1px solid #8884; border-radius: .5rem; margin: 1rem 0; padding: .75rem 1rem; }
.field { margin: .5rem 0 1rem; }
label { display: block; font-weight: 600; font-family: ui-monospace, monospace; }
input { box-sizing: border-box; width: 100%; padding: .5rem; font: inherit; border: 1px solid #888; border-radius: .25rem; }
.hint { font-size: .875rem; opacity: .8; margin: .25rem 0 0; }
button { font: inherit; padding: .5rem 1.25rem; border-radius: .25rem; border: 1px solid #444; cursor: pointer; }
.error { border-left: 4px solid #c62828; padding: .5rem 1rem; background: #c628281a; }
.ok { border-left: 4px solid #2e7d32; padding: .5rem 1rem; background: #2e7d321a; }
code { font-family: ui-monospace, monospace; }
`;

/**
 * What both flow scripts start with: the flow data, the temp token taken out of the address bar (even on a
 * finished flow), the path prefix the gateway is mounted under, and a password sign-in that yields a session
 * token. `form` is the page's form, or null on a finished flow.
 */
function flowScript(formId: string, rest: string): string {
  return `
(() => {
  const data = JSON.parse(document.getElementById("flow-data").textContent);
  let tempToken = null;
  const match = /(?:^#|&)t=([^&]+)/.exec(location.hash);
  if (match) {
    tempToken = decodeURIComponent(match[1]);
    history.replaceState(null, "", location.pathname + location.search);
  }
  const form = document.getElementById(${JSON.stringify(formId)});
  if (!form) return;
  const prefix = location.pathname.slice(0, location.pathname.length - data.pagePath.length);
  async function signIn() {
    const res = await fetch(prefix + "/api/session/login", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ username: form.elements.namedItem("username").value, password: form.elements.namedItem("password").value }),
      cache: "no-store",
    });
    const body = await res.json().catch(() => ({}));
    if (!res.ok) throw new Error((body.error && body.error.message) || "sign-in failed (HTTP " + res.status + ")");
    return body.token;
  }
${rest}})();
`;
}

/** Submits with fetch and switches between form, error+Retry and confirmation; signs in once per page. */
const SCRIPT = flowScript(
  "submit-form",
  `  const button = document.getElementById("save");
  const errorBox = document.getElementById("error");
  const errorText = document.getElementById("error-message");
  const retry = document.getElementById("retry");
  const saved = document.getElementById("saved");
  let sessionToken = null;
  function showError(message) {
    errorText.textContent = message;
    form.hidden = true;
    errorBox.hidden = false;
    retry.focus();
  }
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    button.disabled = true;
    try {
      const headers = {};
      for (const input of form.querySelectorAll("input[data-header]")) {
        if (input.value !== "") headers[input.dataset.header] = input.value;
      }
      const request = { "content-type": "application/json" };
      if (data.passwordSignIn) {
        if (!sessionToken) sessionToken = await signIn();
        request.authorization = "Bearer " + sessionToken;
      }
      if (tempToken) request["x-gw-temp-token"] = tempToken;
      const res = await fetch(prefix + "/api/mcp/per-user-headers/flows/" + encodeURIComponent(data.flowId), {
        method: "PUT",
        headers: request,
        body: JSON.stringify({ headers }),
        cache: "no-store",
      });
      const body = await res.json().catch(() => ({}));
      if (typeof body.temp_token === "string") tempToken = body.temp_token;
      if (res.ok) {
        for (const input of form.querySelectorAll("input")) input.value = "";
        form.hidden = true;
        errorBox.hidden = true;
        saved.hidden = false;
        saved.focus();
        return;
      }
      showError((body.error && body.error.message) || "the gateway answered HTTP " + res.status);
    } catch (err) {
      showError(err && err.message ? err.message : String(err));
    } finally {
      button.disabled = false;
    }
  });
  retry.addEventListener("click", () => {
    errorBox.hidden = true;
    form.hidden = false;
    const first = form.querySelector("input");
    if (first) first.focus();
  });
`,
);

/** The Connect button of a per-user OAuth flow: asks the gateway for the consent URL (with the temp token or a sign-in) and goes there. */
const CONNECT_SCRIPT = flowScript(
  "connect-form",
  `  const button = document.getElementById("connect");
  const errorBox = document.getElementById("connect-error");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    button.disabled = true;
    errorBox.hidden = true;
    try {
      const request = { "content-type": "application/json" };
      if (data.passwordSignIn) request.authorization = "Bearer " + (await signIn());
      if (tempToken) request["x-gw-temp-token"] = tempToken;
      const res = await fetch(prefix + "/api/mcp/per-user-oauth/flows/" + encodeURIComponent(data.flowId) + "/connect", {
        method: "POST",
        headers: request,
        body: "{}",
        cache: "no-store",
      });
      const body = await res.json().catch(() => ({}));
      if (!res.ok) throw new Error((body.error && body.error.message) || "the gateway answered HTTP " + res.status);
      location.assign(body.authorize_url);
    } catch (err) {
      errorBox.textContent = err && err.message ? err.message : String(err);
      errorBox.hidden = false;
      button.disabled = false;
    }
  });
`,
);

/** The flow's data for the script, then the script itself under the page's nonce. */
function flowScriptTags(flow: GetFlowResponse, nonce: string, script: string): string {
  const data = { flowId: flow.flowId, passwordSignIn: flow.signIn === "password", pagePath: MCP_AUTH_PAGE_PATH };
  return `<script type="application/json" id="flow-data">${scriptJson(data)}</script>\n<script nonce="${nonce}">${script}</script>`;
}

function identityText(kind: string, name: string): string {
  if (kind === "user") return `signed-in user “${name}”`;
  if (kind === "vk") return `virtual key “${name}”`;
  return `session “${name}”`;
}

function page(title: string, body: string, nonce: string, script = ""): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${esc(title)}</title>
<style nonce="${nonce}">${STYLE}</style>
</head>
<body>
<main>
${body}
</main>
${script}
</body>
</html>
`;
}

/**
 * What a flow bound to a user shows about signing in: the password fields of the gateway's admin, or who the
 * page is signed in as (the submission then rides on that sign-in's cookie); nothing for other flows.
 */
function signInPart(flow: GetFlowResponse): string {
  const name = flow.identity?.name ?? "";
  if (flow.signIn === "signed_in") return `<p id="signed-in">Signed in as <strong>${esc(name)}</strong>.</p>`;
  if (flow.signIn !== "password") return "";
  return `<fieldset>
  <legend>Sign in as ${esc(name)}</legend>
  <div class="field"><label for="username">Username</label><input id="username" name="username" autocomplete="username" value="${esc(name)}" required></div>
  <div class="field"><label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required></div>
</fieldset>`;
}

/** What a per-user flow is about: the MCP server, whose credential it is, and when the link expires. */
function flowFacts(flow: GetFlowResponse): string {
  const client = flow.mcpClient?.name ?? "";
  const expires = flow.expiresAt ? timestampDate(flow.expiresAt) : null;
  return `
<dl>
  <dt>MCP server</dt><dd id="mcp-client">${esc(client)}</dd>
  <dt>Credential for</dt><dd id="identity">${esc(identityText(flow.identity?.kind ?? "", flow.identity?.name ?? ""))}</dd>
  ${expires ? `<dt>Link expires</dt><dd><time datetime="${expires.toISOString()}">${esc(expires.toUTCString())}</time></dd>` : ""}
</dl>`;
}

function flowBody(flow: GetFlowResponse): { html: string; title: string } {
  const client = flow.mcpClient?.name ?? "";
  const title = `Connect ${client}`;
  const facts = flowFacts(flow);
  const heading = `<h1>Connect to ${esc(client)}</h1>
<p>The MCP server <strong>${esc(client)}</strong> needs your own credentials before its tools can run for you. The gateway checks them once with the server, stores them encrypted, and never shows them again.</p>`;
  if (flow.status === "expired") {
    return { title, html: `${heading}${facts}<p class="error" role="alert" id="expired">Headers submission flow has expired. Call the tool again to get a fresh link.</p>` };
  }
  if (flow.status === "completed") {
    return { title, html: `${heading}${facts}<p class="ok" role="status" id="completed">This link was already used: your credential is saved. Call the tool again.</p>` };
  }
  const stored = new Set(flow.storedHeaderKeys.map((k) => k.toLowerCase()));
  const fields = flow.requiredHeaderKeys
    .map((key, i) => {
      const onFile = stored.has(key.toLowerCase());
      const hint = onFile ? `<p class="hint" id="header-${i}-hint">A value is on file; leave this empty to keep it.</p>` : "";
      return `<div class="field">
  <label for="header-${i}">${esc(key)}</label>
  <input id="header-${i}" type="password" data-header="${esc(key)}" autocomplete="off" spellcheck="false"${onFile ? ` aria-describedby="header-${i}-hint"` : " required"}>
  ${hint}
</div>`;
    })
    .join("\n");
  const signIn = signInPart(flow);
  const admin =
    flow.adminHeaderKeys.length > 0
      ? `<p id="admin-headers">The gateway also sends headers an administrator set for this server: ${flow.adminHeaderKeys.map((k) => `<code>${esc(k)}</code>`).join(", ")}.</p>`
      : "";
  const form = `<form id="submit-form" method="post" autocomplete="off">
${signIn}
<fieldset>
  <legend>Your headers</legend>
${fields}
</fieldset>
${admin}
<button type="submit" id="save">Save</button>
</form>
<noscript><p class="error">This page needs JavaScript to submit your headers.</p></noscript>
<div id="error" class="error" role="alert" hidden>
  <p><strong>The server did not accept these values.</strong></p>
  <p id="error-message"></p>
  <button type="button" id="retry">Retry</button>
</div>
<div id="saved" class="ok" role="status" tabindex="-1" hidden>
  <h2>Saved</h2>
  <p>Your credential for ${esc(client)} is saved. Go back and call the tool again.</p>
</div>`;
  return { title, html: `${heading}${facts}${form}` };
}

/** A per_user_oauth caller's consent flow: the server, the identity, and a Connect button (or the outcome). */
function userOauthBody(flow: GetFlowResponse): { html: string; title: string } {
  const client = flow.mcpClient?.name ?? "";
  const title = `Connect ${client}`;
  const heading = `<h1>Connect to ${esc(client)}</h1>
<p>The MCP server <strong>${esc(client)}</strong> needs your own consent at its authorization server before its tools can run for you. The gateway stores the token it is given encrypted, for this identity only.</p>${flowFacts(flow)}`;
  if (flow.status === "completed") {
    return { title, html: `${heading}<div class="ok" role="status" id="oauth-connected"><p>Connected: your token for ${esc(client)} is saved. Go back and call the tool again.</p></div>` };
  }
  if (flow.status === "expired") {
    return { title, html: `${heading}<p class="error" role="alert" id="expired">This consent flow has expired. Call the tool again to get a fresh link.</p>` };
  }
  const failed = flow.error
    ? `<div class="error" role="alert" id="oauth-failed"><p><strong>The authorization did not succeed.</strong></p><p id="oauth-error">${esc(flow.error)}</p><p>Click Connect to try again.</p></div>`
    : "";
  const signIn = signInPart(flow);
  const form = `<form id="connect-form" method="post">
${signIn}
<button type="submit" id="connect">Connect</button>
</form>
<noscript><p class="error">This page needs JavaScript to start the consent.</p></noscript>
<p class="error" role="alert" id="connect-error" hidden></p>`;
  return { title, html: `${heading}${failed}${form}` };
}

/** The outcome of an upstream OAuth authorization (kind=oauth), as the callback left it. */
function oauthBody(flow: GetOauthFlowResponse): { html: string; title: string } {
  const client = flow.clientName;
  const title = `Authorize ${client}`;
  const facts = `
<dl>
  <dt>MCP server</dt><dd id="mcp-client">${esc(client)}</dd>
  <dt>Authorization</dt><dd id="oauth-config-id"><code>${esc(flow.id)}</code></dd>
</dl>`;
  const heading = `<h1>Authorize ${esc(client)}</h1>`;
  let outcome: string;
  if (flow.status === "authorized" && flow.verified) {
    outcome = `<div class="ok" role="status" id="oauth-connected"><p>Access granted and the gateway is connected to ${esc(client)}. You can close this page.</p></div>`;
  } else if (flow.status === "authorized") {
    outcome = `<div class="ok" role="status" id="oauth-authorized"><p>Access granted. The gateway holds the token; an administrator finishes the connection with <code>POST ${esc(flow.completeUrl)}</code>.</p></div>`;
  } else if (flow.status === "failed") {
    outcome = `<div class="error" role="alert" id="oauth-failed"><p><strong>The authorization did not succeed.</strong></p><p id="oauth-error">${esc(flow.error)}</p><p>Start a new one with initiate-verification or reauthorize.</p></div>`;
  } else if (flow.status === "revoked") {
    outcome = `<p class="error" role="alert" id="oauth-revoked">This authorization was revoked.</p>`;
  } else {
    outcome = `<p role="status" id="oauth-pending">Waiting for consent at the authorization server.</p>`;
  }
  return { title, html: `${heading}${facts}${outcome}` };
}

/** Sends an HTML page that only states a problem (the OAuth callback's refusals use it too). */
export function sendMessagePage(res: Res, status: number, title: string, text: string, nonce = randomBytes(16).toString("base64")): void {
  sendPage(res, status, page(title, `<h1>${esc(title)}</h1><p class="error" role="alert">${esc(text)}</p>`, nonce), nonce);
}

function sendPage(res: Res, status: number, html: string, nonce: string): void {
  res.writeHead(status, {
    "content-type": "text/html; charset=utf-8",
    "content-length": Buffer.byteLength(html),
    "cache-control": "no-store",
    "referrer-policy": "no-referrer",
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "content-security-policy": `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'`,
  });
  res.end(html);
}

/** Creates the page handler. */
export function createMcpAuthPage(opts: McpAuthPageOptions): (req: Req, res: Res) => Promise<void> {
  const credentials = createClient(CredentialService, opts.transport);
  const oauth = createClient(OauthService, opts.transport);

  const send = sendPage;
  const message = sendMessagePage;

  /**
   * Only the user a flow is bound to may finish it: a visitor who is not signed in goes to the SSO login and
   * comes back here; someone signed in as another user is refused. True when it answered the request.
   */
  function userGate(flow: GetFlowResponse, req: Req, res: Res, nonce: string): boolean {
    if (flow.signIn === "sso") {
      const here = new URL(req.url ?? "/", "http://page");
      res.writeHead(302, { location: `${SSO_LOGIN_PATH}?return_to=${encodeURIComponent(here.pathname + here.search)}`, "cache-control": "no-store" });
      res.end();
      return true;
    }
    if (flow.signIn === "other_user") {
      const bound = flow.identity?.name ?? "";
      message(
        res,
        403,
        "This link is for another user",
        `This link binds a credential to user “${bound}”, but you are signed in as “${flow.signedInAs}”. Sign out (POST ${SSO_LOGOUT_PATH}) and sign in as “${bound}”, or ask that user to open the link.`,
        nonce,
      );
      return true;
    }
    return false;
  }

  /**
   * The authorize link of a user's OAuth flow, for a browser signed in as that user: starts the consent as the
   * page's Connect button would (binding this browser to it) and sends the browser to the authorization server.
   */
  async function connectAndGo(flow: GetFlowResponse, browser: string, req: Req, res: Res, nonce: string): Promise<void> {
    try {
      const started = await credentials.connectOauthFlow({ flowId: flow.flowId }, { headers: withFlowBrowser(req, browser) });
      res.writeHead(302, { location: started.authorizeUrl, "cache-control": "no-store", "referrer-policy": "no-referrer" });
      res.end();
    } catch (err) {
      const refused = err instanceof ConnectError ? restErrorResponse(err) : undefined;
      if (refused !== undefined && refused.status < 500) {
        message(res, refused.status, "Cannot start the consent", refused.body.error.message, nonce);
        return;
      }
      opts.logger.error({ err }, "the MCP credential page could not start a consent");
      message(res, 500, "Cannot start the consent", "The gateway could not start this consent; its log has the details.", nonce);
    }
  }

  return async (req, res) => {
    const nonce = randomBytes(16).toString("base64");
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.setHeader("allow", "GET, HEAD");
      message(res, 405, "Method not allowed", "Open this page with GET.", nonce);
      return;
    }
    const query = new URL(req.url ?? "/", "http://page").searchParams;
    const flowId = query.get("flow") ?? "";
    const kind = query.get("kind") ?? "headers";
    if (flowId === "") {
      message(res, 400, "Missing flow", "This link has no flow parameter. Call the tool again to get a fresh link.", nonce);
      return;
    }
    if (kind === "oauth") {
      // A per_user_oauth caller's flow lives with the per-user flows; an admin's authorization in the store.
      const own = await credentials.getFlow({ flowId }, { headers: forwardedHeaders(req) }).catch((err: unknown) => {
        if (err instanceof ConnectError && err.code === Code.NotFound) return null;
        throw err;
      }).catch((err: unknown) => {
        opts.logger.error({ err }, "the MCP credential page could not load its flow");
        return undefined;
      });
      if (own === undefined) {
        message(res, 500, "Cannot show this flow", "The gateway could not load this flow; its log has the details.", nonce);
        return;
      }
      if (own !== null && own.kind === "oauth") {
        const { html, title } = userOauthBody(own);
        if (userGate(own, req, res, nonce)) return;
        if (own.identity?.kind === "user" && own.status === "pending") {
          const browser = flowBrowser(req);
          res.setHeader("set-cookie", browser.setCookie);
          if (req.method === "GET" && query.get("connect") === "1" && own.signIn === "signed_in") {
            await connectAndGo(own, browser.value, req, res, nonce);
            return;
          }
        }
        send(res, 200, page(title, html, nonce, flowScriptTags(own, nonce, CONNECT_SCRIPT)), nonce);
        return;
      }
      let flow: GetOauthFlowResponse;
      try {
        flow = await oauth.getOauthFlow({ id: flowId }, { headers: forwardedHeaders(req) });
      } catch (err) {
        if (err instanceof ConnectError && err.code === Code.NotFound) {
          message(res, 404, "Unknown link", `${err.rawMessage}.`, nonce);
          return;
        }
        opts.logger.error({ err }, "the MCP credential page could not load its OAuth attempt");
        message(res, 500, "Cannot show this authorization", "The gateway could not load this authorization; its log has the details.", nonce);
        return;
      }
      const { html, title } = oauthBody(flow);
      send(res, 200, page(title, html, nonce), nonce);
      return;
    }
    if (kind !== "headers") {
      message(res, 400, "Unsupported kind", `Submission kind "${kind}" is not supported; use kind=headers or kind=oauth.`, nonce);
      return;
    }
    let flow: GetFlowResponse;
    try {
      flow = await credentials.getFlow({ flowId }, { headers: forwardedHeaders(req) });
    } catch (err) {
      const known = err instanceof ConnectError && (err.code === Code.NotFound || err.code === Code.Unauthenticated);
      if (!known) opts.logger.error({ err }, "the MCP credential page could not load its flow");
      if (err instanceof ConnectError && err.code === Code.NotFound) {
        message(res, 404, "Unknown link", `${err.rawMessage}.`, nonce);
      } else {
        message(res, known ? 401 : 500, "Cannot show this flow", err instanceof ConnectError && known ? err.rawMessage : "The gateway could not load this flow; its log has the details.", nonce);
      }
      return;
    }
    if (userGate(flow, req, res, nonce)) return;
    const { html, title } = flowBody(flow);
    // The script runs on finished flows too: it still takes the temp token out of the address bar.
    send(res, 200, page(title, html, nonce, flowScriptTags(flow, nonce, SCRIPT)), nonce);
  };
}
