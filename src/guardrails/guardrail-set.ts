/**
 * The guardrails in memory, for the request path: admin writes, config reloads and other nodes' changes
 * replace the snapshot, which is indexed once per change by stage and scope, so a request finds the
 * guardrails that apply to it in a few map lookups and never touches the database. A request reads
 * `snapshot` once and keeps it, so a change in the middle of a request does not mix two configurations.
 */
import { boundedCache } from "../bounded-cache.js";
import type { JudgeModel } from "./call-out.js";
import { GuardrailCheckError } from "./check-failure.js";
import { GUARDRAIL_SCOPE_ORDER, type GuardrailDefinition, type GuardrailScope, type GuardrailStage } from "./definition.js";
import type { GuardrailObserver } from "./guardrail-observer.js";

/** Who a request (or tool call) is for: the owners whose guardrails apply. "" where there is none. */
export interface GuardrailSubject {
  virtualKeyId: string;
  teamId: string;
  customerId: string;
  mcpClientId: string;
}

/** Subjects whose lists are kept per snapshot: a gateway has few, but a flood of unknown ones must not grow it forever. */
const MAX_CACHED_SUBJECTS = 10_000;

const NONE: readonly GuardrailDefinition[] = Object.freeze([]);

function scopeKey(scope: GuardrailScope, scopeId: string): string {
  return scope === "global" ? "global" : `${scope}:${scopeId}`;
}

function subjectScopeId(subject: GuardrailSubject, scope: GuardrailScope): string {
  switch (scope) {
    case "global":
      return "";
    case "customer":
      return subject.customerId;
    case "team":
      return subject.teamId;
    case "virtual_key":
      return subject.virtualKeyId;
    case "mcp_client":
      return subject.mcpClientId;
  }
}

/** The enabled guardrails at one moment, indexed for the request path. */
export class GuardrailSnapshot {
  /** Stage -> scope key -> guardrails, by name. */
  readonly #index = new Map<GuardrailStage, Map<string, GuardrailDefinition[]>>();
  readonly #enabled: readonly GuardrailDefinition[];
  readonly #cache = boundedCache<string, readonly GuardrailDefinition[]>(MAX_CACHED_SUBJECTS);

  constructor(guardrails: Iterable<GuardrailDefinition>) {
    const enabled = [...guardrails].filter((g) => g.enabled).sort((a, b) => a.name.localeCompare(b.name) || a.id.localeCompare(b.id));
    this.#enabled = Object.freeze(enabled);
    for (const guardrail of enabled) {
      for (const stage of guardrail.stages) {
        let byScope = this.#index.get(stage);
        if (byScope === undefined) this.#index.set(stage, (byScope = new Map()));
        const key = scopeKey(guardrail.scope, guardrail.scopeId);
        const list = byScope.get(key);
        if (list === undefined) byScope.set(key, [guardrail]);
        else list.push(guardrail);
      }
    }
  }

  /** Whether no guardrail is enabled at all: then a request has nothing to look up. */
  get empty(): boolean {
    return this.#enabled.length === 0;
  }

  /** Whether any enabled guardrail looks at `stage`, whatever its scope. */
  hasStage(stage: GuardrailStage): boolean {
    return this.#index.has(stage);
  }

  /** Every enabled guardrail, by name. */
  all(): readonly GuardrailDefinition[] {
    return this.#enabled;
  }

  /**
   * The enabled guardrails of `stage` whose scope covers `subject`, broadest scope first (global,
   * customer, team, virtual key, MCP client) and by name within a scope: the order their redactions
   * apply in. Their `when` conditions and sampling rates are left to the caller.
   */
  applicable(stage: GuardrailStage, subject: GuardrailSubject): readonly GuardrailDefinition[] {
    const byScope = this.#index.get(stage);
    if (byScope === undefined) return NONE;
    const cacheKey = `${stage}\n${subject.customerId}\n${subject.teamId}\n${subject.virtualKeyId}\n${subject.mcpClientId}`;
    const cached = this.#cache.get(cacheKey);
    if (cached !== undefined) return cached;
    const out: GuardrailDefinition[] = [];
    for (const scope of GUARDRAIL_SCOPE_ORDER) {
      const id = subjectScopeId(subject, scope);
      if (scope !== "global" && id === "") continue;
      const list = byScope.get(scopeKey(scope, id));
      if (list !== undefined) out.push(...list);
    }
    const frozen = out.length === 0 ? NONE : Object.freeze(out);
    this.#cache.set(cacheKey, frozen);
    return frozen;
  }
}

/** The judge of a set no engine was wired to: every judge check fails, and on_error decides. */
const UNWIRED_JUDGE: JudgeModel = () => Promise.reject(new GuardrailCheckError("guardrail_check_unavailable", "no inference engine is wired to send judge checks through"));

/**
 * Every guardrail, enabled or not, with the snapshot the request path reads, who hears its checks, and how
 * the judge checks reach their models.
 */
export class GuardrailSet {
  readonly #byId = new Map<string, GuardrailDefinition>();
  #snapshot = new GuardrailSnapshot([]);
  readonly #listeners = new Set<(snapshot: GuardrailSnapshot) => void>();
  #observer: GuardrailObserver | undefined;
  #judge: JudgeModel = UNWIRED_JUDGE;

  /**
   * Sends a judge check's completion the way judgeWith() last said. One function for the set's lifetime, so
   * the call-outs built before the engine (the MCP runtime's) reach it once it is wired.
   */
  readonly judge: JudgeModel = (request, signal) => this.#judge(request, signal);

  /** Sets how the judge checks reach their models from now on: the inference engine, through routing. */
  judgeWith(judge: JudgeModel): void {
    this.#judge = judge;
  }

  /** Hears every check a stage runs (metrics, log lines); none until telemetry is wired. */
  get observer(): GuardrailObserver | undefined {
    return this.#observer;
  }

  /** Sets who hears the checks from now on. */
  observe(observer: GuardrailObserver): void {
    this.#observer = observer;
  }

  /** The guardrails as they are now; replaced, never changed, by a write. */
  get snapshot(): GuardrailSnapshot {
    return this.#snapshot;
  }

  /** The guardrail with this id, enabled or not, or null. */
  byId(id: string): GuardrailDefinition | null {
    return this.#byId.get(id) ?? null;
  }

  /** Adds or replaces a guardrail. */
  put(guardrail: GuardrailDefinition): void {
    this.#byId.set(guardrail.id, guardrail);
    this.#rebuild();
  }

  /** Removes a guardrail; unknown ids are ignored. */
  remove(id: string): void {
    if (this.#byId.delete(id)) this.#rebuild();
  }

  /** Replaces every guardrail (boot load, reload). */
  replaceAll(guardrails: Iterable<GuardrailDefinition>): void {
    this.#byId.clear();
    for (const guardrail of guardrails) this.#byId.set(guardrail.id, guardrail);
    this.#rebuild();
  }

  /** Calls `listener` with each new snapshot, for what is precomputed from the guardrails; returns the unsubscribe. */
  onChange(listener: (snapshot: GuardrailSnapshot) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #rebuild(): void {
    this.#snapshot = new GuardrailSnapshot(this.#byId.values());
    for (const listener of this.#listeners) listener(this.#snapshot);
  }
}
