/**
 * Pending per-user flows (docs/credentials-oauth-sso.md): header submission (`headers`) or an end-user's OAuth
 * consent (`oauth`); an unguessable 128-bit id, 15 minutes to live, optionally a temp token for the URL
 * fragment. Flows are rows in the database, so a flow opened on one gateway node is finished through any
 * other; the row is keyed by a hash of the flow id and holds only hashes of the temp token and OAuth state,
 * while what a reused flow must hand out again (its id, token, authorization URL and PKCE verifier) is
 * encrypted. Temp tokens are single-use: a submission that reaches the upstream verify spends the token
 * (a conditional update, so two nodes cannot both spend it), and a failed verify hands out a replacement
 * for the Retry. Neither flow ids nor tokens are ever logged.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { insertRecord, McpUserFlowRecord, writeRecord, type McpUserFlowSecrets, type Store } from "../../store/index.js";
import type { CallerIdentity } from "./identity.js";

/** A pending flow expires after 15 minutes (docs/credentials-oauth-sso.md). */
export const FLOW_TTL_MS = 15 * 60_000;
/** A flow with less life left than this is not handed out again; the caller gets a fresh one. */
const REUSE_MIN_REMAINING_MS = 5 * 60_000;
/** Expired flows are kept this long so their link says "expired" rather than "unknown". */
const EXPIRED_RETENTION_MS = 60 * 60_000;
/** Bound on stored flows (callers choose session ids freely, so anyone could open flows); the oldest go first. */
const MAX_FLOWS = 10_000;

/** The browser page's path. */
export const AUTH_PAGE_PATH = "/workspace/mcp-sessions/auth";

/**
 * The cookie naming a browser to the flows of a user: the page sets it, Connect binds it to the authorization
 * it starts for the signed-in user, and the callback of that authorization is accepted from that browser. It
 * is how a sign-in a redirect cannot carry (the admin's password session, a bearer token) reaches the callback.
 */
export const FLOW_BROWSER_COOKIE = "gw_flow_browser";
/** The most browsers one authorization remembers (the same user on a laptop and a phone, say). */
const MAX_BROWSERS = 8;

/** The kinds of flow: header values submitted on the page, or an OAuth consent at the authorization server. */
export type FlowKind = "headers" | "oauth";

/** The authorization an oauth flow is waiting for: the one whose single-use state the callback must bring back. */
export interface PendingAuthorization {
  /** SHA-256 of the state value; null once a callback spent it. */
  stateHash: string | null;
  codeVerifier: string;
  authorizeUrl: string;
  /** Hashes of the browser cookies this authorization was started from by its user (user flows only). */
  browsers: readonly string[];
}

/** One flow, as read from the store. */
export interface Flow {
  readonly id: string;
  readonly kind: FlowKind;
  readonly clientId: string;
  readonly identity: CallerIdentity;
  readonly createdAt: number;
  readonly expiresAt: number;
  readonly completed: boolean;
  /** The current temp token, null when the flow has none or it was spent. */
  readonly tempToken: string | null;
  /** Whether the flow was opened with temp-token auth (the token may be spent by now). */
  readonly tokenAuth: boolean;
  /** oauth flows: the authorization in progress, null before the first one starts. */
  readonly authorization: PendingAuthorization | null;
  /** oauth flows: why the last authorization failed (the authorization server's words), null when none did. */
  readonly error: string | null;
}

function token(bytes: number): string {
  return randomBytes(bytes).toString("base64url");
}

/** The SHA-256 of a flow id or temp token: the store never holds the value itself in clear. */
function digest(value: string): string {
  return createHash("sha256").update(value).digest("hex");
}

function sameSecret(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

function toFlow(rec: McpUserFlowRecord): Flow {
  const secrets = rec.secrets;
  return {
    id: secrets.flowId,
    kind: rec.kind,
    clientId: rec.clientId,
    identity: { kind: rec.identityKind, id: rec.identityId, name: rec.identityName },
    createdAt: rec.createdAt.getTime(),
    expiresAt: rec.expiresAt.getTime(),
    completed: rec.completed,
    tempToken: rec.tempTokenHash !== null ? (secrets.tempToken ?? null) : null,
    tokenAuth: rec.tokenAuth,
    authorization:
      secrets.codeVerifier !== undefined && secrets.authorizeUrl !== undefined
        ? { stateHash: rec.stateHash, codeVerifier: secrets.codeVerifier, authorizeUrl: secrets.authorizeUrl, browsers: secrets.browsers ?? [] }
        : null,
    error: rec.error,
  };
}

/** The browser URL of a flow under `base` (no trailing slash needed). */
export function flowUrl(flow: Flow, base: string): string {
  const url = `${base.replace(/\/+$/, "")}${AUTH_PAGE_PATH}?flow=${flow.id}&kind=${flow.kind}`;
  return flow.tempToken === null ? url : `${url}#t=${flow.tempToken}`;
}

/**
 * The authorize link of a user's oauth flow: its page, which checks the browser is signed in as that user
 * (sending it through the SSO login first when it is signed in as nobody) and then goes on to the consent
 * itself. The authorization server's URL, which carries the flow's state, is handed only to that user.
 */
export function connectUrl(flow: Flow, base: string): string {
  return `${flowUrl(flow, base)}&connect=1`;
}

/** The flows of every node sharing the store. */
export class FlowRegistry {
  constructor(
    private readonly store: Store,
    private readonly now: () => number,
  ) {}

  /** True once a flow's 15 minutes are over. */
  expired(flow: Flow): boolean {
    return this.now() >= flow.expiresAt;
  }

  /**
   * A pending flow for (client, identity): the one already open when it has enough life left and the same
   * token mode, else a new one.
   */
  async open(clientId: string, identity: CallerIdentity, withToken: boolean, kind: FlowKind = "headers"): Promise<Flow> {
    const now = this.now();
    const em = this.store.fork();
    const open = await em.find(
      McpUserFlowRecord,
      { clientId, kind, identityKind: identity.kind, identityId: identity.id, completed: false, tokenAuth: withToken, expiresAt: { $gte: new Date(now + REUSE_MIN_REMAINING_MS) } },
      { orderBy: { createdAt: "desc" } },
    );
    const reusable = open.find((rec) => !withToken || rec.tempTokenHash !== null);
    if (reusable) return toFlow(reusable);
    await em.nativeDelete(McpUserFlowRecord, { expiresAt: { $lt: new Date(now - EXPIRED_RETENTION_MS) } });
    const id = token(16);
    const tempToken = withToken ? token(32) : null;
    const rec = em.create(McpUserFlowRecord, {
      idHash: digest(id),
      kind,
      clientId,
      identityKind: identity.kind,
      identityId: identity.id,
      identityName: identity.name,
      tokenAuth: withToken,
      completed: false,
      tempTokenHash: tempToken === null ? null : digest(tempToken),
      secrets: tempToken === null ? { flowId: id } : { flowId: id, tempToken },
      createdAt: new Date(now),
      expiresAt: new Date(now + FLOW_TTL_MS),
    });
    await insertRecord(em, rec);
    await this.trim(em);
    return toFlow(rec);
  }

  /** Drops the oldest flows beyond MAX_FLOWS. */
  private async trim(em: ReturnType<Store["fork"]>): Promise<void> {
    const excess = (await em.count(McpUserFlowRecord, {})) - MAX_FLOWS;
    if (excess <= 0) return;
    const oldest = await em.find(McpUserFlowRecord, {}, { fields: ["idHash"], orderBy: { createdAt: "asc" }, limit: excess });
    await em.nativeDelete(McpUserFlowRecord, { idHash: { $in: oldest.map((rec) => rec.idHash) } });
  }

  /** The oauth flow whose current authorization carries this state hash (expired flows included while kept). */
  async byStateHash(stateHash: string): Promise<Flow | undefined> {
    const rec = await this.store.fork().findOne(McpUserFlowRecord, { stateHash });
    return rec ? toFlow(rec) : undefined;
  }

  /** A flow by id, expired ones included while they are kept. */
  async get(id: string): Promise<Flow | undefined> {
    const rec = await this.store.fork().findOne(McpUserFlowRecord, { idHash: digest(id) });
    return rec ? toFlow(rec) : undefined;
  }

  /** Checks a presented temp token against the flow's current one (constant time). */
  tokenMatches(flow: Flow, presented: string | null): boolean {
    return flow.tempToken !== null && presented !== null && sameSecret(flow.tempToken, presented);
  }

  /** Spends the flow's temp token; false when another submission (on any node) spent it first. */
  async spendToken(flow: Flow): Promise<boolean> {
    if (flow.tempToken === null) return false;
    const spent = await this.store.fork().nativeUpdate(McpUserFlowRecord, { idHash: digest(flow.id), tempTokenHash: digest(flow.tempToken) }, { tempTokenHash: null });
    return spent === 1;
  }

  /** A fresh temp token after a failed verify, so the page can Retry; null when the flow cannot take one. */
  async replaceToken(flow: Flow): Promise<string | null> {
    if (!flow.tokenAuth || this.expired(flow)) return null;
    const em = this.store.fork();
    const rec = await em.findOne(McpUserFlowRecord, { idHash: digest(flow.id) });
    if (!rec || rec.completed) return null;
    const tempToken = token(32);
    rec.tempTokenHash = digest(tempToken);
    rec.secrets = { ...rec.secrets, tempToken };
    await writeRecord(em, rec);
    return tempToken;
  }

  /** Marks a flow done, spending its token if any; false when it was done already. */
  async complete(flow: Flow): Promise<boolean> {
    const done = await this.store.fork().nativeUpdate(McpUserFlowRecord, { idHash: digest(flow.id), completed: false }, { completed: true, tempTokenHash: null, error: null });
    return done === 1;
  }

  /** Records a new authorization for an oauth flow: its state (hashed), verifier and URL; no browser has started it yet. */
  async authorize(flow: Flow, state: string, codeVerifier: string, authorizeUrl: string): Promise<PendingAuthorization> {
    const em = this.store.fork();
    const rec = await em.findOneOrFail(McpUserFlowRecord, { idHash: digest(flow.id) });
    const { browsers: _previous, ...kept } = rec.secrets;
    const secrets: McpUserFlowSecrets = { ...kept, codeVerifier, authorizeUrl };
    rec.stateHash = digest(state);
    rec.secrets = secrets;
    await writeRecord(em, rec);
    return { stateHash: rec.stateHash, codeVerifier, authorizeUrl, browsers: [] };
  }

  /** Remembers that the browser with this flow cookie started the flow's current authorization. */
  async bindBrowser(flow: Flow, browser: string): Promise<void> {
    const em = this.store.fork();
    const rec = await em.findOne(McpUserFlowRecord, { idHash: digest(flow.id) });
    if (!rec || rec.secrets.codeVerifier === undefined) return;
    const hash = digest(browser);
    const known = rec.secrets.browsers ?? [];
    if (known.includes(hash)) return;
    rec.secrets = { ...rec.secrets, browsers: [...known, hash].slice(-MAX_BROWSERS) };
    await writeRecord(em, rec);
  }

  /** Whether a presented flow cookie is one of the browsers that started this authorization. */
  browserStarted(authorization: PendingAuthorization, presented: string | null): boolean {
    if (presented === null || presented === "") return false;
    const hash = digest(presented);
    return authorization.browsers.some((known) => sameSecret(known, hash));
  }

  /** Spends an OAuth state; false when another callback (on any node) spent it first. */
  async spendState(stateHash: string): Promise<boolean> {
    return (await this.store.fork().nativeUpdate(McpUserFlowRecord, { stateHash }, { stateHash: null })) === 1;
  }

  /** Records why an oauth flow's last authorization failed, for its page. */
  async fail(flow: Flow, error: string): Promise<void> {
    await this.store.fork().nativeUpdate(McpUserFlowRecord, { idHash: digest(flow.id) }, { error });
  }

  /** Drops every flow of a client (deleted). */
  async forgetClient(clientId: string): Promise<void> {
    await this.store.fork().nativeDelete(McpUserFlowRecord, { clientId });
  }

  /** Drops every flow bound to an identity (its virtual key was deleted). */
  async forgetIdentity(kind: CallerIdentity["kind"], identityId: string): Promise<void> {
    await this.store.fork().nativeDelete(McpUserFlowRecord, { identityKind: kind, identityId });
  }
}
