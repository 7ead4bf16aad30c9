/**
 * The `prompt_injection` check: a built-in set of patterns for text that tries to take over a model, in
 * user input, in tool results and in tool descriptions (where a poisoned tool hides orders to the model).
 * Each rule aims at the phrasing of an attack rather than at its topic, so that text about the same things
 * ("ignore the previous error", "what is a system prompt?", "how do I jailbreak my phone") passes. The check
 * only tells where such text is: findings of this check are blocked or warned about, never redacted, since
 * removing the words leaves the attempt in place.
 *
 * To change the set, edit a rule and add the phrasing it must catch, and the look-alike it must let pass, to
 * the test corpus.
 */
import { rejectUnknownSettings, type ContentCheck, type Finding, type PromptInjectionCheckConfig } from "../check-types.js";
import { CombinedScanner, type Detector } from "../combined-scan.js";

/** One rule of the set: its id (the `rule` of its findings), what it catches, and its pattern. */
interface InjectionRule {
  readonly id: string;
  readonly description: string;
  readonly source: string;
  /** Matches code points rather than words: compiled apart, with the `u` flag and without `i` (see the scanners below). */
  readonly invisible?: true;
  readonly confirm?: Detector["confirm"];
}

const VERBS_OF_DISCLOSURE = String.raw`(?:reveal|print|output|display|repeat|leak|dump|disclose|expose|recite|show(?:\s+me)?|tell\s+me|give\s+me|write\s+out)`;
const SECRET_PROMPT = String.raw`(?:system\s+(?:prompt|message|instructions?)|(?:initial|original|hidden|secret|developer)\s+(?:prompt|instructions?))`;
const NEGATION = String.raw`(?:do\s+not|don['\u2019]?t|never|must\s+not)`;

const RULES: readonly InjectionRule[] = [
  {
    id: "ignore_previous_instructions",
    description: "an order to ignore, disregard or forget the instructions given before",
    source: [
      String.raw`\b(?:ignore|disregard|forget|skip|override|bypass|neglect)\s+(?:(?:all|any|every|each|of|the|your|my|these|those)\s+){0,3}(?:previous|prior|above|earlier|preceding|foregoing|former|initial|original|system|developer|existing)\s+(?:instructions?|prompts?|directions?|directives?|rules|guidelines|commands|orders|programming)\b`,
      String.raw`\b(?:ignore|disregard|forget)\s+(?:everything|all)\s+(?:that\s+)?you(?:['\u2019]ve|\s+have)?\s+(?:been\s+|were\s+)?(?:told|taught|instructed)\b`,
      String.raw`\bforget\s+(?:everything|all)\s+(?:written\s+)?above\b`,
    ].join("|"),
  },
  {
    id: "system_prompt_disclosure",
    description: "a request to reveal the system prompt or the hidden instructions",
    source: [
      String.raw`\b${VERBS_OF_DISCLOSURE}\s+(?:(?:all|the|your|full|entire|exact|complete|whole|verbatim|of)\s+){0,3}(?:${SECRET_PROMPT}|instructions\s+you\s+(?:were|have\s+been)\s+given)\b`,
      String.raw`\bwhat\s+(?:is|are|was|were)\s+your\s+(?:(?:full|exact|original|initial|hidden|secret)\s+)?${SECRET_PROMPT}\b`,
      String.raw`\brepeat\s+(?:all\s+)?(?:of\s+)?(?:the\s+)?(?:words|text|everything)\s+above\b`,
    ].join("|"),
  },
  {
    id: "role_override",
    description: "an attempt to give the model a new, unrestricted identity (\"you are now DAN\", \"you are no longer bound by\")",
    source: [
      String.raw`\byou\s+are\s+now\s+(?:an?\s+|the\s+|in\s+|my\s+)?(?:DAN\b|unrestricted|unfiltered|uncensored|unbound|jailbroken|evil|rogue|amoral|free\s+(?:from|of)\s+(?:all\s+|any\s+|your\s+)?(?:restrictions|rules|guidelines|limitations)|(?:in\s+)?developer\s+mode)`,
      String.raw`\byou\s+are\s+no\s+longer\s+(?:(?:bound|restricted|limited|constrained|governed)\s+by|an?\s+(?:AI|assistant|language\s+model|chatbot)\b|(?:ChatGPT|Claude|Gemini)\b)`,
      String.raw`\b(?:pretend|imagine|act\s+as\s+(?:if|though)|behave\s+as\s+(?:if|though))\s+(?:that\s+)?you\s+(?:are|were|have|had)\s+(?:no\s+(?:restrictions|rules|limits|limitations|filters|guidelines|content\s+polic(?:y|ies)|ethical\s+guidelines)|not\s+(?:bound|restricted|limited)|an?\s+(?:unrestricted|unfiltered|uncensored|jailbroken|evil)\b)`,
      String.raw`\bfrom\s+now\s+on,?\s+you\s+(?:are|will\s+be)\s+(?:DAN\b|unrestricted|unfiltered|uncensored|jailbroken|free\s+(?:from|of))`,
    ].join("|"),
  },
  {
    id: "jailbreak",
    description: "known jailbreak phrasing (\"Do Anything Now\", DAN or developer mode, switching off safety training)",
    source: [
      String.raw`\bdo\s+anything\s+now\b`,
      String.raw`\bDAN\s+mode\b`,
      String.raw`\bdeveloper\s+mode\s+output\b`,
      String.raw`\b(?:enable|activate|enter|switch\s+to)\s+(?:DAN|jailbreak|jailbroken|unrestricted|unfiltered|uncensored)\s+mode\b`,
      String.raw`\bjailbr(?:oken|eak)\s+mode\b`,
      String.raw`\b(?:bypass|disable|override|circumvent|deactivate|turn\s+off|get\s+around)\s+(?:(?:all|any|your|the|its|their)\s+){0,2}(?:safety|ethical|moral)\s+(?:guidelines|restrictions|guardrails|filters?|training|programming|policies|constraints|protocols)\b`,
      String.raw`\b(?:ignore|disregard|forget)\s+(?:all\s+)?(?:of\s+)?your\s+(?:(?:safety|ethical|moral|content)\s+)?(?:guidelines|restrictions|guardrails|filters|training|programming|policies|principles|rules)\b`,
    ].join("|"),
  },
  {
    id: "chat_template_tokens",
    description: "a chat template's control tokens (`<|im_start|>system`, `<|eot_id|>`, `[INST]`, `<<SYS>>`), which no ordinary text contains",
    source: String.raw`<\|(?:im_start|im_end|im_sep|system|user|assistant|endoftext|eot_id|eom_id|start_header_id|end_header_id|begin_of_text|end_of_text)\|>|\[\/?INST\]|<<\/?SYS>>|<\/?(?:start_of_turn|end_of_turn)>`,
  },
  {
    id: "hidden_instruction_tags",
    description: "tags that mark orders hidden from the reader (`<IMPORTANT>`, `<system_prompt>`, `<hidden_instructions>`)",
    source: String.raw`<\s*\/?\s*(?:important|system[_-](?:prompt|instructions?|override|message)|(?:hidden|secret|admin)[_-]instructions?)\s*>`,
  },
  {
    id: "conceal_from_user",
    description: "an order to keep something from the user (\"do not tell the user\"), typical of a poisoned tool description",
    source: [
      String.raw`\b${NEGATION}\s+(?:tell|inform|notify|alert)\s+(?:the\s+)?user(?!['\u2019]s)\b`,
      String.raw`\b${NEGATION}\s+(?:mention|reveal|disclose|show|say)\s+(?:this|it|that|anything)\s+to\s+the\s+user\b`,
      String.raw`\b(?:do\s+not|don['\u2019]?t|never)\s+let\s+the\s+user\s+know\b`,
      String.raw`\bwithout\s+(?:telling|informing|notifying|alerting)\s+the\s+user\b`,
      String.raw`\b(?:keep|hide)\s+(?:this|it)\s+(?:secret\s+)?from\s+the\s+user\b`,
      String.raw`\bthe\s+user\s+(?:must|should)\s+(?:not|never)\s+(?:know|see|be\s+told|find\s+out)\b`,
    ].join("|"),
  },
  {
    id: "exfiltration_request",
    description: "an order to read or send private key files or credentials (`~/.ssh/id_rsa`, `.aws/credentials`, `mcp.json`)",
    source: String.raw`\b(?:send|upload|post|exfiltrate|transmit|forward|leak|pass|read|cat|include|attach)\b[^\n]{0,60}?(?:(?:\.ssh\/)?\bid_(?:rsa|ed25519|ecdsa|dsa)\b(?!\.pub)|\.aws\/credentials\b|\bmcp\.json\b|\/etc\/shadow\b)`,
  },
  {
    id: "addressed_to_ai",
    description: "text that addresses an AI reading it (\"if you are an AI reading this\", \"note to the assistant:\"), the mark of an indirect injection",
    source: [
      String.raw`\bif\s+you\s+are\s+an?\s+(?:AI|LLM|(?:large\s+)?language\s+model|AI\s+(?:assistant|agent|model))\s*(?:,|reading|processing|summari[sz]ing|parsing)`,
      String.raw`\b(?:note|message|instructions?)\s+(?:to|for)\s+(?:the\s+|any\s+)?(?:AI|LLM|assistant|language\s+model|AI\s+(?:assistant|agent|model))s?\s*:`,
    ].join("|"),
  },
  {
    id: "unicode_tag_smuggling",
    description: "invisible Unicode tag characters (U+E0000-U+E007F), which can spell out text a reader never sees",
    source: String.raw`(?<![\u{E0000}-\u{E007F}])[\u{E0000}-\u{E007F}]+`,
    invisible: true,
    confirm: confirmTagRun,
  },
  {
    id: "zero_width_smuggling",
    description: "runs of zero-width characters, or letters interleaved with them, which hide text or split words past filters",
    source: String.raw`[\u200B\u200C\u200D\u2060-\u2064\uFEFF\u180E]{3,}|(?:[\p{L}\p{N}][\u200B\u2060\uFEFF]){3,}`,
    invisible: true,
  },
];

/** The rules of the `prompt_injection` check: each finding's `rule` is one of these ids. */
export const PROMPT_INJECTION_RULES: readonly { readonly id: string; readonly description: string }[] = RULES.map(({ id, description }) => ({ id, description }));

/** Compiles a `prompt_injection` check; it has no settings. */
export function compilePromptInjectionCheck(config: PromptInjectionCheckConfig, field = "check"): ContentCheck {
  rejectUnknownSettings(config, [], field);
  return { type: "prompt_injection", scan };
}

/**
 * A subdivision flag (England, Scotland, Wales) is U+1F3F4, a few tag letters or digits and the cancel tag
 * U+E007F: that is the one harmless use of tag characters, and is let through.
 */
function confirmTagRun(text: string, start: number, end: number): Finding | null {
  const finding: Finding = { kind: "prompt_injection", start, end, rule: "unicode_tag_smuggling" };
  if (text.codePointAt(start - 2) !== 0x1f3f4) return finding;
  const tags = [...text.slice(start, end)].map((c) => c.codePointAt(0) ?? 0);
  const last = tags.pop();
  const flagLetters = tags.every((t) => (t >= 0xe0030 && t <= 0xe0039) || (t >= 0xe0061 && t <= 0xe007a));
  return last === 0xe007f && tags.length >= 2 && tags.length <= 7 && flagLetters ? null : finding;
}

/**
 * Two scanners: `\b` under both the `i` and `u` flags makes V8 fold case the Unicode way at every word
 * boundary, many times slower than `i` alone, and only the invisible-character rules need `u`.
 */
const scanners = [
  new CombinedScanner(RULES.filter((r) => r.invisible !== true).map(detector), "i"),
  new CombinedScanner(RULES.filter((r) => r.invisible === true).map(detector), "u"),
] as const;

function detector(rule: InjectionRule): Detector {
  return { kind: "prompt_injection", rule: rule.id, source: rule.source, ...(rule.confirm !== undefined ? { confirm: rule.confirm } : {}) };
}

function scan(text: string): readonly Finding[] {
  const words = scanners[0].scan(text);
  const invisible = scanners[1].scan(text);
  if (invisible.length === 0) return words;
  if (words.length === 0) return invisible;
  return [...words, ...invisible].sort((a, b) => a.start - b.start);
}
