/**
 * Persistence of the /mcp authorization server: oidc-provider's models (grants, sessions, interactions,
 * codes, refresh tokens, clients registered dynamically) as encrypted rows, so grants survive a restart;
 * its signing keys, generated once; and the ids of live grants in memory, so a /mcp request checks that
 * its token's grant was not revoked without awaiting the database.
 */
import { randomBytes } from "node:crypto";
import type { EntityManager } from "@mikro-orm/postgresql";
import { exportJWK, generateKeyPair, type JWK } from "jose";
import type { Adapter, AdapterPayload } from "oidc-provider";
import { OAuth2ModelRecord, writeRecord, type Store } from "../../store/index.js";

/** The kind under which the signing keys are kept. */
const KEYS_KIND = "SigningKeys";
const KEYS_KEY = `${KEYS_KIND}:current`;

/** The server's secrets: the JWKS that signs access tokens and the keys that sign its cookies. */
export interface OAuth2Secrets {
  jwks: { keys: JWK[] };
  cookieKeys: string[];
}

/** A grant as the sessions API shows it. */
export interface GrantSummary {
  id: string;
  clientId: string;
  clientName: string;
  accountId: string;
  scopes: string[];
  createdAt: Date;
  expiresAt: Date | null;
}

/** The store behind oidc-provider, plus the in-memory set of live grants. */
export class OAuth2Store {
  private readonly liveGrants = new Set<string>();

  constructor(private readonly store: Store) {}

  /** Deletes what has expired and loads the live grants; call once before serving. */
  async load(): Promise<void> {
    const now = new Date();
    const em = this.store.fork();
    await em.nativeDelete(OAuth2ModelRecord, { expiresAt: { $lte: now } });
    for (const rec of await em.find(OAuth2ModelRecord, { kind: "Grant" })) {
      if (rec.expiresAt === null || rec.expiresAt > now) this.liveGrants.add(rec.key.slice("Grant:".length));
    }
  }

  /** Whether a grant exists (memory only: the hot path of /mcp). */
  grantLive(grantId: string): boolean {
    return this.liveGrants.has(grantId);
  }

  /** The signing keys and cookie keys, generated and stored (encrypted) on first use. */
  async secrets(): Promise<OAuth2Secrets> {
    const em = this.store.fork();
    const rec = await em.findOne(OAuth2ModelRecord, { key: KEYS_KEY });
    if (rec) return rec.payload as unknown as OAuth2Secrets;
    const { privateKey } = await generateKeyPair("ES256", { extractable: true });
    const jwk = { ...(await exportJWK(privateKey)), alg: "ES256", use: "sig", kid: randomBytes(8).toString("base64url") };
    const secrets: OAuth2Secrets = { jwks: { keys: [jwk] }, cookieKeys: [randomBytes(32).toString("base64url")] };
    try {
      // A native insert, not a flush: this runs on the serving thread at every first start, and a flush there
      // turns Node 20's promise hooks on for good (store/native-transaction.ts).
      await em.insert(OAuth2ModelRecord, { key: KEYS_KEY, kind: KEYS_KIND, payload: secrets as unknown as Record<string, unknown>, createdAt: new Date() });
      return secrets;
    } catch {
      // Another node stored its keys first: use those.
      const stored = await this.store.fork().findOneOrFail(OAuth2ModelRecord, { key: KEYS_KEY });
      return stored.payload as unknown as OAuth2Secrets;
    }
  }

  /** oidc-provider's adapter for the model `kind`. */
  adapter(kind: string): Adapter {
    return new StoreAdapter(this.store, kind, this.liveGrants);
  }

  /** Every live grant, newest first. */
  async listGrants(): Promise<GrantSummary[]> {
    const em = this.store.fork();
    const now = new Date();
    const grants = (await em.find(OAuth2ModelRecord, { kind: "Grant" }, { orderBy: { createdAt: "desc" } })).filter((g) => g.expiresAt === null || g.expiresAt > now);
    const clientIds = [...new Set(grants.map((g) => String(g.payload["clientId"] ?? "")))];
    const clients = await em.find(OAuth2ModelRecord, { key: { $in: clientIds.map((id) => `Client:${id}`) } });
    const names = new Map(clients.map((c) => [c.key.slice("Client:".length), String(c.payload["client_name"] ?? "")]));
    return grants.map((g) => {
      const clientId = String(g.payload["clientId"] ?? "");
      return { id: g.key.slice("Grant:".length), clientId, clientName: names.get(clientId) ?? "", accountId: String(g.payload["accountId"] ?? ""), scopes: grantedScopes(g.payload), createdAt: g.createdAt, expiresAt: g.expiresAt };
    });
  }

  /** Deletes a grant with every code and token issued under it; false when there is no such grant. */
  async revokeGrant(grantId: string): Promise<boolean> {
    const em = this.store.fork();
    const grant = await em.findOne(OAuth2ModelRecord, { key: `Grant:${grantId}` });
    this.liveGrants.delete(grantId);
    await em.nativeDelete(OAuth2ModelRecord, { grantId });
    if (!grant) return false;
    await em.nativeDelete(OAuth2ModelRecord, { key: grant.key });
    return true;
  }
}

/** One model kind's rows. */
class StoreAdapter implements Adapter {
  constructor(
    private readonly store: Store,
    private readonly kind: string,
    private readonly liveGrants: Set<string>,
  ) {}

  private key(id: string): string {
    return `${this.kind}:${id}`;
  }

  private em(): EntityManager {
    return this.store.fork();
  }

  async upsert(id: string, payload: AdapterPayload, expiresIn?: number): Promise<void> {
    const em = this.em();
    const fields = {
      kind: this.kind,
      payload: payload as Record<string, unknown>,
      grantId: typeof payload.grantId === "string" ? payload.grantId : null,
      uid: typeof payload.uid === "string" ? payload.uid : null,
      expiresAt: expiresIn ? new Date(Date.now() + expiresIn * 1000) : null,
    };
    await em.upsert(OAuth2ModelRecord, { key: this.key(id), ...fields, createdAt: new Date() }, { onConflictMergeFields: ["payload", "grantId", "uid", "expiresAt"] });
    if (this.kind === "Grant") this.liveGrants.add(id);
  }

  async find(id: string): Promise<AdapterPayload | undefined> {
    return live(await this.em().findOne(OAuth2ModelRecord, { key: this.key(id) }));
  }

  async findByUid(uid: string): Promise<AdapterPayload | undefined> {
    return live(await this.em().findOne(OAuth2ModelRecord, { kind: this.kind, uid }));
  }

  async findByUserCode(): Promise<AdapterPayload | undefined> {
    // The device flow is not enabled.
    return undefined;
  }

  async consume(id: string): Promise<void> {
    const em = this.em();
    const rec = await em.findOne(OAuth2ModelRecord, { key: this.key(id) });
    if (!rec) return;
    rec.payload = { ...rec.payload, consumed: Math.floor(Date.now() / 1000) };
    await writeRecord(em, rec);
  }

  async destroy(id: string): Promise<void> {
    await this.em().nativeDelete(OAuth2ModelRecord, { key: this.key(id) });
    if (this.kind === "Grant") this.liveGrants.delete(id);
  }

  async revokeByGrantId(grantId: string): Promise<void> {
    await this.em().nativeDelete(OAuth2ModelRecord, { kind: this.kind, grantId });
  }
}

/** A grant's OpenID scopes and resource scopes (oidc-provider keeps them as space-separated strings). */
function grantedScopes(payload: Record<string, unknown>): string[] {
  const openid = (payload["openid"] ?? {}) as { scope?: string };
  const resources = (payload["resources"] ?? {}) as Record<string, string>;
  const scopes = new Set([openid.scope ?? "", ...Object.values(resources)].flatMap((text) => text.split(" ")));
  scopes.delete("");
  return [...scopes].sort();
}

function live(rec: OAuth2ModelRecord | null): AdapterPayload | undefined {
  if (!rec || (rec.expiresAt !== null && rec.expiresAt <= new Date())) return undefined;
  return rec.payload as AdapterPayload;
}
