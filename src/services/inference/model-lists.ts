/**
 * Provider list-models calls: at start, after a provider is added or updated (through the API or the
 * config file), and on refetch. A success is stored with the provider and joins the catalog; a failure
 * is a warning and leaves the catalog as it was, so an unreachable upstream never stops the gateway.
 */
import { ProviderRecord, type Store } from "../../store/index.js";
import type { Logger } from "../../telemetry/logger.js";
import type { InferenceState } from "../../inference/state.js";

/** What the model lists need. */
export interface ModelListsDeps {
  store: Store;
  logger: Logger;
  inference: InferenceState;
  /** Bound on one list-models call (default 10 s). */
  timeoutMs?: number;
}

/** Fetches, stores and applies providers' model lists. */
export class ProviderModelLists {
  readonly #deps: ModelListsDeps;
  #closed = false;

  constructor(deps: ModelListsDeps) {
    this.#deps = deps;
  }

  /** Asks the provider for its models with each key in turn; null (after a warning) when none could. */
  async fetch(name: string): Promise<string[] | null> {
    const { inference, logger } = this.#deps;
    const provider = inference.providers.get(name);
    if (provider === undefined) return null;
    let lastError: unknown = new Error("the provider has no keys");
    for (const key of provider.keys) {
      try {
        const models = await provider.adapter.listModels(key, { timeoutMs: this.#deps.timeoutMs ?? 10_000 });
        return models.map((model) => model.id);
      } catch (err) {
        lastError = err;
      }
    }
    logger.warn({ provider: name, err: lastError }, "could not list the provider's models; the catalog keeps what it knew");
    return null;
  }

  /** Fetches and, on success, stores the list and puts it in the catalog; the number of models, or null on failure. */
  async refetch(name: string): Promise<number | null> {
    const models = await this.fetch(name);
    // A gateway that stopped meanwhile has closed its store: the list is not needed any more.
    if (models === null || this.#closed) return null;
    // Deleted while the call was out: nothing to keep. A native update, as no flush may run on the serving
    // thread at start-up (store/native-transaction.ts says why).
    if (!this.#deps.inference.providers.has(name)) return null;
    const updated = await this.#deps.store.fork().nativeUpdate(ProviderRecord, { name }, { listedModels: models, updatedAt: new Date() });
    if (updated === 0) return null;
    this.#deps.inference.setListedModels(name, models);
    return models.length;
  }

  /** Stops writing lists that arrive from now on (the store is about to close). */
  close(): void {
    this.#closed = true;
  }

  /** Clears the stored and catalog list of a provider. */
  async clear(name: string): Promise<void> {
    await this.#deps.store.fork().nativeUpdate(ProviderRecord, { name }, { listedModels: [], updatedAt: new Date() });
    this.#deps.inference.setListedModels(name, []);
  }

  /** Refetches every configured provider, all at once; failures are warnings, never thrown. */
  async refetchAll(): Promise<void> {
    await Promise.all([...this.#deps.inference.providers.keys()].map((name) => this.refetch(name).catch((err: unknown) => {
      this.#deps.logger.warn({ provider: name, err }, "could not store the provider's model list");
    })));
  }
}
