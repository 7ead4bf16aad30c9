/**
 * Response cache settings as wire JSON: a virtual key's `cache` object (admin API and config file) and a
 * request's `x-gw-cache` / `x-gw-cache-ttl` headers, checked into the same CacheSettings with the same
 * ranges and defaults, so an out-of-range value is a 400 naming the field wherever it comes from.
 */
import { durationField } from "../config/duration.js";
import { GatewayError, invalidField } from "../errors.js";
import type { CacheMode, CacheSettings } from "../routing/types.js";
import { isWire, type Wire } from "../config/wire-fields.js";

/** An answer stays cached this long unless the key or the request says otherwise. */
export const DEFAULT_CACHE_TTL = "1h";
/** A semantic hit needs at least this cosine similarity unless the key says otherwise. */
export const DEFAULT_CACHE_THRESHOLD = 0.95;
/** The longest ttl accepted: beyond a month a cached answer is more likely stale than useful. */
const MAX_TTL = "30d";

const MODES: readonly CacheMode[] = ["off", "direct", "semantic"];

/** A mode as the wire writes it; the proto's unset value reads as off. */
export function cacheModeOf(value: unknown, path: string): CacheMode {
  if (value === undefined || value === null || value === "" || value === "unspecified") return "off";
  if (typeof value !== "string" || !(MODES as readonly string[]).includes(value)) {
    throw invalidField(path, `must be one of off, direct, semantic; got ${JSON.stringify(value)}`);
  }
  return value as CacheMode;
}

/** A cache ttl in milliseconds: a duration in (0, 30d]. */
export function cacheTtlMs(value: unknown, path: string): number {
  return durationField(value, path, { example: "1h", sign: "positive", max: MAX_TTL });
}

/** A key's `cache` object; absent (or null) is null. */
export function cacheSettingsOf(raw: unknown, path: string): { settings: CacheSettings; wire: Wire } | null {
  if (raw === undefined || raw === null) return null;
  if (!isWire(raw)) throw invalidField(path, `must be an object {"mode": "direct", "ttl": "1h", "threshold": 0.95}`);
  const mode = cacheModeOf(raw["mode"], `${path}.mode`);
  const rawTtl = raw["ttl"];
  const ttl = rawTtl === undefined || rawTtl === null || rawTtl === "" ? DEFAULT_CACHE_TTL : rawTtl;
  const ttlMs = cacheTtlMs(ttl, `${path}.ttl`);
  const rawThreshold = raw["threshold"];
  const threshold = rawThreshold === undefined || rawThreshold === null ? DEFAULT_CACHE_THRESHOLD : rawThreshold;
  if (typeof threshold !== "number" || !Number.isFinite(threshold) || threshold <= 0 || threshold > 1) {
    throw invalidField(`${path}.threshold`, `must be a number more than 0 and at most 1; got ${JSON.stringify(rawThreshold)}`);
  }
  return { settings: { mode, ttlMs, threshold }, wire: { mode, ttl, threshold } };
}

/** What a request's headers ask of the cache: the mode and ttl they override, each null when not sent. */
export interface CacheRequestHeaders {
  mode: CacheMode | null;
  ttlMs: number | null;
}

/** A request that sends neither cache header (most): one shared answer. */
export const NO_CACHE_HEADERS: Readonly<CacheRequestHeaders> = Object.freeze({ mode: null, ttlMs: null });

/** The cache headers of a request; a bad value is a 400 naming the header. */
export function cacheRequestHeaders(header: (name: string) => string | undefined): CacheRequestHeaders {
  const mode = header("x-gw-cache");
  const ttl = header("x-gw-cache-ttl");
  if (mode === undefined && ttl === undefined) return NO_CACHE_HEADERS;
  return {
    mode: mode === undefined ? null : asRequestError(() => cacheModeOf(mode.trim().toLowerCase(), "x-gw-cache")),
    ttlMs: ttl === undefined ? null : asRequestError(() => cacheTtlMs(ttl.trim(), "x-gw-cache-ttl")),
  };
}

/** A header's 400 in the /v1 vocabulary of a malformed request. */
function asRequestError<T>(read: () => T): T {
  try {
    return read();
  } catch (err) {
    if (!(err instanceof GatewayError)) throw err;
    throw new GatewayError("invalid_argument", err.message, { type: "caller_invalid_request", httpStatus: 400, ...(err.field !== undefined ? { field: err.field } : {}) });
  }
}
