/**
 * The answer to content a guardrail blocked: HTTP 446 with the guardrail named, never the content itself.
 */
import { GatewayError } from "../errors.js";

/** The status Portkey and Bifrost answer a guardrail's block with. */
export const GUARDRAIL_BLOCKED_STATUS = 446;

/** A guardrail blocked a request, an answer or a tool call; `verdicts` is the x-gw-guardrails header value. */
export class GuardrailBlockedError extends GatewayError {
  readonly guardrailId: string;
  readonly guardrailName: string;
  readonly stage: string;
  readonly verdicts: string;

  constructor(guardrail: { id: string; name: string }, stage: string, found: string, verdicts: string) {
    super("permission_denied", `guardrail "${guardrail.name}" blocked the ${stage.replace("_", " ")}: ${found}`, { type: "guardrail_blocked", httpStatus: GUARDRAIL_BLOCKED_STATUS });
    this.guardrailId = guardrail.id;
    this.guardrailName = guardrail.name;
    this.stage = stage;
    this.verdicts = verdicts;
  }

  /** The error object of the answer's envelope. */
  toJson(): Record<string, unknown> {
    return { type: "guardrail_blocked", message: this.message, guardrail_id: this.guardrailId, guardrail_name: this.guardrailName, stage: this.stage };
  }
}
