/**
 * The credentials a call sent upstream, and their removal from upstream text: some providers quote the key
 * they were sent in an error message ("Incorrect API key provided: sk-…"), and that message reaches the
 * client and the logs, so every credential of the call is blanked out of it first.
 */

/** Header names that carry a credential, besides any whose name says key, token, secret or auth. */
const CREDENTIAL_HEADER = /key|token|secret|auth|signature|credential/i;
/** Query parameters that carry a credential (Gemini's ?key=). */
const CREDENTIAL_PARAM = /key|token|secret|signature|credential/i;
/** Shorter values are not credentials and would blank out ordinary words. */
const MIN_SECRET_LENGTH = 8;
/** What a removed credential reads as. */
export const REDACTED = "<redacted>";

/** The credential values a call with these headers and this URL sends. */
export function sentCredentials(headers: Readonly<Record<string, string>>, url: string): string[] {
  const found = new Set<string>();
  const add = (value: string): void => {
    const trimmed = value.trim();
    if (trimmed.length >= MIN_SECRET_LENGTH) found.add(trimmed);
    // "Bearer <token>", "Basic <base64>": the token alone is what an upstream would quote.
    const scheme = /^\S+\s+(\S+)$/.exec(trimmed);
    if (scheme?.[1] && scheme[1].length >= MIN_SECRET_LENGTH) found.add(scheme[1]);
  };
  for (const [name, value] of Object.entries(headers)) if (CREDENTIAL_HEADER.test(name)) add(value);
  try {
    for (const [name, value] of new URL(url).searchParams) if (CREDENTIAL_PARAM.test(name)) add(value);
  } catch {
    // A URL that does not parse was never sent.
  }
  // Longest first, so a value containing a shorter one is removed whole.
  return [...found].sort((a, b) => b.length - a.length);
}

/** `text` with every occurrence of each credential replaced by <redacted>. */
export function withoutCredentials(text: string, credentials: readonly string[]): string {
  let out = text;
  for (const secret of credentials) if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  return out;
}
