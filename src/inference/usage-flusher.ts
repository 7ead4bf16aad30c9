/**
 * Writes the in-memory counters (the provider configs' budgets and token limits, and every hierarchy
 * level's budget, request and token windows) to the store on an interval and at shutdown, off the request
 * path: a restart loses at most one interval of counts. The usage history's minute buckets go with them,
 * and buckets past their retention are swept once a minute.
 *
 * Several nodes write the same rows: each adds only what it counted since its last write, under an advisory
 * lock, and takes the stored totals back into memory, so the usage API of every node shows what the whole
 * cluster counted (one interval late for the other nodes) and a restart of every node finds the sum.
 */
import type { EntityManager } from "@mikro-orm/postgresql";
import { inNativeTransaction, LevelUsageRecord, UsageRecord, type Store } from "../store/index.js";
import type { Counters, Hierarchy } from "../routing/hierarchy.js";
import type { Clock, VirtualKey } from "../routing/types.js";
import type { UsageLimits } from "../routing/usage-limits.js";
import type { Logger } from "../telemetry/logger.js";
import type { UsageHistory } from "../telemetry/usage-history.js";
import { adoptCell, deltaOf, mergeCell, type Cell, type WindowEndOf } from "./usage-cells.js";
import { UsageHistoryStore } from "./usage-history-store.js";

/** How often old usage history buckets are swept. */
const SWEEP_INTERVAL_MS = 60_000;

/** Default flush interval. */
export const DEFAULT_USAGE_FLUSH_MS = 1_000;

/** The advisory lock the nodes' usage writes take turns under, per schema (clusters may share a database). */
const WRITE_LOCK = "usage-counters";

const LEVEL_WINDOWS = ["budget", "requests", "tokens"] as const satisfies readonly (keyof Counters)[];

/** Where one window lives: a provider config's budget or token window, or a hierarchy level's window. */
type CellRef = { kind: "config"; virtualKeyId: string; provider: string; slot: number | "tokens" } | { kind: "level"; ownerKey: string; which: keyof Counters };

function configCellId(virtualKeyId: string, provider: string, slot: number | "tokens"): string {
  return `config\u0000${virtualKeyId}\u0000${provider}\u0000${slot}`;
}

function levelCellId(ownerKey: string, which: keyof Counters): string {
  return `level\u0000${ownerKey}\u0000${which}`;
}

/** Every window of the stored or counted rows, by cell id. */
type Cells = Map<string, { ref: CellRef; cell: Cell }>;

/** What the counters in memory hold, and under which revisions. */
interface CountedState {
  cells: Cells;
  limitsRevision: number;
  levelsRevision: number;
}

/** The counters the flusher writes, and where their limits are looked up. */
export interface FlushedCounters {
  limits: UsageLimits;
  hierarchy: Hierarchy;
  virtualKeys: { byId(id: string): VirtualKey | null };
  usageHistory?: UsageHistory;
  /** The clock the windows follow; Date.now when absent. */
  clock?: Clock;
}

/** Periodic persistence of UsageLimits and the hierarchy's counters. */
export class UsageFlusher {
  readonly #store: Store;
  readonly #limits: UsageLimits;
  readonly #hierarchy: Hierarchy;
  readonly #virtualKeys: FlushedCounters["virtualKeys"];
  readonly #now: Clock;
  readonly #logger: Logger;
  readonly #intervalMs: number;
  #timer: NodeJS.Timeout | undefined;
  #written = 0;
  #levelsWritten = 0;
  /** Per window, what of this node's count the store already holds. */
  readonly #seen = new Map<string, Cell>();
  #running: Promise<void> | undefined;
  readonly #history: UsageHistoryStore | undefined;
  #sweptAt = 0;

  constructor(store: Store, counters: FlushedCounters, logger: Logger, intervalMs = DEFAULT_USAGE_FLUSH_MS) {
    this.#store = store;
    this.#limits = counters.limits;
    this.#hierarchy = counters.hierarchy;
    this.#virtualKeys = counters.virtualKeys;
    this.#now = counters.clock ?? Date.now;
    this.#logger = logger;
    this.#intervalMs = intervalMs;
    this.#written = counters.limits.revision;
    this.#levelsWritten = counters.hierarchy.revision;
    // The counters were restored from the store at start: the store holds all of them already.
    for (const [id, { cell }] of this.#counted().cells) this.#seen.set(id, cell);
    this.#history = counters.usageHistory ? new UsageHistoryStore(store, counters.usageHistory) : undefined;
  }

  /** Starts the interval; the timer never keeps the process alive. */
  start(): void {
    this.#timer = setInterval(() => void this.flush(), this.#intervalMs);
    this.#timer.unref();
  }

  /**
   * Writes what was counted since the last write and, with several nodes, reads back what they all counted;
   * never throws (a failure is logged and retried next time).
   */
  flush(): Promise<void> {
    // One write at a time: a slow database must not pile up overlapping writes.
    this.#running ??= this.#write().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  async #write(): Promise<void> {
    await this.#writeCounters();
    await this.#writeHistory();
  }

  /** Every window counted in memory now. */
  #counted(): CountedState {
    const cells: Cells = new Map();
    const limits = this.#limits.snapshot();
    for (const entry of limits.entries) {
      entry.budgets.forEach((window, slot) => {
        if (window !== null) cells.set(configCellId(entry.virtualKeyId, entry.provider, slot), { ref: { kind: "config", virtualKeyId: entry.virtualKeyId, provider: entry.provider, slot }, cell: { start: window.windowStartMs, used: window.used } });
      });
      if (entry.tokens !== null) cells.set(configCellId(entry.virtualKeyId, entry.provider, "tokens"), { ref: { kind: "config", virtualKeyId: entry.virtualKeyId, provider: entry.provider, slot: "tokens" }, cell: { start: entry.tokens.windowStartMs, used: entry.tokens.used } });
    }
    const levels = this.#hierarchy.snapshot();
    for (const entry of levels.entries) {
      for (const which of LEVEL_WINDOWS) {
        const counter = entry.counters[which];
        if (counter !== null) cells.set(levelCellId(entry.ownerKey, which), { ref: { kind: "level", ownerKey: entry.ownerKey, which }, cell: { start: counter.start, used: counter.used } });
      }
    }
    return { cells, limitsRevision: limits.revision, levelsRevision: levels.revision };
  }

  /** The end of a window that starts at `start`, from the limit it belongs to as configured now. */
  #endOf(ref: CellRef): WindowEndOf {
    if (ref.kind === "level") {
      const virtualKey = ref.ownerKey.startsWith("virtual_key:") ? this.#virtualKeys.byId(ref.ownerKey.slice("virtual_key:".length)) : null;
      return (start) => this.#hierarchy.windowEndOf(ref.ownerKey, ref.which, start, virtualKey);
    }
    const config = this.#virtualKeys.byId(ref.virtualKeyId)?.providerConfigs.find((c) => c.provider === ref.provider);
    const durationMs = config === undefined ? undefined : ref.slot === "tokens" ? config.rateLimit?.tokenResetDurationMs : config.budgets[ref.slot]?.resetDurationMs;
    if (durationMs === undefined) return () => null;
    // A window that never resets runs forever.
    return (start) => (durationMs > 0 ? start + durationMs : Infinity);
  }

  async #writeCounters(): Promise<void> {
    const cluster = !this.#store.embedded;
    const removed = this.#hierarchy.removed();
    // One node alone changes nothing in the store it did not count; several nodes read each other's counts back.
    if (!cluster && removed.length === 0 && this.#limits.revision === this.#written && this.#hierarchy.revision === this.#levelsWritten) return;
    // Whatever a removed owner counts from now on is new: none of it is stored.
    for (const ownerKey of removed) for (const which of LEVEL_WINDOWS) this.#seen.delete(levelCellId(ownerKey, which));
    const counted = this.#counted();
    const now = this.#now();
    let stored: Cells;
    try {
      stored = await inNativeTransaction(this.#store, async (em) => {
        // Nodes take turns: each adds its deltas to the totals the one before it wrote. Through the entity
        // manager, which runs it in this transaction; the connection's own execute would take the lock on
        // another pooled connection, in a statement of its own, and let it go at once.
        if (cluster) await em.execute("select pg_advisory_xact_lock(hashtext(?))", [`gw:${this.#store.schema}:${WRITE_LOCK}`]);
        // Counters of removed owners go, so an owner created again under the same id starts from zero.
        if (removed.length > 0) await em.nativeDelete(LevelUsageRecord, { ownerKey: { $in: removed } });
        const cells = await readCells(em);
        const changedConfigs = new Set<string>();
        const changedLevels = new Set<string>();
        for (const [id, { ref, cell }] of counted.cells) {
          const delta = deltaOf(cell, this.#seen.get(id));
          if (delta === null) continue;
          cells.set(id, { ref, cell: mergeCell(cells.get(id)?.cell ?? null, delta, this.#endOf(ref), now) });
          if (ref.kind === "config") changedConfigs.add(`${ref.virtualKeyId}\u0000${ref.provider}`);
          else changedLevels.add(ref.ownerKey);
        }
        await writeRows(em, cells, changedConfigs, changedLevels);
        return cells;
      });
    } catch (err) {
      this.#logger.warn({ err }, "could not persist usage counters; retrying at the next interval");
      return;
    }
    this.#hierarchy.forgetRemoved(removed);
    this.#adopt(counted.cells, stored);
    this.#written = counted.limitsRevision;
    this.#levelsWritten = counted.levelsRevision;
  }

  /** Takes the stored totals back into memory, keeping what was counted while they were written. */
  #adopt(counted: Cells, stored: Cells): void {
    for (const id of this.#seen.keys()) if (!stored.has(id)) this.#seen.delete(id);
    // An owner removed while the write ran must not come back from its stored counters.
    const removing = new Set(this.#hierarchy.removed());
    for (const [id, { ref, cell }] of stored) {
      if (ref.kind === "level" && removing.has(ref.ownerKey)) continue;
      const local = ref.kind === "config" ? this.#limits.windowOf(ref.virtualKeyId, ref.provider, ref.slot) : this.#hierarchy.counterOf(ref.ownerKey, ref.which);
      const localCell = local === null ? null : "windowStartMs" in local ? { start: local.windowStartMs, used: local.used } : local;
      const next = adoptCell(localCell, counted.get(id)?.cell, cell);
      if (!next.adopted) {
        this.#seen.delete(id);
        continue;
      }
      this.#seen.set(id, { ...cell });
      if (localCell !== null && localCell.start === next.cell.start && localCell.used === next.cell.used) continue;
      if (ref.kind === "config") this.#limits.setWindow(ref.virtualKeyId, ref.provider, ref.slot, { windowStartMs: next.cell.start, used: next.cell.used });
      else this.#hierarchy.setCounter(ref.ownerKey, ref.which, next.cell);
    }
  }

  async #writeHistory(): Promise<void> {
    if (!this.#history) return;
    try {
      await this.#history.write();
      if (Date.now() - this.#sweptAt >= SWEEP_INTERVAL_MS) {
        this.#sweptAt = Date.now();
        await this.#history.sweep();
      }
    } catch (err) {
      this.#logger.warn({ err }, "could not persist the usage history; retrying at the next interval");
    }
  }

  /** Stops the interval and writes what is left. */
  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    // A write already under way may have read the counters before the last requests: the second flush writes those.
    await this.flush();
    await this.flush();
  }
}

/** Every stored window of both tables. */
async function readCells(em: EntityManager): Promise<Cells> {
  const cells: Cells = new Map();
  for (const rec of await em.find(UsageRecord, {})) {
    rec.budgets.forEach((window, slot) => {
      if (window !== null) cells.set(configCellId(rec.virtualKeyId, rec.provider, slot), { ref: { kind: "config", virtualKeyId: rec.virtualKeyId, provider: rec.provider, slot }, cell: { start: window.windowStartMs, used: window.used } });
    });
    if (rec.tokens !== null) cells.set(configCellId(rec.virtualKeyId, rec.provider, "tokens"), { ref: { kind: "config", virtualKeyId: rec.virtualKeyId, provider: rec.provider, slot: "tokens" }, cell: { start: rec.tokens.windowStartMs, used: rec.tokens.used } });
  }
  for (const rec of await em.find(LevelUsageRecord, {})) {
    for (const which of LEVEL_WINDOWS) {
      const window = rec[which];
      if (window !== null) cells.set(levelCellId(rec.ownerKey, which), { ref: { kind: "level", ownerKey: rec.ownerKey, which }, cell: { start: window.start, used: window.used } });
    }
  }
  em.clear();
  return cells;
}

/** Writes the rows a delta changed, each whole from the merged windows. */
async function writeRows(em: EntityManager, cells: Cells, configs: ReadonlySet<string>, levels: ReadonlySet<string>): Promise<void> {
  const configRows = new Map<string, { virtualKeyId: string; provider: string; budgets: ({ windowStartMs: number; used: number } | null)[]; tokens: { windowStartMs: number; used: number } | null; updatedAt: Date }>();
  const levelRows = new Map<string, { ownerKey: string; budget: Cell | null; requests: Cell | null; tokens: Cell | null; updatedAt: Date }>();
  for (const { ref, cell } of cells.values()) {
    if (ref.kind === "config") {
      const rowKey = `${ref.virtualKeyId}\u0000${ref.provider}`;
      if (!configs.has(rowKey)) continue;
      let row = configRows.get(rowKey);
      if (row === undefined) {
        row = { virtualKeyId: ref.virtualKeyId, provider: ref.provider, budgets: [], tokens: null, updatedAt: new Date() };
        configRows.set(rowKey, row);
      }
      const window = { windowStartMs: cell.start, used: cell.used };
      if (ref.slot === "tokens") row.tokens = window;
      else {
        while (row.budgets.length < ref.slot) row.budgets.push(null);
        row.budgets[ref.slot] = window;
      }
    } else {
      if (!levels.has(ref.ownerKey)) continue;
      let row = levelRows.get(ref.ownerKey);
      if (row === undefined) {
        row = { ownerKey: ref.ownerKey, budget: null, requests: null, tokens: null, updatedAt: new Date() };
        levelRows.set(ref.ownerKey, row);
      }
      row[ref.which] = { start: cell.start, used: cell.used };
    }
  }
  if (configRows.size > 0) await em.upsertMany(UsageRecord, [...configRows.values()]);
  if (levelRows.size > 0) await em.upsertMany(LevelUsageRecord, [...levelRows.values()]);
}
