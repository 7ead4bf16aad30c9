/**
 * Span attribute keys as objects, one per key text: a recorded span keeps its attributes as (key, value)
 * pairs whose keys are these, and the tracing code holds the keys it sets as constants. The OTLP encoder
 * then reaches what it keeps per key (the key's field already encoded, the encodings of the values the key
 * keeps having) through the pair itself, where a key given as text costs a lookup per attribute and span.
 */

/** Keys interned at most: keys beyond (a client's many dimension labels) get an object each, remembered by nobody. */
const MAX_KEYS = 256;
/** Values remembered per key at most: a key whose values keep changing (token counts) stops there. */
const MAX_VALUES_PER_KEY = 64;

/** A short value whose encoded KeyValue a key may remember. */
export type RecurringValue = string | number | boolean;

/** One attribute key. */
export class AttributeKey {
  /**
   * The KeyValue's `key` field (field 1) as protobuf encodes it, tag and one-byte length first, when the
   * key is ASCII text of under 128 characters; undefined otherwise, and the encoder writes the text.
   */
  readonly field: Uint8Array | undefined;
  /** Encoded KeyValue bodies of the values this key had, by value; undefined for a key nobody interned. */
  private readonly recurring: Map<RecurringValue, Uint8Array> | undefined;
  /** The same for lists of one text (finish reasons, routing engines), by that text. */
  private lists: Map<string, Uint8Array> | undefined;

  constructor(
    readonly name: string,
    interned: boolean,
  ) {
    this.field = keyField(name);
    this.recurring = interned ? new Map() : undefined;
  }

  /** Whether this is the one interned object for its text (so identity decides equality). */
  get interned(): boolean {
    return this.recurring !== undefined;
  }

  /** The remembered encoding of the KeyValue (this key, `value`), or (this key, [`value`]) when `list`, if any. */
  encoded(value: RecurringValue, list: boolean): Uint8Array | undefined {
    return list ? this.lists?.get(value as string) : this.recurring?.get(value);
  }

  /** Remembers a copy of `body`, the KeyValue's encoding with `value` (or [`value`]), while the key has room. */
  remember(value: RecurringValue, list: boolean, body: Uint8Array): void {
    if (this.recurring === undefined) return;
    const values = list ? (this.lists ??= new Map()) : this.recurring;
    // A copy in memory of its own: the batch's buffer is reused, and a slice of Buffer's pool would keep the pool alive.
    if (values.size < MAX_VALUES_PER_KEY) values.set(value, new Uint8Array(body));
  }
}

const interned = new Map<string, AttributeKey>();

/** The key object of `name`: the interned one while there is room, else one of its own. */
export function attributeKey(name: string): AttributeKey {
  let key = interned.get(name);
  if (key !== undefined) return key;
  if (interned.size >= MAX_KEYS) return new AttributeKey(name, false);
  key = new AttributeKey(name, true);
  interned.set(name, key);
  return key;
}

/** Tag of a length-delimited field 1. */
const KEY_TAG = (1 << 3) | 2;

/** Field 1 of a KeyValue holding `name`, when it is short ASCII text. */
function keyField(name: string): Uint8Array | undefined {
  if (name.length > 0x7f) return undefined;
  const field = new Uint8Array(2 + name.length);
  field[0] = KEY_TAG;
  field[1] = name.length;
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c > 0x7f) return undefined;
    field[2 + i] = c;
  }
  return field;
}
