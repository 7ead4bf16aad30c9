/**
 * This instance's view of client states and last failures: only what this instance ran into.
 * Operations that talk to an upstream record their outcome here; reads project it through
 * reportedState(). Kept in memory: states describe live connections, not configuration.
 */
import type { ClientStateName, FailureStageName, LastFailureView, RuntimeClientView, RuntimeStateSource } from "./client-state.js";
import { upstreamMessage } from "./discover.js";

/** Mutable per-client states with their last_failure rules. */
export class StateRegistry implements RuntimeStateSource {
  private readonly states = new Map<string, RuntimeClientView>();
  private readonly listeners = new Set<(clientId: string) => void>();

  /** Calls `listener` with the client's id whenever a client's state name changes; returns the unsubscribe. */
  onStateChange(listener: (clientId: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private set(clientId: string, view: RuntimeClientView | undefined): void {
    const before = this.states.get(clientId)?.state;
    if (view === undefined) this.states.delete(clientId);
    else this.states.set(clientId, view);
    if (before !== view?.state) for (const listener of this.listeners) listener(clientId);
  }

  /** What this instance knows of a client, if anything. */
  stateOf(clientId: string): RuntimeClientView | undefined {
    return this.states.get(clientId);
  }

  /** A passing connect or check: the state becomes healthy and last_failure is cleared. */
  succeeded(clientId: string): void {
    this.set(clientId, { state: "healthy" });
  }

  /**
   * A failed connect or check: records last_failure (message whitespace-collapsed, at most 512
   * characters; `since` kept from the first failure of the current unhealthy run).
   */
  failed(clientId: string, stage: FailureStageName, err: unknown, state: ClientStateName = "unstable"): LastFailureView {
    const now = new Date();
    const previous = this.states.get(clientId)?.lastFailure;
    const lastFailure: LastFailureView = { stage, message: upstreamMessage(err), at: now, since: previous?.since ?? now };
    this.set(clientId, { state, lastFailure });
    return lastFailure;
  }

  /** Forgets a deleted client. */
  remove(clientId: string): void {
    this.set(clientId, undefined);
  }
}
