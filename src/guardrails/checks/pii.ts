/**
 * The `pii` check: e-mail addresses, phone numbers, payment card numbers, US social security numbers, IBANs
 * and IP addresses. A pattern finds a candidate and a validation in code keeps only real ones, so that an
 * order number or a timestamp is not taken for personal data: cards pass the Luhn checksum and a network's
 * prefix and length, IBANs the mod-97 checksum and their country's length and layout, SSNs the rules on
 * numbers never issued, phones need a `+` country code or the separators of a US number, and IPv6
 * addresses need a digit (so `Foo::Bar` is no address).
 */
import { isIPv6 } from "node:net";
import { countrySpecs, isValidIBAN } from "ibantools";
import { invalidCheck, rejectUnknownSettings, type ContentCheck, type Finding, type PiiCheckConfig } from "../check-types.js";
import { CombinedScanner, type Detector } from "../combined-scan.js";

/** The entities the `pii` check knows, in the order their patterns are tried. */
export const PII_ENTITIES = ["credit_card", "us_ssn", "phone", "ip_address", "email", "iban"] as const;

/** One entity of the `pii` check. */
export type PiiEntity = (typeof PII_ENTITIES)[number];

/** Compiles a `pii` check; `entities` left out means all of them. */
export function compilePiiCheck(config: PiiCheckConfig, field = "check"): ContentCheck {
  rejectUnknownSettings(config, ["entities"], field);
  const entities = config.entities === undefined ? PII_ENTITIES : validEntities(config.entities, `${field}.entities`);
  const scanner = new CombinedScanner(PII_ENTITIES.filter((e) => entities.includes(e)).flatMap((e) => DETECTORS[e]));
  return { type: "pii", scan: (text) => scanner.scan(text) };
}

function validEntities(value: unknown, field: string): readonly PiiEntity[] {
  if (!Array.isArray(value)) throw invalidCheck(field, "must be a list of PII entities");
  if (value.length === 0) throw invalidCheck(field, `must name at least one of ${PII_ENTITIES.join(", ")}`);
  value.forEach((entity: unknown, i) => {
    if (!(PII_ENTITIES as readonly unknown[]).includes(entity)) {
      throw invalidCheck(`${field}[${i}]`, `unknown PII entity ${JSON.stringify(entity)}; known: ${PII_ENTITIES.join(", ")}`);
    }
  });
  return value as readonly PiiEntity[];
}

const isDigit = (c: number): boolean => c >= 48 && c <= 57;
const isAlnum = (c: number): boolean => isDigit(c) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122);

function countDigits(text: string, start: number, end: number): number {
  let n = 0;
  for (let i = start; i < end; i++) if (isDigit(text.charCodeAt(i))) n++;
  return n;
}

// ---- payment cards ------------------------------------------------------------------------------------

/**
 * 13 to 19 digits, optionally in groups split by spaces or dashes. A start right after a digit (or a digit and
 * a dash) would be inside a longer number; a space before is allowed, since a quantity or a label can precede a
 * card number.
 */
const CARD = String.raw`(?<!\d|\d-)\d(?:[ -]?\d){12,18}(?!\d)`;

/** Whether a card number of `length` digits whose first six are `p6` fits a card network's prefix and lengths. */
function fitsCardNetwork(p6: number, length: number): boolean {
  const p1 = Math.floor(p6 / 100_000);
  const p2 = Math.floor(p6 / 10_000);
  const p3 = Math.floor(p6 / 1_000);
  const p4 = Math.floor(p6 / 100);
  if (p1 === 4) return length === 13 || length === 16 || length === 19; // Visa
  if ((p2 >= 51 && p2 <= 55) || (p4 >= 2221 && p4 <= 2720)) return length === 16; // Mastercard
  if (p2 === 34 || p2 === 37) return length === 15; // American Express
  if (p4 >= 2200 && p4 <= 2204) return length >= 16; // Mir
  if ((p3 >= 300 && p3 <= 305) || p4 === 3095 || p2 === 36 || p2 === 38 || p2 === 39) return length >= 14; // Diners Club
  if (p4 >= 3528 && p4 <= 3589) return length >= 16; // JCB
  if (p4 === 6011 || (p3 >= 644 && p3 <= 649) || p2 === 65 || (p6 >= 622126 && p6 <= 622925)) return length >= 16; // Discover
  if (p2 === 62) return length >= 16; // UnionPay
  if (p2 === 50 || (p2 >= 56 && p2 <= 69)) return true; // Maestro: 12 to 19 digits
  return false;
}

/** The Luhn checksum over the digits of `[start, end)`, skipping separators. */
function passesLuhn(text: string, start: number, end: number): boolean {
  let sum = 0;
  let double = false;
  for (let i = end - 1; i >= start; i--) {
    const c = text.charCodeAt(i);
    if (!isDigit(c)) continue;
    let d = c - 48;
    if (double) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
    double = !double;
  }
  return sum % 10 === 0;
}

/** Whether digit groups of these lengths are a way cards are written: fours (the last maybe shorter), or 4-6-4/4-6-5. */
function cardGrouping(groups: readonly number[]): boolean {
  if (groups.length === 1) return true;
  if (groups.length === 3 && groups[0] === 4 && groups[1] === 6 && (groups[2] === 4 || groups[2] === 5)) return true;
  const last = groups[groups.length - 1] ?? 0;
  return groups.every((g, i) => i === groups.length - 1 || g === 4) && last >= 1 && last <= 4;
}

/** A card number at `[start, end)`, or at its longest prefix ending at a group that is one (a date may follow a card). */
function confirmCard(text: string, start: number, end: number): Finding | null {
  const groups: number[] = [];
  const groupEnds: number[] = [];
  let separator = -1;
  let run = 0;
  let p6 = 0;
  let digits = 0;
  for (let i = start; i < end; i++) {
    const c = text.charCodeAt(i);
    if (isDigit(c)) {
      run++;
      if (digits++ < 6) p6 = p6 * 10 + (c - 48);
      continue;
    }
    if (separator !== -1 && c !== separator) return null;
    separator = c;
    groups.push(run);
    groupEnds.push(i);
    run = 0;
  }
  groups.push(run);
  groupEnds.push(end);
  let total = digits;
  for (let n = groups.length; n >= 1; n--) {
    const cut = groupEnds[n - 1] ?? end;
    if (total >= 13 && cardGrouping(groups.slice(0, n)) && fitsCardNetwork(p6, total) && passesLuhn(text, start, cut)) {
      return { kind: "credit_card", start, end: cut };
    }
    total -= groups[n - 1] ?? 0;
    if (total < 13) break;
  }
  return null;
}

// ---- US social security numbers -----------------------------------------------------------------------

const SSN = String.raw`(?<![\d-])\d{3}(?:-\d{2}-| \d{2} )\d{4}(?![\d-])`;

/** Never issued: area 000, 666 or 900-999, group 00, serial 0000. */
function confirmSsn(text: string, start: number, end: number): Finding | null {
  const area = Number(text.slice(start, start + 3));
  const group = Number(text.slice(start + 4, start + 6));
  const serial = Number(text.slice(start + 7, start + 11));
  if (area === 0 || area === 666 || area >= 900 || group === 0 || serial === 0) return null;
  return { kind: "us_ssn", start, end };
}

// ---- phone numbers ------------------------------------------------------------------------------------

/** A North American number written with separators: area code and exchange start with 2-9. */
const US_PHONE = String.raw`(?<![\w+.])(?:\+?1[ .-]?)?(?:\([2-9]\d{2}\)[ .-]?|[2-9]\d{2}[ .-])[2-9]\d{2}[ .-]\d{4}(?![\w-]|[ .-]\d)`;

/**
 * An international number: `+`, a country code, then groups of digits (or a parenthesised trunk prefix); or
 * `+` and 8 to 15 digits written together. Each group takes a whole run of digits, so the pattern never tries
 * the ways of splitting one run.
 */
const INTERNATIONAL_PHONE = String.raw`(?<![\w+])\+[1-9]\d{0,2}(?!\d)(?:[ .-]?(?:\(\d{1,4}\)|\d{1,8}(?!\d))){1,6}|(?<![\w+])\+[1-9]\d{7,14}(?!\d)`;

/** E.164 allows at most 15 digits; fewer than 8 is a short code or not a number at all. */
function confirmInternationalPhone(text: string, start: number, end: number): Finding | null {
  const digits = countDigits(text, start, end);
  return digits >= 8 && digits <= 15 ? { kind: "phone", start, end } : null;
}

// ---- IP addresses -------------------------------------------------------------------------------------

const OCTET = String.raw`(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)`;
const IPV4 = String.raw`(?<!\d|\d\.)(?:${OCTET}\.){3}${OCTET}(?!\d|\.\d)`;
/**
 * An IPv6 candidate is matched from its first colon (`fe80` of `fe80::1` is walked back to in code): a
 * pattern that may start at any hex digit would be tried at most letters of a text.
 */
const IPV6 = String.raw`:(?<!::)[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){1,7}(?:\.\d{1,3}){0,3}(?![\w:])`;

const isHex = (c: number): boolean => isDigit(c) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102);
const isWordOrDot = (c: number): boolean => isAlnum(c) || c === 95 || c === 46;

/**
 * Whether an address may start at `start`: not inside a word or a dotted number, and not after a colon that
 * ends another hex group (`ip:2001:db8::1` starts after the label `ip:`, but `1:2001::` is not cut at `2001`).
 */
function startsAddress(text: string, start: number): boolean {
  if (start === 0) return true;
  const before = text.charCodeAt(start - 1);
  if (before !== 58) return !isWordOrDot(before);
  return start < 2 || !(isHex(text.charCodeAt(start - 2)) || text.charCodeAt(start - 2) === 58);
}

/** Without `::` an address spells out 8 groups (6 before an embedded IPv4): `12:30:45` is refused before parsing. */
function enoughGroups(text: string, start: number, end: number): boolean {
  let colons = 0;
  for (let i = start; i < end; i++) {
    if (text.charCodeAt(i) !== 58) continue;
    if (text.charCodeAt(i + 1) === 58) return true;
    colons++;
  }
  return colons >= 6;
}

/** Walks back over the first group, then lets Node's parser decide; a trailing `:` of the sentence is left out. */
function confirmIpv6(text: string, colon: number, end: number): Finding | null {
  let start = colon;
  while (start > colon - 4 && start > 0 && isHex(text.charCodeAt(start - 1))) start--;
  if (!startsAddress(text, start)) return null;
  if (countDigits(text, start, end) === 0 || !enoughGroups(text, start, end)) return null;
  if (isIPv6(text.slice(start, end))) return { kind: "ip_address", start, end };
  const trimmed = end - 1;
  if (text.charCodeAt(trimmed) === 58 && text.charCodeAt(trimmed - 1) !== 58 && isIPv6(text.slice(start, trimmed))) {
    return { kind: "ip_address", start, end: trimmed };
  }
  return null;
}

// ---- e-mail -------------------------------------------------------------------------------------------

/** Matched from the `@`, the local part walked back to in code, for the same reason as IPv6 above. */
const EMAIL = String.raw`@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}(?![\w-])`;

const isLocalPartChar = (c: number): boolean => isAlnum(c) || c === 46 || c === 95 || c === 37 || c === 43 || c === 45;

/** The local part: 1 to 64 of the characters addresses use in practice, and not the tail of a longer run. */
function confirmEmail(text: string, at: number, end: number): Finding | null {
  let start = at;
  while (start > at - 64 && start > 0 && isLocalPartChar(text.charCodeAt(start - 1))) start--;
  if (start === at || (start > 0 && isLocalPartChar(text.charCodeAt(start - 1)))) return null;
  return { kind: "email", start, end };
}

// ---- IBAN ---------------------------------------------------------------------------------------------

/** A country code, two check digits, then capital letters and digits, written together or in groups of four. */
const IBAN = String.raw`(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}`;

/**
 * Takes exactly as many characters as the country's IBANs have (the pattern may have run on into the next
 * word), then lets ibantools check the layout and the mod-97 checksum.
 */
function confirmIban(text: string, start: number, end: number): Finding | null {
  const length = countrySpecs[text.slice(start, start + 2)]?.chars;
  if (length === undefined) return null;
  let compact = "";
  let at = start;
  while (compact.length < length && at < end) {
    const c = text.charCodeAt(at);
    if (c === 32) {
      // The printed form puts a space after every fourth character and nowhere else.
      if (compact.length % 4 !== 0) return null;
    } else {
      compact += text[at];
    }
    at++;
  }
  if (compact.length < length || (at < text.length && isAlnum(text.charCodeAt(at)))) return null;
  return isValidIBAN(compact) ? { kind: "iban", start, end: at } : null;
}

const DETECTORS: Record<PiiEntity, readonly Detector[]> = {
  credit_card: [{ kind: "credit_card", source: CARD, confirm: confirmCard }],
  us_ssn: [{ kind: "us_ssn", source: SSN, confirm: confirmSsn }],
  phone: [
    { kind: "phone", source: US_PHONE },
    { kind: "phone", source: INTERNATIONAL_PHONE, confirm: confirmInternationalPhone },
  ],
  ip_address: [
    { kind: "ip_address", source: IPV4 },
    { kind: "ip_address", source: IPV6, confirm: confirmIpv6 },
  ],
  email: [{ kind: "email", source: EMAIL, confirm: confirmEmail }],
  iban: [{ kind: "iban", source: IBAN, confirm: confirmIban }],
};
