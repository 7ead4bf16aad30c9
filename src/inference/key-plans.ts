/**
 * Per-virtual-key plans: what a request derives from its key alone (the team and customer above it, the
 * subject routing rules and guardrails are scoped by), built once per key and configuration rather than per
 * request. A key's update replaces its object, so a new object gets a new plan; a change to the teams or
 * customers rebuilds plans as requests meet them.
 */
import type { Hierarchy, LevelOwner } from "../routing/hierarchy.js";
import type { RuleSubject } from "../routing/routing-rules.js";
import type { VirtualKey } from "../routing/types.js";

/** What requests with one virtual key share. */
export interface KeyPlan {
  readonly team: LevelOwner | null;
  readonly customer: LevelOwner | null;
  /** Whom routing rules are scoped by. */
  readonly subject: RuleSubject;
  /** The hierarchy's owners version the plan was built at. */
  readonly version: number;
}

/** The plan of a request without a virtual key. */
export const KEYLESS_PLAN: KeyPlan = { team: null, customer: null, subject: { virtualKeyId: "", teamId: "", customerId: "" }, version: -1 };

/** The plans of the keys requests have used, rebuilt when their key or the hierarchy changes. */
export class KeyPlans {
  readonly #hierarchy: Hierarchy;
  readonly #plans = new WeakMap<VirtualKey, KeyPlan>();

  constructor(hierarchy: Hierarchy) {
    this.#hierarchy = hierarchy;
  }

  /** The key's plan; KEYLESS_PLAN without a key. */
  of(virtualKey: VirtualKey | null): KeyPlan {
    if (virtualKey === null) return KEYLESS_PLAN;
    const version = this.#hierarchy.ownersVersion;
    const known = this.#plans.get(virtualKey);
    if (known !== undefined && known.version === version) return known;
    const { team, customer } = this.#hierarchy.membership(virtualKey);
    const plan: KeyPlan = { team, customer, subject: { virtualKeyId: virtualKey.id, teamId: team?.id ?? "", customerId: customer?.id ?? "" }, version };
    this.#plans.set(virtualKey, plan);
    return plan;
  }
}
