/**
 * The `budget` and `rate_limit` of a hierarchy level (a virtual key, team, customer or business unit) as
 * wire JSON: checked into routing's form (positive limits, known windows) and kept canonical for storage.
 */
import { invalidField } from "../../errors.js";
import type { LevelBudget, LevelRateLimit } from "../../routing/hierarchy.js";
import { parseWindow } from "../../routing/limit-window.js";
import { isWire, type Wire } from "../../config/wire-fields.js";

function positive(value: unknown, path: string): number {
  // The proto JSON of an int64 is a string; the config file writes a number.
  const number = typeof value === "string" && /^\d+$/.test(value) ? Number(value) : value;
  if (typeof number !== "number" || !Number.isFinite(number) || number <= 0) throw invalidField(path, `must be a number > 0, got ${JSON.stringify(value)}`);
  return number;
}

/** A level's budget; absent is null. */
export function levelBudgetOf(raw: unknown, path: string): { budget: LevelBudget; wire: Wire } | null {
  if (raw === undefined || raw === null) return null;
  if (!isWire(raw)) throw invalidField(path, `must be an object {"max_limit": <USD>, "reset_duration": "1M", "calendar_aligned": false}`);
  const maxLimit = positive(raw["max_limit"], `${path}.max_limit`);
  const window = parseWindow(raw["reset_duration"], `${path}.reset_duration`);
  const aligned = raw["calendar_aligned"] ?? false;
  if (typeof aligned !== "boolean") throw invalidField(`${path}.calendar_aligned`, "must be true or false");
  return { budget: { maxLimit, window, calendarAligned: aligned }, wire: { max_limit: maxLimit, reset_duration: window.text, calendar_aligned: aligned } };
}

/** A level's rate limit: requests, tokens, or both, each with its window; absent is null. */
export function levelRateLimitOf(raw: unknown, path: string): { rateLimit: LevelRateLimit; wire: Wire } | null {
  if (raw === undefined || raw === null) return null;
  if (!isWire(raw)) throw invalidField(path, `must be an object {"request_max_limit": 100, "request_reset_duration": "1m", "token_max_limit": 10000, "token_reset_duration": "1h"}`);
  const part = (kind: "request" | "token") => {
    const max = raw[`${kind}_max_limit`];
    const duration = raw[`${kind}_reset_duration`];
    const unset = (max === undefined || max === null || max === 0 || max === "0") && (duration === undefined || duration === null || duration === "");
    if (unset) return null;
    return { maxLimit: positive(max, `${path}.${kind}_max_limit`), window: parseWindow(duration, `${path}.${kind}_reset_duration`) };
  };
  const requests = part("request");
  const tokens = part("token");
  if (requests === null && tokens === null) throw invalidField(path, "sets no limit; give request_max_limit with request_reset_duration, or token_max_limit with token_reset_duration");
  const wire: Wire = {
    ...(requests ? { request_max_limit: requests.maxLimit, request_reset_duration: requests.window.text } : {}),
    ...(tokens ? { token_max_limit: tokens.maxLimit, token_reset_duration: tokens.window.text } : {}),
  };
  return { rateLimit: { requests, tokens }, wire };
}
