/**
 * Compiling a built-in content check from its configuration: the one entry point the guardrail service
 * calls when a guardrail is created or changed, and whose errors name the offending field.
 */
import { CONTENT_CHECK_TYPES, invalidCheck, type ContentCheck, type ContentCheckConfig, type ContentCheckType } from "./check-types.js";
import { compileKeywordsCheck } from "./checks/keywords.js";
import { compilePiiCheck } from "./checks/pii.js";
import { compilePromptInjectionCheck } from "./checks/prompt-injection.js";
import { compileRegexCheck } from "./checks/regex.js";
import { compileSecretsCheck } from "./checks/secrets.js";

/** Whether `type` names a check that runs in-process (as opposed to moderation, llm_judge and webhook). */
export function isContentCheckType(type: unknown): type is ContentCheckType {
  return (CONTENT_CHECK_TYPES as readonly unknown[]).includes(type);
}

/** Validates and compiles a built-in check; `field` is where the configuration sits, for error messages. */
export function compileContentCheck(config: ContentCheckConfig, field = "check"): ContentCheck {
  if (typeof config !== "object" || config === null) throw invalidCheck(field, "must be an object");
  switch (config.type) {
    case "pii":
      return compilePiiCheck(config, field);
    case "secrets":
      return compileSecretsCheck(config, field);
    case "regex":
      return compileRegexCheck(config, field);
    case "keywords":
      return compileKeywordsCheck(config, field);
    case "prompt_injection":
      return compilePromptInjectionCheck(config, field);
    default: {
      const type: unknown = (config as { type?: unknown }).type;
      throw invalidCheck(`${field}.type`, `${JSON.stringify(type)} is not a built-in content check; built in: ${CONTENT_CHECK_TYPES.join(", ")}`);
    }
  }
}
