/**
 * Managing stored per-user credentials and keeping this node's in-memory view of them current: loading at
 * start, the sessions listing and revoke, and following client, key and access changes (on this node or,
 * through change notifications, on another).
 */
import { GatewayError } from "../../errors.js";
import type { McpCredentialStatus, McpIdentityKind } from "../../store/index.js";
import { upstreamMessage } from "../discover.js";
import { revokeToken } from "../oauth/authorization.js";
import type { CredentialState, PerUserClient } from "./credential-state.js";
import type { CallerIdentity } from "./identity.js";
import { clientOfValues, revocableTokens } from "./oauth-tokens.js";
import type { CredentialChange, StoredCredential } from "./repository.js";
import { afterAccessChange, afterSchemaChange } from "./status.js";

/** A stored credential as the sessions listing shows it: never its values. */
export interface SessionView {
  credentialId: string;
  clientId: string;
  clientName: string;
  identityKind: McpIdentityKind;
  identityId: string;
  status: McpCredentialStatus;
  headerKeys: string[];
  updatedAt: Date;
}

/** Whose credentials a listing or revoke may see: everything (an admin) or one identity's. */
export type CredentialScope = { all: true } | { all: false; identity: Pick<CallerIdentity, "kind" | "id"> };

/** Whether a virtual key (by id) may use the client named `clientName`; undefined when the key does not exist. */
export type AccessCheck = (virtualKeyId: string, clientName: string) => boolean | undefined;

/** The stored per-user credentials as an admin (or their owner) manages them, and the cache kept in step. */
export class CredentialAdmin {
  constructor(private readonly state: CredentialState) {}

  /**
   * Loads the stored credentials and applies schema changes made while the gateway was down (the config
   * file may have changed per_user_header_keys): active credentials whose keys no longer match need an update.
   */
  async load(clients: readonly PerUserClient[]): Promise<void> {
    await this.state.repo.load();
    const byId = new Map(clients.map((c) => [c.id, c]));
    const changes = new Map<string, CredentialChange>();
    const stale: string[] = [];
    for (const cred of this.state.repo.all()) {
      const client = byId.get(cred.clientId);
      if (!client || (client.spec.authType !== "per_user_headers" && client.spec.authType !== "per_user_oauth")) {
        stale.push(cred.id);
        continue;
      }
      if (client.spec.authType === "per_user_oauth") continue;
      const current = { status: cred.status, values: { ...cred.values } };
      const next = afterSchemaChange(current, client.spec.perUserHeaderKeys);
      if (next !== current) changes.set(cred.id, next);
    }
    await this.state.repo.update(changes);
    await this.state.repo.remove(stale);
  }

  private inScope(cred: StoredCredential, scope: CredentialScope): boolean {
    return scope.all || (cred.identityKind === scope.identity.kind && cred.identityId === scope.identity.id);
  }

  /** The credentials in scope, after bringing virtual-key credentials in line with their keys' current access. */
  async list(scope: CredentialScope, access?: AccessCheck): Promise<SessionView[]> {
    if (access) await this.reconcileAccess(access);
    const out: SessionView[] = [];
    for (const cred of this.state.repo.all()) {
      if (!this.inScope(cred, scope)) continue;
      const client = this.state.deps.clientOf(cred.clientId);
      out.push({
        credentialId: cred.id,
        clientId: cred.clientId,
        clientName: client?.spec.name ?? "",
        identityKind: cred.identityKind,
        identityId: cred.identityId,
        status: cred.status,
        // An OAuth credential's values are tokens: their names say nothing to a user.
        headerKeys: client?.spec.authType === "per_user_oauth" ? [] : Object.keys(cred.values),
        updatedAt: cred.updatedAt,
      });
    }
    return out.sort((a, b) => a.clientName.localeCompare(b.clientName) || a.identityId.localeCompare(b.identityId));
  }

  /** Revokes (deletes) a credential in scope; one out of scope is reported as not found. */
  async revoke(credentialId: string, scope: CredentialScope): Promise<StoredCredential> {
    const cred = this.state.repo.get(credentialId);
    if (!cred || !this.inScope(cred, scope)) {
      throw new GatewayError("not_found", `no per-user credential "${credentialId}" visible to this caller`, { type: "credential_not_found" });
    }
    await this.state.repo.remove([cred.id]);
    this.state.deps.logger.info({ client_id: cred.clientId, credential_id: cred.id, identity_kind: cred.identityKind }, "per-user credential revoked");
    if (this.state.deps.clientOf(cred.clientId)?.spec.authType === "per_user_oauth") await this.revokeUpstream(cred);
    return cred;
  }

  /** Revokes an OAuth credential's tokens at the authorization server when it has a revocation endpoint; failures are logged only. */
  private async revokeUpstream(cred: StoredCredential): Promise<void> {
    const grant = this.state.grantOf(cred.clientId);
    if (!grant) return;
    try {
      for (const { token, hint } of revocableTokens(cred.values)) {
        if (!(await revokeToken({ ...grant, clientInformation: clientOfValues(cred.values, grant.clientInformation) }, token, hint))) break;
      }
    } catch (err) {
      this.state.deps.logger.warn({ client_id: cred.clientId, credential_id: cred.id, err: upstreamMessage(err) }, "per-user OAuth token revocation failed");
    }
  }

  /** The admin changed a client's per_user_header_keys: applies the schema-change transition to its credentials. */
  async schemaChanged(clientId: string, keys: readonly string[]): Promise<number> {
    const changes = new Map<string, CredentialChange>();
    for (const cred of this.state.repo.all()) {
      if (cred.clientId !== clientId) continue;
      const current = { status: cred.status, values: { ...cred.values } };
      const next = afterSchemaChange(current, keys);
      if (next !== current) changes.set(cred.id, next);
    }
    await this.state.repo.update(changes);
    if (changes.size > 0) this.state.deps.logger.info({ client_id: clientId, credentials: changes.size }, "per_user_header_keys changed: credentials need an update");
    return changes.size;
  }

  /**
   * Orphans virtual-key credentials whose key lost access to their client and restores those whose key
   * regained it; `only` narrows the work to one key or one client.
   */
  async reconcileAccess(access: AccessCheck, only: { virtualKeyId?: string; clientId?: string } = {}): Promise<void> {
    const changes = new Map<string, CredentialChange>();
    for (const cred of this.state.repo.all()) {
      if (cred.identityKind !== "vk") continue;
      if (only.virtualKeyId !== undefined && cred.identityId !== only.virtualKeyId) continue;
      if (only.clientId !== undefined && cred.clientId !== only.clientId) continue;
      const client = this.state.deps.clientOf(cred.clientId);
      if (!client) continue;
      const allowed = access(cred.identityId, client.spec.name) ?? false;
      // An OAuth credential has no header schema to fall behind: its own value names stand in for it.
      const keys = client.spec.authType === "per_user_oauth" ? Object.keys(cred.values) : client.spec.perUserHeaderKeys;
      const status = afterAccessChange({ status: cred.status, values: { ...cred.values } }, allowed, keys);
      if (status !== cred.status) changes.set(cred.id, { status });
    }
    await this.state.repo.update(changes);
    for (const [id, change] of changes) {
      const cred = this.state.repo.get(id);
      this.state.deps.logger.info({ client_id: cred?.clientId, credential_id: id, virtual_key_id: cred?.identityId, status: change.status }, "per-user credential status changed by a virtual key's access");
    }
  }

  /** Another node stored, changed or revoked a credential: this node's cache takes the row as stored. */
  async credentialChanged(credentialId: string): Promise<void> {
    await this.state.repo.reload(credentialId);
  }

  /** After missed change notifications: every credential is read again. */
  async reloadAll(): Promise<void> {
    await this.state.repo.load();
  }

  /** A virtual key was deleted: its credentials and flows go with it. */
  async virtualKeyRemoved(virtualKeyId: string): Promise<void> {
    await this.state.flows.forgetIdentity("vk", virtualKeyId);
    await this.state.repo.remove(this.state.repo.all().filter((c) => c.identityKind === "vk" && c.identityId === virtualKeyId).map((c) => c.id));
  }

  /** A client was deleted: its credentials and flows go with it. */
  async clientRemoved(clientId: string): Promise<void> {
    await this.state.flows.forgetClient(clientId);
    await this.state.repo.remove(this.state.repo.all().filter((c) => c.clientId === clientId).map((c) => c.id));
  }
}
