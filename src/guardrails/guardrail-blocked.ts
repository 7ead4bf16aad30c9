/**
 * The answer to content a guardrail blocked: HTTP 446 with the guardrail named, never the content itself.
 */
import { GatewayError } from "../errors.js";

/** The status Portkey and Bifrost answer a guardrail's block with. */
export const GUARDRAIL_BLOCKED_STATUS = 446;

/**
 * A guardrail blocked a request, an answer or a tool call; `verdicts` is the x-gw-guardrails header value.
 * `blockCode` tells a block the gateway made without a verdict (a held answer past its bound) from the
 * guardrail's own: the envelope then carries it as `code`, so a client can tell the two apart.
 */
export class GuardrailBlockedError extends GatewayError {
  readonly guardrailId: string;
  readonly guardrailName: string;
  readonly stage: string;
  readonly verdicts: string;
  readonly blockCode: string | null;

  constructor(guardrail: { id: string; name: string }, stage: string, found: string, verdicts: string, blockCode: string | null = null) {
    super("permission_denied", `guardrail "${guardrail.name}" blocked the ${stage.replace("_", " ")}: ${found}`, { type: "guardrail_blocked", httpStatus: GUARDRAIL_BLOCKED_STATUS });
    this.guardrailId = guardrail.id;
    this.guardrailName = guardrail.name;
    this.stage = stage;
    this.verdicts = verdicts;
    this.blockCode = blockCode;
  }

  /** The error object of the answer's envelope. */
  toJson(): Record<string, unknown> {
    return {
      type: "guardrail_blocked",
      ...(this.blockCode === null ? {} : { code: this.blockCode }),
      message: this.message,
      guardrail_id: this.guardrailId,
      guardrail_name: this.guardrailName,
      stage: this.stage,
    };
  }
}
