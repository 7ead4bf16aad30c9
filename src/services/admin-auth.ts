/**
 * Admin sessions for the admin API. Tokens are random 256-bit values; only their
 * SHA-256 is stored, so a database dump does not leak live sessions. Verified sessions are cached in
 * memory until they expire or are ended; a logout on another node reaches this cache through the change
 * notification the session's deleted row sends.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { boundedCache } from "../bounded-cache.js";
import { GatewayError } from "../errors.js";
import { AdminSessionRecord, insertRecord, type Store } from "../store/index.js";
import type { AdminPrincipal } from "./context.js";
import { LoginThrottle } from "./login-throttle.js";

/** The admin credentials and session lifetime from auth_config. */
export interface AdminAuthConfig {
  enabled: boolean;
  username: string;
  password: string;
  sessionTtlMs: number;
}

function sha256(text: string): Buffer {
  return createHash("sha256").update(text, "utf8").digest();
}

/** Compares secrets in constant time regardless of length. */
function secretEquals(a: string, b: string): boolean {
  return timingSafeEqual(sha256(a), sha256(b));
}

/** Reads `Bearer <token>` from an Authorization header value. */
export function bearerToken(authorization: string | null | undefined): string | null {
  if (!authorization) return null;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  return match?.[1] ?? null;
}

/** Unknown bearer hashes remembered; beyond it the least recently seen are forgotten. */
const MAX_UNKNOWN_TOKENS = 10_000;

/** Issues, checks and ends admin sessions. */
export class AdminAuth {
  private readonly cache = new Map<string, { username: string; expiresAt: number }>();
  /** Hashes of bearer values the store did not know. */
  private readonly unknown = boundedCache<string, true>(MAX_UNKNOWN_TOKENS);
  /** Failed sign-ins per source address. */
  private readonly throttle = new LoginThrottle();

  constructor(
    private config: AdminAuthConfig,
    private readonly store: Store,
  ) {}

  /** True when auth_config.is_enabled is set. */
  get enabled(): boolean {
    return this.config.enabled;
  }

  /** True when `name` is the configured admin's user name and admin auth is on (a password sign-in exists for it). */
  isAdminUser(name: string): boolean {
    return this.config.enabled && name === this.config.username;
  }

  /**
   * Takes up a changed auth_config (config reload); sessions already issued stay valid until they expire,
   * as they do across a restart. True when anything changed.
   */
  reconfigure(next: AdminAuthConfig): boolean {
    const changed = JSON.stringify(next) !== JSON.stringify(this.config);
    this.config = { ...next };
    return changed;
  }

  /**
   * Exchanges admin credentials for a session token. `peerAddress` is the caller's socket address: after
   * repeated failures from it, attempts are refused (resource_exhausted, retry-after) before any compare.
   */
  async login(username: string, password: string, peerAddress: string): Promise<{ token: string; expiresAt: Date }> {
    if (!this.config.enabled) {
      throw new GatewayError("failed_precondition", "admin authentication is disabled: set auth_config.is_enabled with admin_username and admin_password to sign in");
    }
    this.throttle.check(peerAddress);
    // Both compares always run, so the time taken does not tell which of the two was wrong.
    const userOk = secretEquals(username, this.config.username);
    const passOk = secretEquals(password, this.config.password);
    if (!userOk || !passOk) {
      this.throttle.fail(peerAddress);
      throw new GatewayError("unauthenticated", "wrong admin username or password", { type: "invalid_credentials" });
    }
    const token = randomBytes(32).toString("base64url");
    const hash = sha256(token).toString("hex");
    const expiresAt = new Date(Date.now() + this.config.sessionTtlMs);
    const em = this.store.fork();
    const record = em.create(AdminSessionRecord, { tokenHash: hash, username, createdAt: new Date(), expiresAt });
    await insertRecord(em, record);
    this.cache.set(hash, { username, expiresAt: expiresAt.getTime() });
    return { token, expiresAt };
  }

  /** Resolves the admin behind an Authorization header, or null when there is none or it is not valid. */
  async authenticate(authorization: string | null | undefined): Promise<AdminPrincipal | null> {
    if (!this.config.enabled) return null;
    const token = bearerToken(authorization);
    if (token === null) return null;
    const hash = sha256(token).toString("hex");
    let session = this.cache.get(hash);
    if (!session) {
      // A token is random and born at login, so one the store did not know stays unknown: remembering
      // misses keeps a stream of bad bearer values from costing a database query each.
      if (this.unknown.has(hash)) return null;
      const record = await this.store.fork().findOne(AdminSessionRecord, { tokenHash: hash });
      // Ended on another node while the row was being read: the row may predate the logout.
      if (this.unknown.has(hash)) return null;
      if (!record) {
        this.unknown.set(hash, true);
        return null;
      }
      session = { username: record.username, expiresAt: record.expiresAt.getTime() };
      this.cache.set(hash, session);
    }
    if (session.expiresAt <= Date.now()) {
      this.cache.delete(hash);
      await this.store.fork().nativeDelete(AdminSessionRecord, { tokenHash: hash });
      return null;
    }
    return { username: session.username };
  }

  /** Checks HTTP basic credentials against the admin account (used by /metrics). */
  checkBasic(authorization: string | null | undefined): boolean {
    if (!this.config.enabled) return true;
    const match = /^Basic\s+(\S+)$/i.exec(authorization ?? "");
    if (!match?.[1]) return false;
    const decoded = Buffer.from(match[1], "base64").toString("utf8");
    const colon = decoded.indexOf(":");
    if (colon < 0) return false;
    const userOk = secretEquals(decoded.slice(0, colon), this.config.username);
    const passOk = secretEquals(decoded.slice(colon + 1), this.config.password);
    return userOk && passOk;
  }

  /** Another node ended the session with this token hash (logout or expiry): it is refused from now on. */
  sessionEnded(tokenHash: string): void {
    this.cache.delete(tokenHash);
    this.unknown.set(tokenHash, true);
  }

  /** Forgets every cached session, so each is checked against the store again (logouts may have been missed). */
  forgetSessions(): void {
    this.cache.clear();
  }

  /** Ends the session of this token; unknown tokens are ignored. */
  async logout(authorization: string | null | undefined): Promise<void> {
    const token = bearerToken(authorization);
    if (token === null) return;
    const hash = sha256(token).toString("hex");
    this.sessionEnded(hash);
    await this.store.fork().nativeDelete(AdminSessionRecord, { tokenHash: hash });
  }
}
