/**
 * The `secrets` check: API keys of well-known providers, cloud access keys, bearer tokens, JWTs and PEM
 * private keys. Most patterns are a provider's fixed prefix plus the token's alphabet; where a shape alone
 * would also fit ordinary words (`sk-` and a long word, `Bearer` and a phrase), a token must mix letters and
 * digits, and a JWT's header must decode to JSON naming an `alg`. An AWS secret key has no prefix, so it is
 * found only after a label that names it, and the finding covers the key, not the label.
 */
import { Buffer } from "node:buffer";
import { rejectUnknownSettings, type ContentCheck, type Finding, type SecretsCheckConfig } from "../check-types.js";
import { CombinedScanner, type Detector } from "../combined-scan.js";

/** What the `secrets` check finds: each kind it reports and what that kind is. */
export const SECRET_KINDS = [
  { kind: "private_key", description: "a PEM private key block (`-----BEGIN ... PRIVATE KEY-----`), also when cut off before its END line" },
  { kind: "anthropic_api_key", description: "an Anthropic API key (`sk-ant-...`)" },
  { kind: "openai_api_key", description: "an OpenAI API key (`sk-...`, `sk-proj-...`, `sk-svcacct-...`, `sk-admin-...`)" },
  { kind: "google_api_key", description: "a Google API key (`AIza` and 35 characters)" },
  { kind: "github_token", description: "a GitHub token (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`, `github_pat_`)" },
  { kind: "slack_token", description: "a Slack token (`xoxb-`, `xoxp-`, `xoxa-`, `xoxr-`, `xoxs-`, `xoxo-`, `xapp-`)" },
  { kind: "slack_webhook", description: "a Slack incoming-webhook URL (`https://hooks.slack.com/services/...`)" },
  { kind: "stripe_key", description: "a Stripe secret or restricted key (`sk_live_`, `sk_test_`, `rk_live_`, `rk_test_`)" },
  { kind: "aws_access_key", description: "an AWS access key id (`AKIA`, `ASIA`, `ABIA`, `ACCA` and 16 characters)" },
  { kind: "aws_secret_key", description: "a 40-character AWS secret access key after a label naming it (`aws_secret_access_key=`, `\"SecretAccessKey\":`)" },
  { kind: "jwt", description: "a JSON Web Token: three base64url parts whose header decodes to JSON with `alg` (two, where the text ends after the payload)" },
  { kind: "bearer_token", description: "the token of `Bearer <token>`" },
] as const;

/** One kind of secret. */
export type SecretKind = (typeof SECRET_KINDS)[number]["kind"];

/** Compiles a `secrets` check; it has no settings. */
export function compileSecretsCheck(config: SecretsCheckConfig, field = "check"): ContentCheck {
  rejectUnknownSettings(config, [], field);
  return { type: "secrets", scan: (text) => scanner.scan(text) };
}

const isDigit = (c: number): boolean => c >= 48 && c <= 57;
const isLetter = (c: number): boolean => (c >= 65 && c <= 90) || (c >= 97 && c <= 122);

/** Whether `[start, end)` has both a letter and a digit, as generated tokens do and words do not. */
function mixesLettersAndDigits(text: string, start: number, end: number): boolean {
  let letter = false;
  let digit = false;
  for (let i = start; i < end && !(letter && digit); i++) {
    const c = text.charCodeAt(i);
    if (isDigit(c)) digit = true;
    else if (isLetter(c)) letter = true;
  }
  return letter && digit;
}

/** A detector whose token must mix letters and digits from `skip` characters into the match on. */
function mixedToken(kind: SecretKind, source: string, skip = 0): Detector {
  return {
    kind,
    source,
    confirm: (text, start, end) => (mixesLettersAndDigits(text, start + skip, end) ? { kind, start, end } : null),
  };
}

/** `word` matched in any case, for labels in a scanner that is otherwise case-sensitive. */
function anyCase(word: string): string {
  return [...word].map((c) => (/[a-z]/i.test(c) ? `[${c.toUpperCase()}${c.toLowerCase()}]` : c)).join("");
}

// ---- PEM private keys ---------------------------------------------------------------------------------

const PEM_BEGIN = String.raw`-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----`;
const PEM_END = /-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----/y;

/** What a PEM body is made of: base64, line breaks, and the `Proc-Type:`/`DEK-Info:` headers of an encrypted key. */
function isPemBodyChar(c: number): boolean {
  return isLetter(c) || isDigit(c) || c === 43 || c === 47 || c === 61 || c === 10 || c === 13 || c === 32 || c === 9 || c === 58 || c === 44 || c === 45;
}

/**
 * The block runs to its END line; a block cut off before it (a truncated paste, a stream still arriving)
 * runs to where the body's characters stop, since the part present is already secret.
 */
function confirmPrivateKey(text: string, start: number, end: number): Finding | null {
  let at = end;
  while (at < text.length) {
    if (text.charCodeAt(at) === 45 && text.startsWith("-----END ", at)) {
      PEM_END.lastIndex = at;
      if (PEM_END.exec(text) !== null) return { kind: "private_key", start, end: PEM_END.lastIndex };
    }
    if (!isPemBodyChar(text.charCodeAt(at))) break;
    at++;
  }
  while (at > end && isSpace(text.charCodeAt(at - 1))) at--;
  return { kind: "private_key", start, end: at };
}

const isSpace = (c: number): boolean => c === 32 || c === 9 || c === 10 || c === 13;

// ---- JWT ----------------------------------------------------------------------------------------------

/**
 * `eyJ` is `{"` in base64url, the start of every JSON header. A token cut off after its payload (the text
 * ends there: a truncated paste, a stream still arriving) counts too, as a private key's block does.
 */
const JWT = String.raw`(?<![\w-])eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]*)?(?![\w-])`;

function confirmJwt(text: string, start: number, end: number): Finding | null {
  const dot = text.indexOf(".", start);
  if (dot === -1 || dot >= end) return null;
  const signed = text.indexOf(".", dot + 1);
  if ((signed === -1 || signed >= end) && end !== text.length) return null;
  const decoded = Buffer.from(text.slice(start, dot), "base64url").toString("utf8");
  // Most look-alikes fail here, before a parse whose exception would cost more than the rest of the scan.
  if (!decoded.includes('"alg"')) return null;
  try {
    const header: unknown = JSON.parse(decoded);
    if (typeof header === "object" && header !== null && typeof (header as { alg?: unknown }).alg === "string") return { kind: "jwt", start, end };
  } catch {
    // Not JSON: some other base64 text that happens to start with `eyJ`.
  }
  return null;
}

// ---- AWS secret access key ----------------------------------------------------------------------------

const AWS_SECRET_LABEL = [
  `${anyCase("aws")}[_ .-]?${anyCase("secret")}[_ .-]?(?:${anyCase("access")}[_ .-]?)?${anyCase("key")}`,
  `${anyCase("secret")}[_ .-]?${anyCase("access")}[_ .-]?${anyCase("key")}`,
].join("|");

/** The label, an optional closing quote, `:` / `=` / `=>` or plain space, an optional opening quote, then the key. */
const AWS_SECRET = String.raw`(?<![A-Za-z0-9])(?:${AWS_SECRET_LABEL})["']?[ \t]*(?:=>|:=|[:=]|[ \t])[ \t]*["']?[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])`;

/** The finding is the key alone, the last 40 characters of the match. */
function confirmAwsSecret(text: string, _start: number, end: number): Finding | null {
  const start = end - 40;
  return mixesLettersAndDigits(text, start, end) ? { kind: "aws_secret_key", start, end } : null;
}

// ---- Bearer tokens ------------------------------------------------------------------------------------

const BEARER = String.raw`(?<![\w-])[Bb]earer[ \t]+[A-Za-z0-9._~+/-]{16,}=*(?![\w.~+/=-])`;

/** The finding is the token, not the word `Bearer`, so a redacted header still reads as one. */
function confirmBearer(text: string, start: number, end: number): Finding | null {
  let at = start + "Bearer".length;
  while (text.charCodeAt(at) === 32 || text.charCodeAt(at) === 9) at++;
  return mixesLettersAndDigits(text, at, end) ? { kind: "bearer_token", start: at, end } : null;
}

/** Earlier detectors win where two match at one place: Anthropic's `sk-ant-` before OpenAI's `sk-`. */
const DETECTORS: readonly Detector[] = [
  { kind: "private_key", source: PEM_BEGIN, confirm: confirmPrivateKey },
  mixedToken("anthropic_api_key", String.raw`(?<![\w-])sk-ant-[a-z]+\d*-[A-Za-z0-9_-]{32,}`, "sk-ant-".length),
  mixedToken("openai_api_key", String.raw`(?<![\w-])sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{32,}|[A-Za-z0-9]{32,})(?![\w-])`, "sk-".length),
  { kind: "google_api_key", source: String.raw`(?<![\w-])AIza[0-9A-Za-z_-]{35}(?![\w-])` },
  mixedToken("github_token", String.raw`(?<!\w)(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{50,})(?!\w)`, 4),
  mixedToken("slack_token", String.raw`(?<![\w-])(?:xox[abposr]|xapp)-[0-9A-Za-z-]{10,}(?![\w-])`, 5),
  { kind: "slack_webhook", source: String.raw`https://hooks\.slack\.com/services/T[A-Z0-9]{6,}/B[A-Z0-9]{6,}/[A-Za-z0-9]{20,}` },
  mixedToken("stripe_key", String.raw`(?<!\w)[rs]k_(?:live|test)_[0-9A-Za-z]{16,}(?!\w)`, "sk_live_".length),
  { kind: "aws_access_key", source: String.raw`(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])` },
  { kind: "aws_secret_key", source: AWS_SECRET, confirm: confirmAwsSecret },
  { kind: "jwt", source: JWT, confirm: confirmJwt },
  { kind: "bearer_token", source: BEARER, confirm: confirmBearer },
];

const scanner = new CombinedScanner(DETECTORS);
