/**
 * Slows password guessing at admin sign-in: each source address may fail a few times within a window;
 * after that its attempts are refused with resource_exhausted and a retry-after until the window ends.
 * The table is bounded, so a flood of addresses costs at most MAX_TRACKED_ADDRESSES entries.
 */
import { boundedCache } from "../bounded-cache.js";
import { GatewayError } from "../errors.js";

/** Failed attempts an address may make within one window before it is refused. */
export const MAX_LOGIN_FAILURES = 5;
/** Length of the window that starts at an address's first failure. */
export const LOGIN_FAILURE_WINDOW_MS = 60_000;
/** Addresses remembered at once; the least recently seen is forgotten first when full. */
const MAX_TRACKED_ADDRESSES = 10_000;

interface FailureWindow {
  startedAt: number;
  failures: number;
}

/** Counts failed sign-ins per source address. */
export class LoginThrottle {
  private readonly windows = boundedCache<string, FailureWindow>(MAX_TRACKED_ADDRESSES);

  constructor(
    private readonly maxFailures = MAX_LOGIN_FAILURES,
    private readonly windowMs = LOGIN_FAILURE_WINDOW_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /** Throws resource_exhausted with retry-after when `address` has used up its failures in the current window. */
  check(address: string): void {
    const window = this.current(address);
    if (window === undefined || window.failures < this.maxFailures) return;
    const retryAfterSeconds = Math.max(1, Math.ceil((window.startedAt + this.windowMs - this.now()) / 1000));
    throw new GatewayError(
      "resource_exhausted",
      `too many failed sign-ins from this address (${this.maxFailures} within ${this.windowMs / 1000} s); try again in ${retryAfterSeconds} s`,
      { type: "too_many_login_attempts", retryAfterSeconds },
    );
  }

  /** Counts one failed attempt from `address`. */
  fail(address: string): void {
    const window = this.current(address);
    if (window !== undefined) {
      window.failures += 1;
      return;
    }
    this.windows.set(address, { startedAt: this.now(), failures: 1 });
  }

  /** Addresses currently remembered (for tests of the bound). */
  get size(): number {
    return this.windows.size;
  }

  private current(address: string): FailureWindow | undefined {
    const window = this.windows.get(address);
    if (window === undefined) return undefined;
    if (this.now() - window.startedAt >= this.windowMs) {
      this.windows.delete(address);
      return undefined;
    }
    return window;
  }
}
