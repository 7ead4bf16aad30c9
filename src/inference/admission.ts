/**
 * Admission and identity: the caller's virtual key (required when client.enforce_governance is on) and the
 * hierarchy's verdict on whether its team or customer still has room.
 */
import type { IncomingHttpHeaders } from "node:http";
import { GatewayError } from "../errors.js";
import type { LevelExceeded } from "../routing/hierarchy.js";
import { RoutingError } from "../routing/routing-error.js";
import type { VirtualKey } from "../routing/types.js";
import { virtualKeyCredential } from "./calls.js";
import type { Engine } from "./engine-deps.js";
import type { InferenceRequest } from "./request-context.js";

/** The virtual key the headers carry; null without one, a 401 when governance is enforced. */
export function resolveKey(engine: Engine, headers: IncomingHttpHeaders): VirtualKey | null {
  const key = engine.inference.virtualKeys.resolve(virtualKeyCredential(headers, engine.idp));
  if (key === null && engine.settings.client.enforceGovernance) {
    throw new GatewayError("unauthenticated", "this gateway requires a virtual key for inference (client.enforce_governance); send it as x-gw-vk, Authorization: Bearer or x-api-key", {
      type: "caller_virtual_key_required",
      httpStatus: 401,
    });
  }
  return key;
}

/** Sets the request's virtual key and refuses it when a level above the key has used its limits. */
export function admit(engine: Engine, req: InferenceRequest): void {
  const { call } = req;
  // Resolved once per request: agent mode has already looked the key up for its tools.
  const virtualKey = call.virtualKey !== undefined ? call.virtualKey : resolveKey(engine, call.headers);
  req.virtualKey = virtualKey;
  req.keyPlan = engine.keyPlans.of(virtualKey);
  if (virtualKey !== null && virtualKey.isActive) {
    const over = engine.inference.hierarchy.exceeded(virtualKey);
    if (over !== null) throw levelError(over);
  }
}

const LIMIT_NAMES = { budget: "budget", requests: "request rate limit", tokens: "token rate limit" } as const;

/** The refusal of a request some level of the hierarchy has no room for, naming that level. */
export function levelError(over: LevelExceeded): RoutingError {
  const { owner, limit } = over;
  const level = owner.level.replace("_", " ");
  const message = `${level} "${owner.id}" (${owner.name}) has used its ${LIMIT_NAMES[limit]}; wait for the window to reset or raise the limit`;
  return new RoutingError(limit === "budget" ? "policy_budget_exceeded" : "policy_rate_limited", message);
}
