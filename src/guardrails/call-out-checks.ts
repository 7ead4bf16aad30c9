/**
 * The call-out of every check type that calls a service, over the configured providers and the judge's way
 * to its model: the one CallOut a stage hands the runner.
 */
import { GuardrailCheckError } from "./check-failure.js";
import type { CallOut, CheckProviders, JudgeModel } from "./call-out.js";
import { runJudgeCheck } from "./judge-check.js";
import { runModerationCheck } from "./moderation-check.js";
import { runWebhookCheck } from "./webhook-check.js";

/**
 * Runs webhook, moderation and llm_judge checks; `providers` is read per call, so provider changes apply at
 * once, and `judge` sends a judge's completion through the gateway's routing.
 */
export function callOutChecks(providers: CheckProviders, judge: JudgeModel): CallOut {
  return (guardrail, request) => {
    const check = guardrail.check;
    switch (check.type) {
      case "webhook":
        return runWebhookCheck(guardrail, check, request);
      case "moderation":
        return runModerationCheck(providers, guardrail, check, request);
      case "llm_judge":
        return runJudgeCheck(providers, judge, check, request);
      default:
        return Promise.reject(new GuardrailCheckError("guardrail_check_unavailable", `a ${check.type} check runs in-process and calls nothing out`));
    }
  };
}
