/**
 * gw.credential.v1.CredentialService: the per-user flows behind the browser page (GetFlow, SubmitFlow for
 * header values, ConnectOauthFlow for an OAuth consent) and the caller's stored credentials (ListSessions,
 * RevokeSession). Values and tokens are accepted here and never returned: responses carry ids, statuses
 * and header names only.
 */
import type { IdpTokens } from "./sso/idp-tokens.js";
import type { SsoLogin } from "./sso/sso-login.js";
import { flowFinisher, ssoUserOf as ssoUserOfHeaders } from "./flow-finisher.js";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { GatewayError } from "../errors.js";
import {
  SubmitVerifyError,
  keyHasClientAccess,
  pickIdentity,
  sessionIdentity,
  SESSION_ID_HEADER,
  type AccessCheck,
  type CredentialScope,
} from "../mcp/credentials/index.js";
import type { McpRuntime } from "../mcp/runtime.js";
import { CredentialService } from "../../gen/gw/credential/v1/credential_pb.js";
import type { AdminAuth } from "./admin-auth.js";
import { errorWithFields } from "./connect-errors.js";
import { kRequestScope, type AdminPrincipal } from "./context.js";
import { credentialFromHeaders } from "../inference/credential.js";
import type { Inference } from "../inference/state.js";

export { TEMP_TOKEN_HEADER } from "./flow-finisher.js";

/** What the credential service needs. */
export interface CredentialServiceDeps {
  runtime: McpRuntime;
  inference: Inference;
  auth: AdminAuth;
  /** Tells an IdP bearer token from a virtual key, and verifies it; absent: SSO off. */
  idp?: Pick<IdpTokens, "claimsIssuer" | "verify" | "enabled">;
  /** SSO browser logins: the user behind a request's gw_session cookie (absent: SSO off). */
  ssoLogin?: Pick<SsoLogin, "signedIn">;
}

/** Whether a virtual key (by id) may use a client, read from the in-memory registry. */
export function virtualKeyAccess(inference: Inference): AccessCheck {
  return (virtualKeyId, clientName) => {
    const key = inference.virtualKeys.byId(virtualKeyId);
    return key === null ? undefined : keyHasClientAccess(key, clientName);
  };
}

/** The hook the governance service calls after a key is written or deleted: orphans or restores its credentials. */
export function virtualKeyChangedHook(deps: Pick<CredentialServiceDeps, "runtime" | "inference">): (virtualKeyId: string, deleted: boolean) => Promise<void> {
  return async (virtualKeyId, deleted) => {
    if (deleted) await deps.runtime.credentials.virtualKeyRemoved(virtualKeyId);
    else await deps.runtime.credentials.reconcileAccess(virtualKeyAccess(deps.inference), { virtualKeyId });
  };
}

/** Creates the service implementation. */
export function createCredentialService(deps: CredentialServiceDeps): ServiceImpl<typeof CredentialService> {
  const credentials = () => deps.runtime.credentials;

  /** The signed-in user (the gateway's admin) behind the call's Authorization header, or null. */
  function signedIn(ctx: HandlerContext): Promise<AdminPrincipal | null> {
    return deps.auth.authenticate(ctx.requestHeader.get("authorization"));
  }

  /** The SSO user behind the call's IdP bearer token or, without one, its gw_session cookie, or null; a bad IdP token throws its 401. */
  function ssoUserOf(ctx: HandlerContext) {
    return ssoUserOfHeaders(ctx.requestHeader, deps);
  }

  /** How the request stands with the user a flow is bound to (GetFlowResponse.sign_in), and who it is signed in as. */
  async function signInState(ctx: HandlerContext, bound: { kind: string; id: string }): Promise<{ signIn: string; signedInAs: string }> {
    if (bound.kind !== "user") return { signIn: "", signedInAs: "" };
    const admin = (await signedIn(ctx))?.username ?? null;
    const sso = await ssoUserOf(ctx).catch(() => null);
    if (admin === bound.id || sso?.id === bound.id) return { signIn: "signed_in", signedInAs: "" };
    if (sso !== null) return { signIn: "other_user", signedInAs: sso.name };
    if (admin !== null) return { signIn: "other_user", signedInAs: admin };
    const password = deps.auth.isAdminUser(bound.id) || deps.idp?.enabled !== true;
    return { signIn: password ? "password" : "sso", signedInAs: "" };
  }

  /**
   * Whose credentials the caller sees: the gateway's admin or an SSO user listed as an admin sees all; any
   * other SSO user (IdP bearer token or gw_session cookie), a virtual key or a session id its own, by the
   * precedence user > virtual key > session; with admin auth disabled the admin API is open, so a caller
   * without any of them sees all.
   */
  async function scopeOf(ctx: HandlerContext): Promise<CredentialScope> {
    if ((await signedIn(ctx)) !== null) return { all: true };
    const user = await ssoUserOf(ctx);
    if (user?.admin === true) return { all: true };
    const get = (name: string) => ctx.requestHeader.get(name);
    const key = deps.inference.virtualKeys.resolve(credentialFromHeaders(get, (token) => deps.idp?.claimsIssuer(token) === true));
    const identity = pickIdentity({ user: user === null ? null : { id: user.id, name: user.name }, virtualKey: key, session: sessionIdentity(get(SESSION_ID_HEADER)) });
    if (identity !== null) return { all: false, identity };
    if (!deps.auth.enabled) return { all: true };
    throw new GatewayError(
      "unauthenticated",
      `listing per-user credentials requires an identity: sign in (Authorization: Bearer <session token> or <IdP access token>, or the SSO login), send your virtual key, or set ${SESSION_ID_HEADER}`,
      { type: "mcp_identity_required" },
    );
  }

  /** The name shown for a stored identity: a virtual key's current name, else the stored id. */
  function identityName(kind: string, id: string): string {
    return kind === "vk" ? (deps.inference.virtualKeys.byId(id)?.name ?? id) : id;
  }

  return {
    async getFlow(req, ctx) {
      const view = await credentials().describeFlow(req.flowId);
      const { signIn, signedInAs } = await signInState(ctx, view.identity);
      return {
        flowId: view.flowId,
        kind: view.kind,
        status: view.status,
        mcpClient: { clientId: view.clientId, name: view.clientName },
        identity: { kind: view.identity.kind, name: view.identity.name },
        requiredHeaderKeys: view.requiredHeaderKeys,
        adminHeaderKeys: view.adminHeaderKeys,
        storedHeaderKeys: view.storedHeaderKeys,
        expiresAt: timestampFromDate(view.expiresAt),
        error: view.error ?? "",
        signIn,
        signedInAs,
      };
    },

    async connectOauthFlow(req, ctx) {
      const started = await credentials().connectOauth(req.flowId, await flowFinisher(ctx.requestHeader, deps));
      return { authorizeUrl: started.authorizeUrl, expiresAt: timestampFromDate(started.expiresAt) };
    },

    async submitFlow(req, ctx) {
      const auth = await flowFinisher(ctx.requestHeader, deps);
      try {
        const saved = await credentials().submit(req.flowId, req.headers, auth);
        return { status: "success", credentialId: saved.id, updatedAt: timestampFromDate(saved.updatedAt) };
      } catch (err) {
        // The Retry of a temp-token flow needs the replacement token; it goes back to the same browser only.
        if (err instanceof SubmitVerifyError && err.retryTempToken !== null) throw errorWithFields(err, { temp_token: err.retryTempToken });
        throw err;
      }
    },

    async listSessions(_req, ctx) {
      const views = await credentials().list(await scopeOf(ctx), virtualKeyAccess(deps.inference));
      return {
        sessions: views.map((v) => ({
          credentialId: v.credentialId,
          mcpClientId: v.clientId,
          mcpClientName: v.clientName,
          identityKind: v.identityKind,
          identity: identityName(v.identityKind, v.identityId),
          status: v.status,
          headerKeys: v.headerKeys,
          updatedAt: timestampFromDate(v.updatedAt),
        })),
      };
    },

    async startEditFlow(req, ctx) {
      const cred = (await credentials().list({ all: true })).find((v) => v.credentialId === req.credentialId);
      const name = cred ? identityName(cred.identityKind, cred.identityId) : "";
      const started = await credentials().editFlow(req.credentialId, name, ctx.values.get(kRequestScope).origin);
      return { flowUrl: started.url, kind: started.kind, expiresAt: timestampFromDate(started.expiresAt) };
    },

    async revokeSession(req, ctx) {
      await credentials().revoke(req.credentialId, await scopeOf(ctx));
      return { status: "success" };
    },
  };
}
