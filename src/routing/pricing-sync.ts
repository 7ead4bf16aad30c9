/**
 * Keeps the prices the gateway charges with: the bundled datasheet until something better is known, the
 * copy stored in the database, and downloads from `pricing.pricing_url`. A worker ticks hourly and
 * downloads again once `sync_interval` has passed since the last good download. A download that fails
 * or carries a bad file changes nothing: the prices in memory (the stored copy, else the bundled one)
 * stay. Requests only ever read `current`, in memory.
 *
 * The interface is "sync now" and "reload from the store": with several gateway nodes only the one `leader`
 * names (the oldest live node) downloads on schedule, and the others reload what it stored when told.
 */
import type { Store } from "../store/index.js";
import { PRICING_SNAPSHOT_ID, PricingSnapshotRecord } from "../store/index.js";
import type { Logger } from "../telemetry/logger.js";
import { PricingDownloadError, downloadPricingFile } from "./pricing-download.js";
import { PricingDataError, isPriceEntryList, parsePricingDatasheet, type PriceEntry } from "./pricing-data.js";
import { PriceTable, bundledPriceEntries } from "./pricing.js";

/** Where the prices in memory came from. */
export type PricingSource = "url" | "stored" | "bundled";

/** The prices in memory. */
export interface PricingSnapshot {
  readonly table: PriceTable;
  readonly entries: readonly PriceEntry[];
  readonly source: PricingSource;
  /** When the datasheet was downloaded; null for the bundled copy. */
  readonly syncedAt: Date | null;
}

/** The pricing section of the configuration. */
export interface PricingSettings {
  /** "" = the bundled datasheet only. */
  url: string;
  syncIntervalMs: number;
}

/** What a PricingSync needs. */
export interface PricingSyncOptions {
  store: Store;
  logger: Logger;
  settings: PricingSettings;
  /** Whether this node runs the scheduled downloads (default: always); the others wait for the stored copy. */
  leader?: () => Promise<boolean>;
  /** Hears every change of the prices in memory. */
  onChange: (snapshot: PricingSnapshot) => void;
  /** Waits between the up to 4 tries of one download (default 1 s, 2 s, 4 s). */
  retryDelaysMs?: readonly number[];
  /** How often the worker checks whether a download is due (default 1 h). */
  tickMs?: number;
  /** Largest datasheet accepted (default 32 MiB). */
  maxBytes?: number;
  /** Bound on one try (default 30 s). */
  timeoutMs?: number;
  now?: () => number;
}

/** A sync that could not replace the prices; the message names the problem. */
export class PricingSyncError extends Error {
  constructor(
    message: string,
    cause?: unknown,
    /** True when there is nothing to sync from (no pricing_url): retrying cannot help until one is set. */
    readonly notConfigured = false,
  ) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = "PricingSyncError";
  }
}

const DEFAULT_RETRY_DELAYS_MS = [1000, 2000, 4000] as const;
const HOUR_MS = 3_600_000;
const DEFAULT_MAX_BYTES = 32 * 1024 * 1024;
const DEFAULT_TIMEOUT_MS = 30_000;

function bundledSnapshot(): PricingSnapshot {
  const entries = bundledPriceEntries();
  return { table: PriceTable.fromEntries(entries), entries, source: "bundled", syncedAt: null };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** The pricing datasheet's life cycle. */
export class PricingSync {
  readonly #options: PricingSyncOptions;
  #settings: PricingSettings;
  #current: PricingSnapshot = bundledSnapshot();
  /** The URL of the copy in memory ("" for the bundled one). */
  #currentUrl = "";
  #inFlight: Promise<PricingSnapshot> | null = null;
  #timer: NodeJS.Timeout | null = null;
  #stopped = false;

  constructor(options: PricingSyncOptions) {
    this.#options = options;
    this.#settings = { ...options.settings };
  }

  /** The prices in memory. */
  get current(): PricingSnapshot {
    return this.#current;
  }

  #now(): number {
    return this.#options.now?.() ?? Date.now();
  }

  #apply(snapshot: PricingSnapshot, url: string): void {
    this.#current = snapshot;
    this.#currentUrl = url;
    this.#options.onChange(snapshot);
  }

  /**
   * Loads the stored copy, downloads when none is stored, it came from another URL or it is older than
   * sync_interval (a failure there is a warning: the stored or bundled prices stay), then starts the worker.
   * With a stored copy in memory the download runs in the background, so a slow URL never holds up start-up.
   */
  async start(): Promise<void> {
    const stored = await this.reloadFromStore();
    if (this.#due() && (await this.#leads())) {
      const sync = this.syncNow().catch(() => undefined);
      if (!stored) await sync;
    }
    this.#timer = setInterval(() => void this.#tick(), this.#options.tickMs ?? HOUR_MS);
    this.#timer.unref();
  }

  /** Stops the worker; a download in flight finishes without storing anything (the store is about to close). */
  stop(): void {
    this.#stopped = true;
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
  }

  /** Takes up changed settings: a new URL downloads now (in the background), no URL goes back to the bundled copy. */
  reconfigure(settings: PricingSettings): void {
    const urlChanged = settings.url !== this.#settings.url;
    this.#settings = { ...settings };
    if (!urlChanged) return;
    if (settings.url === "") this.#apply(bundledSnapshot(), "");
    else void this.syncNow().catch(() => undefined);
  }

  #due(): boolean {
    const { url, syncIntervalMs } = this.#settings;
    if (url === "") return false;
    const syncedAt = this.#current.syncedAt;
    return this.#currentUrl !== url || syncedAt === null || this.#now() - syncedAt.getTime() >= syncIntervalMs;
  }

  async #tick(): Promise<void> {
    if (this.#due() && (await this.#leads())) await this.syncNow().catch(() => undefined);
  }

  /** Whether this node downloads on schedule; a failed check counts as no, so the scheduled download waits for the next tick. */
  async #leads(): Promise<boolean> {
    if (!this.#options.leader) return true;
    try {
      return await this.#options.leader();
    } catch (err) {
      this.#options.logger.warn({ err }, "pricing: could not tell whether this node is the oldest live node; the scheduled download waits for the next tick");
      return false;
    }
  }

  /**
   * Replaces the prices in memory with the stored copy; false (nothing changed) when none is stored, when
   * no pricing_url is configured, or when the row is unreadable.
   */
  async reloadFromStore(): Promise<boolean> {
    if (this.#settings.url === "") return false;
    const rec = await this.#options.store.fork().findOne(PricingSnapshotRecord, { id: PRICING_SNAPSHOT_ID });
    if (rec === null) return false;
    if (!isPriceEntryList(rec.entries)) {
      this.#options.logger.warn("the stored pricing datasheet is unreadable; keeping the prices in memory until the next download");
      return false;
    }
    this.#apply({ table: PriceTable.fromEntries(rec.entries), entries: rec.entries, source: "stored", syncedAt: rec.syncedAt }, rec.sourceUrl);
    this.#options.logger.info({ models_count: rec.modelsCount, synced_at: rec.syncedAt.toISOString() }, "pricing: loaded the stored datasheet");
    return true;
  }

  /** Downloads, checks and stores the datasheet now (one download at a time); throws PricingSyncError, prices unchanged. */
  syncNow(): Promise<PricingSnapshot> {
    this.#inFlight ??= this.#sync().finally(() => {
      this.#inFlight = null;
    });
    return this.#inFlight;
  }

  async #sync(): Promise<PricingSnapshot> {
    const url = this.#settings.url;
    const { logger } = this.#options;
    const kept = this.#current.source;
    try {
      if (url === "") throw new PricingSyncError("pricing.pricing_url is not set, so there is nothing to sync from; the bundled datasheet is in use", undefined, true);
      const text = await this.#download(url);
      let entries: PriceEntry[];
      try {
        entries = parsePricingDatasheet(text);
      } catch (err) {
        if (err instanceof PricingDataError) throw new PricingSyncError(`the pricing file is refused: ${err.message}`, err);
        throw err;
      }
      if (this.#stopped) throw new PricingSyncError("the gateway is stopping");
      const syncedAt = new Date(this.#now());
      // A native upsert, not a flush: a flush would enter the ORM's AsyncLocalStorage (store/native-transaction.ts).
      await this.#options.store.fork().upsert(PricingSnapshotRecord, { id: PRICING_SNAPSHOT_ID, sourceUrl: url, entries, modelsCount: entries.length, syncedAt });
      const snapshot: PricingSnapshot = { table: PriceTable.fromEntries(entries), entries, source: "url", syncedAt };
      this.#apply(snapshot, url);
      logger.info({ models_count: entries.length }, "pricing: datasheet downloaded and stored");
      return snapshot;
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      logger.warn({ source_kept: kept }, `pricing sync failed: ${message}; keeping the ${kept} prices`);
      throw err instanceof PricingSyncError ? err : new PricingSyncError(message, err);
    }
  }

  /** Up to 4 tries, waiting between them, for failures that may pass (network, 5xx, 429). */
  async #download(url: string): Promise<string> {
    const delays = this.#options.retryDelaysMs ?? DEFAULT_RETRY_DELAYS_MS;
    const limits = { maxBytes: this.#options.maxBytes ?? DEFAULT_MAX_BYTES, timeoutMs: this.#options.timeoutMs ?? DEFAULT_TIMEOUT_MS };
    for (let attempt = 0; ; attempt++) {
      try {
        return await downloadPricingFile(url, limits);
      } catch (err) {
        const delay = delays[attempt];
        if (!(err instanceof PricingDownloadError) || !err.transient || delay === undefined) {
          const message = err instanceof Error ? err.message : String(err);
          throw new PricingSyncError(attempt > 0 ? `${message} (after ${attempt + 1} tries)` : message, err);
        }
        await sleep(delay);
      }
    }
  }
}
