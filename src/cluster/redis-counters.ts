/**
 * The shared budget and rate-limit counters in Redis (`redis.url` or GW_REDIS_URL): each counter is a hash
 * holding its window and total, leased by a Lua script so a lease is atomic whichever node sends it. The
 * arithmetic is the shared_counter table's, so either backend grants the same slices.
 */
import type { Redis } from "ioredis";
import type { CounterBackend, LeaseGrant, LeaseRequest } from "../store/index.js";

// Returns strings: Redis would truncate Lua numbers to integers, and costs are fractions of a dollar.
const LEASE_SCRIPT = `
local now = tonumber(ARGV[4])
local len = tonumber(ARGV[3])
local ws = tonumber(redis.call('HGET', KEYS[1], 'ws') or '')
local we = tonumber(redis.call('HGET', KEYS[1], 'we') or '')
local used = tonumber(redis.call('HGET', KEYS[1], 'used') or '')
if ws == nil or we == nil or used == nil then
  ws = tonumber(ARGV[1]); we = tonumber(ARGV[2]); used = 0
elseif now >= we then
  if len > 0 then ws = ws + math.floor((now - ws) / len) * len; we = ws + len else ws = tonumber(ARGV[1]); we = tonumber(ARGV[2]) end
  used = 0
end
local want = tonumber(ARGV[5])
local max = tonumber(ARGV[6])
local slice = (max - used) / (2 * tonumber(ARGV[8]))
if ARGV[7] == '1' then slice = math.floor(slice) end
local left = max - used
if left < 0 then left = 0 end
local grant = math.max(want, slice)
if grant > left then grant = left end
used = used + grant
redis.call('HSET', KEYS[1], 'ws', string.format('%.0f', ws), 'we', string.format('%.0f', we), 'used', string.format('%.17g', used))
redis.call('PEXPIREAT', KEYS[1], we + 3600000)
return {string.format('%.0f', ws), string.format('%.0f', we), string.format('%.17g', grant), string.format('%.17g', used)}
`;

const ADJUST_SCRIPT = `
if redis.call('HGET', KEYS[1], 'ws') ~= ARGV[1] then return 0 end
local used = tonumber(redis.call('HGET', KEYS[1], 'used') or '0') + tonumber(ARGV[2])
if used < 0 then used = 0 end
redis.call('HSET', KEYS[1], 'used', string.format('%.17g', used))
return 1
`;

/** Counters in Redis under `keyPrefix`. */
export class RedisCounters implements CounterBackend {
  /** ioredis is loaded only by a gateway that has Redis configured: it adds noticeably to the process's memory. */
  readonly #redis: Promise<Redis>;
  readonly #prefix: string;

  constructor(options: { url: string; keyPrefix: string; onError: (err: Error) => void }) {
    this.#prefix = options.keyPrefix;
    this.#redis = import("ioredis").then(({ Redis }) => {
      const redis = new Redis(options.url, {
        // Fail at once while disconnected, so the caller can fall back instead of queueing requests behind Redis.
        enableOfflineQueue: false,
        maxRetriesPerRequest: 0,
        commandTimeout: 1_000,
        connectTimeout: 2_000,
        retryStrategy: (times) => Math.min(times * 200, 2_000),
      });
      redis.on("error", options.onError);
      return redis;
    });
    // A failed load is reported like a Redis that does not answer (each call then fails over to the table), never as an unhandled rejection.
    this.#redis.catch(options.onError);
  }

  async lease(request: LeaseRequest): Promise<LeaseGrant> {
    const { key, start, end, lengthMs, now, want, max, integral, nodes } = request;
    const reply = (await (await this.#redis).eval(LEASE_SCRIPT, 1, this.#prefix + key, start, end, lengthMs, now, want, max, integral ? "1" : "0", Math.max(1, nodes))) as string[];
    const [ws, we, granted, used] = reply.map(Number);
    return { start: ws ?? start, end: we ?? end, granted: granted ?? 0, used: used ?? 0 };
  }

  async adjust(key: string, start: number, amount: number): Promise<void> {
    await (await this.#redis).eval(ADJUST_SCRIPT, 1, this.#prefix + key, start.toFixed(0), amount);
  }

  /** Closes the connection. */
  async close(): Promise<void> {
    const redis = await this.#redis;
    await redis.quit().catch(() => redis.disconnect());
  }
}
