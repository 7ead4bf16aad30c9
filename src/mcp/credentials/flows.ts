/**
 * Pending per-user flows (spec "Submission flow"): header submission (`headers`) or an end-user's OAuth
 * consent (`oauth`); an unguessable 128-bit id, 15 minutes to live, optionally a temp token for the URL fragment. Flows live in memory only: they are short-lived and
 * a restart simply asks the caller to trigger the tool call again. Temp tokens are single-use: a
 * submission that reaches the upstream verify spends the token, and a failed verify hands out a
 * replacement for the Retry. Neither flow ids nor tokens are ever logged.
 */
import { randomBytes, timingSafeEqual } from "node:crypto";
import type { CallerIdentity } from "./identity.js";

/** Spec: a pending flow expires after 15 minutes. */
export const FLOW_TTL_MS = 15 * 60_000;
/** A flow with less life left than this is not handed out again; the caller gets a fresh one. */
const REUSE_MIN_REMAINING_MS = 5 * 60_000;
/** Expired flows are remembered this long so their link says "expired" rather than "unknown". */
const EXPIRED_RETENTION_MS = 60 * 60_000;
/** Bound on flows held in memory; the oldest go first. */
const MAX_FLOWS = 10_000;

/** The browser page's path. */
export const AUTH_PAGE_PATH = "/workspace/mcp-sessions/auth";

/** The kinds of flow: header values submitted on the page, or an OAuth consent at the authorization server. */
export type FlowKind = "headers" | "oauth";

/** The authorization an oauth flow is waiting for: the one whose single-use state the callback must bring back. */
export interface PendingAuthorization {
  /** SHA-256 of the state value; null once a callback spent it. */
  stateHash: string | null;
  codeVerifier: string;
  authorizeUrl: string;
}

/** One flow. */
export interface Flow {
  readonly id: string;
  readonly kind: FlowKind;
  readonly clientId: string;
  readonly identity: CallerIdentity;
  readonly createdAt: number;
  readonly expiresAt: number;
  completed: boolean;
  /** The current temp token, null when the flow has none or it was spent. */
  tempToken: string | null;
  /** Whether the flow was opened with temp-token auth (the token may be spent by now). */
  readonly tokenAuth: boolean;
  /** oauth flows: the authorization in progress, null before the first one starts. */
  authorization: PendingAuthorization | null;
  /** oauth flows: why the last authorization failed (the authorization server's words), null when none did. */
  error: string | null;
}

function token(bytes: number): string {
  return randomBytes(bytes).toString("base64url");
}

function sameSecret(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

/** The browser URL of a flow under `base` (no trailing slash needed). */
export function flowUrl(flow: Flow, base: string): string {
  const url = `${base.replace(/\/+$/, "")}${AUTH_PAGE_PATH}?flow=${flow.id}&kind=${flow.kind}`;
  return flow.tempToken === null ? url : `${url}#t=${flow.tempToken}`;
}

/** The flows of this instance. */
export class FlowRegistry {
  private readonly flows = new Map<string, Flow>();

  constructor(private readonly now: () => number) {}

  /** True once a flow's 15 minutes are over. */
  expired(flow: Flow): boolean {
    return this.now() >= flow.expiresAt;
  }

  /**
   * A pending flow for (client, identity): the one already open when it has enough life left and the same
   * token mode, else a new one.
   */
  open(clientId: string, identity: CallerIdentity, withToken: boolean, kind: FlowKind = "headers"): Flow {
    const now = this.now();
    for (const flow of this.flows.values()) {
      if (
        flow.clientId === clientId &&
        flow.kind === kind &&
        flow.identity.kind === identity.kind &&
        flow.identity.id === identity.id &&
        !flow.completed &&
        flow.tokenAuth === withToken &&
        (!withToken || flow.tempToken !== null) &&
        flow.expiresAt - now >= REUSE_MIN_REMAINING_MS
      ) {
        return flow;
      }
    }
    this.sweep(now);
    const flow: Flow = {
      id: token(16),
      kind,
      clientId,
      identity: { ...identity },
      createdAt: now,
      expiresAt: now + FLOW_TTL_MS,
      completed: false,
      tempToken: withToken ? token(32) : null,
      tokenAuth: withToken,
      authorization: null,
      error: null,
    };
    this.flows.set(flow.id, flow);
    return flow;
  }

  /** The oauth flow whose current authorization carries this state hash (expired flows included while remembered). */
  byStateHash(stateHash: string): Flow | undefined {
    for (const flow of this.flows.values()) if (flow.authorization?.stateHash === stateHash) return flow;
    return undefined;
  }

  /** A flow by id, expired ones included while they are remembered. */
  get(id: string): Flow | undefined {
    return this.flows.get(id);
  }

  /** Checks a presented temp token against the flow's current one (constant time). */
  tokenMatches(flow: Flow, presented: string | null): boolean {
    return flow.tempToken !== null && presented !== null && sameSecret(flow.tempToken, presented);
  }

  /** Spends the flow's temp token. */
  spendToken(flow: Flow): void {
    flow.tempToken = null;
  }

  /** A fresh temp token after a failed verify, so the page can Retry; null when the flow cannot take one. */
  replaceToken(flow: Flow): string | null {
    if (!flow.tokenAuth || flow.completed || this.expired(flow)) return null;
    flow.tempToken = token(32);
    return flow.tempToken;
  }

  /** Marks a flow done; its token, if any, is spent. */
  complete(flow: Flow): void {
    flow.completed = true;
    flow.tempToken = null;
  }

  /** Drops every flow of a client (deleted). */
  forgetClient(clientId: string): void {
    for (const [id, flow] of this.flows) if (flow.clientId === clientId) this.flows.delete(id);
  }

  /** Drops every flow bound to an identity (its virtual key was deleted). */
  forgetIdentity(kind: CallerIdentity["kind"], identityId: string): void {
    for (const [id, flow] of this.flows) if (flow.identity.kind === kind && flow.identity.id === identityId) this.flows.delete(id);
  }

  private sweep(now: number): void {
    for (const [id, flow] of this.flows) {
      if (now >= flow.expiresAt + EXPIRED_RETENTION_MS) this.flows.delete(id);
    }
    // Map iteration is insertion order, so the first entries are the oldest flows.
    for (const id of this.flows.keys()) {
      if (this.flows.size < MAX_FLOWS) break;
      this.flows.delete(id);
    }
  }
}
