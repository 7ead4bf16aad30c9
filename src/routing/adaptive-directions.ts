/**
 * Adaptive load balancing, level 1: which providers a request tries, in which order. A request that named
 * no provider (the catalog chose) gets its primary drawn by health score with a 5% exploration share and
 * the other healthy providers of the model appended as fallbacks. A pinned request (explicit prefix,
 * governance or a routing rule) keeps its provider unless a toggle says otherwise.
 */
import type { RouteHealth } from "./route-health.js";
import type { Random, RouteTarget } from "./types.js";

/** Share of unpinned requests sent to a uniformly drawn eligible provider, so a penalised one gets measured again. */
export const EXPLORATION_SHARE = 0.05;

/** The toggles level 1 reads. */
export interface DirectionToggles {
  directionSelectionEnabled: boolean;
  appendFallbacksToPinned: boolean;
  rerouteFailedDirections: boolean;
  pruneFailedFallbacks: boolean;
}

/** What level 1 works on. */
export interface DirectionInput {
  primary: RouteTarget;
  fallbacks: readonly RouteTarget[];
  /** False when the catalog chose the provider (the request named none). */
  pinned: boolean;
  /** Providers serving the model, asked only when a toggle needs them. */
  candidates: () => readonly string[];
  /** Whether the caller may use a provider (a virtual key's provider_configs); governance keeps precedence. */
  allowed: (provider: string) => boolean;
  health: RouteHealth;
  toggles: DirectionToggles;
  random: Random;
}

/** Level 1's answer; `changed` is false (and the input targets are returned) when it changed nothing. */
export interface DirectionResult {
  primary: RouteTarget;
  fallbacks: readonly RouteTarget[];
  changed: boolean;
}

function failed(health: RouteHealth, provider: string): boolean {
  return health.providerState(provider) === "failed";
}

/** Eligible candidate providers not already among `taken`, healthiest first. */
function healthyOthers(input: DirectionInput, taken: readonly RouteTarget[]): string[] {
  const { health } = input;
  return input
    .candidates()
    .filter((provider) => input.allowed(provider) && !failed(health, provider) && !taken.some((target) => target.provider === provider))
    .sort((a, b) => health.providerFactor(b) - health.providerFactor(a));
}

function sameTargets(a: readonly RouteTarget[], b: readonly RouteTarget[]): boolean {
  return a.length === b.length && a.every((target, i) => target.provider === b[i]?.provider && target.model === b[i]?.model);
}

/** Applies level 1 to one request's targets. */
export function balanceDirections(input: DirectionInput): DirectionResult {
  const { health, toggles } = input;
  const unchanged = { primary: input.primary, fallbacks: input.fallbacks, changed: false };
  if (!input.pinned) return toggles.directionSelectionEnabled ? chooseUnpinned(input) : unchanged;
  if (!toggles.appendFallbacksToPinned && !toggles.rerouteFailedDirections && !toggles.pruneFailedFallbacks) return unchanged;
  health.refresh();
  let primary = input.primary;
  let fallbacks = toggles.pruneFailedFallbacks ? input.fallbacks.filter((target) => !failed(health, target.provider)) : [...input.fallbacks];
  if (toggles.rerouteFailedDirections && failed(health, primary.provider)) {
    const index = fallbacks.findIndex((target) => !failed(health, target.provider));
    const replacement = index >= 0 ? fallbacks[index] : undefined;
    const other = replacement === undefined ? healthyOthers(input, [primary])[0] : undefined;
    if (replacement !== undefined) {
      fallbacks = [primary, ...fallbacks.slice(0, index), ...fallbacks.slice(index + 1)];
      primary = replacement;
    } else if (other !== undefined) {
      fallbacks = [primary, ...fallbacks];
      primary = { provider: other, model: primary.model };
    }
    if (toggles.pruneFailedFallbacks) fallbacks = fallbacks.filter((target) => !failed(health, target.provider));
  }
  if (toggles.appendFallbacksToPinned) {
    for (const provider of healthyOthers(input, [primary, ...fallbacks])) fallbacks.push({ provider, model: primary.model });
  }
  const changed = primary !== input.primary || !sameTargets(fallbacks, input.fallbacks);
  return changed ? { primary, fallbacks, changed } : unchanged;
}

/** The primary drawn by score among the healthy candidates (5% uniformly), the rest as fallbacks. */
function chooseUnpinned(input: DirectionInput): DirectionResult {
  const { health } = input;
  health.refresh();
  const candidates = input.candidates().filter((provider) => input.allowed(provider));
  const open = candidates.filter((provider) => !failed(health, provider));
  const pool = open.length > 0 ? open : candidates;
  if (pool.length <= 1 && (pool[0] ?? input.primary.provider) === input.primary.provider) {
    return { primary: input.primary, fallbacks: input.fallbacks, changed: false };
  }
  let pick: string;
  if (input.random() < EXPLORATION_SHARE) pick = pool[Math.floor(input.random() * pool.length)] ?? input.primary.provider;
  else {
    let total = 0;
    for (const provider of pool) total += health.providerFactor(provider);
    let target = input.random() * total;
    pick = pool[pool.length - 1] ?? input.primary.provider;
    for (const provider of pool) {
      target -= health.providerFactor(provider);
      if (target < 0) {
        pick = provider;
        break;
      }
    }
  }
  const primary = pick === input.primary.provider ? input.primary : { provider: pick, model: input.primary.model };
  const fallbacks = input.fallbacks.filter((target) => target.provider !== pick);
  for (const provider of healthyOthers(input, [primary, ...fallbacks])) fallbacks.push({ provider, model: primary.model });
  const changed = primary !== input.primary || !sameTargets(fallbacks, input.fallbacks);
  return changed ? { primary, fallbacks, changed } : { primary: input.primary, fallbacks: input.fallbacks, changed: false };
}
