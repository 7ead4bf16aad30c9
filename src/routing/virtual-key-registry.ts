/**
 * The in-memory index of virtual keys by secret value, read on every /v1 request. The owner replaces
 * entries on every write, so lookups never touch the database.
 */
import { RoutingError } from "./routing-error.js";
import type { VirtualKey } from "./types.js";

/** Virtual keys by value and by id. */
export class VirtualKeyRegistry {
  readonly #byValue = new Map<string, VirtualKey>();
  readonly #byId = new Map<string, VirtualKey>();
  readonly #listeners = new Set<() => void>();

  /** Calls `listener` after every change of the keys; returns the unsubscribe. */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #changed(): void {
    for (const listener of this.#listeners) listener();
  }

  /** Adds or replaces a key (matched by id; a changed value drops the old one). */
  put(key: VirtualKey): void {
    this.#drop(key.id);
    this.#byValue.set(key.value, key);
    this.#byId.set(key.id, key);
    this.#changed();
  }

  /** Removes a key by id; unknown ids are ignored. */
  remove(id: string): void {
    if (this.#drop(id)) this.#changed();
  }

  #drop(id: string): boolean {
    const old = this.#byId.get(id);
    if (old === undefined) return false;
    this.#byId.delete(id);
    this.#byValue.delete(old.value);
    return true;
  }

  /** Replaces every key at once (initial load). */
  replaceAll(keys: readonly VirtualKey[]): void {
    this.#byValue.clear();
    this.#byId.clear();
    for (const key of keys) {
      this.#byValue.set(key.value, key);
      this.#byId.set(key.id, key);
    }
    this.#changed();
  }

  /** The ids of every key held. */
  ids(): string[] {
    return [...this.#byId.keys()];
  }

  /** The key with this id, or null. */
  byId(id: string): VirtualKey | null {
    return this.#byId.get(id) ?? null;
  }

  /** Resolves the credential a request carried: null when it carried none, an error when it names no key. */
  resolve(value: string | null | undefined): VirtualKey | null {
    if (value === null || value === undefined || value === "") return null;
    const key = this.#byValue.get(value);
    if (key === undefined) {
      throw new RoutingError(
        "caller_unknown_virtual_key",
        "the virtual key sent with the request does not exist; check the x-gw-vk or Authorization header",
      );
    }
    return key;
  }
}
