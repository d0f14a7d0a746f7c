/**
 * Key paths: the typed model and the text syntax of docs/key-format.md.
 *
 * Parsing and formatting follow the Rust codec (crates/pathdb-keys/src/text.rs) exactly: the
 * same escapes, the same canonical spelling, and the same error rule and UTF-8 byte offset for
 * invalid text. test/keypath.test.ts checks this against clients/vectors/keypath-text.json,
 * which the Rust side generates.
 */

/** The largest integer id, 2^64-1; the smallest is its negation. */
export const INT_MAX = (1n << 64n) - 1n;
/** The smallest integer id, -(2^64-1). */
export const INT_MIN = -INT_MAX;
/** The longest namespace, in bytes. */
export const MAX_NAMESPACE_LEN = 64;

/** A UUID id, held as its canonical lowercase hyphenated text. */
export class Uuid {
  readonly text: string;

  /** Parses `8-4-4-4-12` hex digits, in either case. */
  constructor(text: string) {
    if (!isUuidShaped(text)) {
      throw new TypeError(`not a UUID: ${JSON.stringify(text)}`);
    }
    this.text = text.toLowerCase();
  }

  toString(): string {
    return this.text;
  }
}

/** The id types that have a descending form. */
export type Descendable = number | bigint | string | Uint8Array;

/** Wraps an id so that it sorts in descending order: `new Desc(1500)` is written `!1500`. */
export class Desc<T extends Descendable = Descendable> {
  constructor(readonly value: T) {}
}

/** An id as you give it: integers as `number` (safe integers) or `bigint`. */
export type Id = number | bigint | string | Uint8Array | Uuid | Desc;

/** An id as a path holds it: integers are `bigint`. */
export type PathId = bigint | string | Uint8Array | Uuid | Desc<bigint | string | Uint8Array>;

/** One element of a key path; only the last element may have no id (`null`). */
export interface Element {
  readonly namespace: string;
  readonly id: PathId | null;
}

/**
 * A key path broke a rule of the format. `rule` names it as the Rust codec does (`LeadingZero`,
 * `EmptyId`, ...); for text, `offset` is the UTF-8 byte offset of the problem; for a path built
 * with `add`, `element` is the index of the offending element.
 */
export class InvalidKeyPath extends Error {
  override readonly name = "InvalidKeyPath";
  readonly rule: string;
  readonly detail: string;
  readonly offset: number | undefined;
  readonly element: number | undefined;

  constructor(rule: string, detail: string, where: { offset?: number; element?: number } = {}) {
    const message =
      where.offset !== undefined
        ? `invalid key path at byte ${where.offset}: ${detail}`
        : where.element !== undefined
          ? `invalid key path element ${where.element}: ${detail}`
          : `invalid key path: ${detail}`;
    super(message);
    this.rule = rule;
    this.detail = detail;
    this.offset = where.offset;
    this.element = where.element;
  }
}

type Rule = readonly [rule: string, detail: string];

/** A rule broken at a position (UTF-16 index) of the text being parsed. */
class RuleError {
  constructor(
    readonly at: number,
    readonly rule: Rule,
  ) {}
}

/** A character as Rust's `{:?}` writes it. */
function debugChar(c: string): string {
  const special: Record<string, string> = {
    "\0": "\\0",
    "\t": "\\t",
    "\r": "\\r",
    "\n": "\\n",
    "'": "\\'",
    "\\": "\\\\",
  };
  const s = special[c];
  if (s !== undefined) return `'${s}'`;
  const code = c.codePointAt(0) ?? 0;
  if (code < 0x20 || (code >= 0x7f && code <= 0x9f)) return `'\\u{${code.toString(16)}}'`;
  return `'${c}'`;
}

const namespaceStart = (c: string): Rule => [
  "NamespaceStart",
  `a namespace starts with an ASCII letter or '_', not ${debugChar(c)}`,
];
const namespaceChar = (c: string): Rule => [
  "NamespaceChar",
  `a namespace holds only ASCII letters, digits and '_', not ${debugChar(c)} (use '-' before the id)`,
];
const control = (c: string): Rule => [
  "ControlCharacter",
  `ids cannot hold control characters (${debugChar(c)})`,
];
const EMPTY_ID: Rule = ["EmptyId", "an id cannot be empty (leave out the '-' for an element without id)"];
const EMPTY_BYTES: Rule = ["EmptyBytes", "a bytes id holds at least one byte"];
const OUT_OF_RANGE: Rule = ["IntegerOutOfRange", "an integer id lies in -(2^64-1) ..= 2^64-1"];
const MISSING_ID: Rule = ["MissingId", "only the last element may omit its id"];
const GROUP_WITHOUT_ID: Rule = ["GroupWithoutId", "the first element (the group) must have an id"];
const DESC_UUID: Rule = [
  "DescendingUuid",
  "UUID ids have no descending form (escape the first character for a string: !%...)",
];
const INVALID_UTF8: Rule = ["InvalidUtf8", "key path text is valid Unicode (no lone surrogates)"];

const isLetter = (c: string): boolean => (c >= "a" && c <= "z") || (c >= "A" && c <= "Z");
const isDigit = (c: string): boolean => c >= "0" && c <= "9";
const isNamespaceChar = (c: string): boolean => isLetter(c) || isDigit(c) || c === "_";
const isHex = (c: string): boolean => isDigit(c) || (c >= "a" && c <= "f") || (c >= "A" && c <= "F");
const isForbiddenControl = (c: string): boolean => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f;

/** The code point at `i` as a string (one or two UTF-16 units). */
function charAt(s: string, i: number): string {
  return String.fromCodePoint(s.codePointAt(i) ?? 0xfffd);
}

/** The index of the first lone surrogate, or -1. */
function loneSurrogate(s: string): number {
  for (let i = 0; i < s.length; i++) {
    const u = s.charCodeAt(i);
    if (u >= 0xd800 && u <= 0xdbff) {
      const next = s.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        i++;
        continue;
      }
      return i;
    }
    if (u >= 0xdc00 && u <= 0xdfff) return i;
  }
  return -1;
}

function checkNamespace(name: string): [number, Rule] | null {
  if (name.length === 0) return [0, ["EmptyNamespace", "a namespace cannot be empty"]];
  const first = name[0] ?? "";
  if (!(isLetter(first) || first === "_")) return [0, namespaceStart(charAt(name, 0))];
  for (let i = 0; i < name.length; i++) {
    if (!isNamespaceChar(name[i] ?? "")) return [i, namespaceChar(charAt(name, i))];
  }
  if (name.length > MAX_NAMESPACE_LEN) {
    return [
      MAX_NAMESPACE_LEN,
      ["NamespaceTooLong", `a namespace is at most 64 bytes, this one is ${name.length}`],
    ];
  }
  return null;
}

function isIntShaped(s: string): boolean {
  const digits = s.startsWith("-") ? s.slice(1) : s;
  if (digits.length === 0) return false;
  for (const c of digits) if (!isDigit(c)) return false;
  return true;
}

function isUuidShaped(s: string): boolean {
  if (s.length !== 36) return false;
  for (let i = 0; i < 36; i++) {
    const c = s[i] ?? "";
    const ok = i === 8 || i === 13 || i === 18 || i === 23 ? c === "-" : isHex(c);
    if (!ok) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Base64url, unpadded and strict, as the Rust codec's URL_SAFE_NO_PAD engine reads it.

const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

function encodeBase64url(bytes: Uint8Array): string {
  let out = "";
  let i = 0;
  for (; i + 2 < bytes.length; i += 3) {
    const n = ((bytes[i] ?? 0) << 16) | ((bytes[i + 1] ?? 0) << 8) | (bytes[i + 2] ?? 0);
    out += B64[(n >> 18) & 63]! + B64[(n >> 12) & 63]! + B64[(n >> 6) & 63]! + B64[n & 63]!;
  }
  const rest = bytes.length - i;
  if (rest === 1) {
    const n = (bytes[i] ?? 0) << 16;
    out += B64[(n >> 18) & 63]! + B64[(n >> 12) & 63]!;
  } else if (rest === 2) {
    const n = ((bytes[i] ?? 0) << 16) | ((bytes[i + 1] ?? 0) << 8);
    out += B64[(n >> 18) & 63]! + B64[(n >> 12) & 63]! + B64[(n >> 6) & 63]!;
  }
  return out;
}

function base64Error(at: number, detail: string): RuleError {
  return new RuleError(at, ["Base64", `bytes ids are '~' then unpadded base64url: ${detail}`]);
}

function decodeBase64url(b64: string, at: number): Uint8Array {
  if (b64.length === 0) throw new RuleError(at, EMPTY_BYTES);
  for (let i = 0; i < b64.length; i++) {
    const c = b64[i] ?? "";
    if (!B64.includes(c) && c !== "=") {
      throw base64Error(at + i, `Invalid symbol ${c.charCodeAt(0)}, offset ${i}.`);
    }
  }
  if (b64.includes("=")) throw base64Error(at, "Invalid padding");
  if (b64.length % 4 === 1) throw base64Error(at, "Invalid input length");
  const out: number[] = [];
  let bits = 0;
  let nBits = 0;
  for (const c of b64) {
    bits = ((bits << 6) | B64.indexOf(c)) & 0xffffff;
    nBits += 6;
    if (nBits >= 8) {
      nBits -= 8;
      out.push((bits >> nBits) & 0xff);
    }
  }
  if ((bits & ((1 << nBits) - 1)) !== 0) {
    const last = b64.length - 1;
    throw base64Error(at + last, `Invalid last symbol ${b64.charCodeAt(last)}, offset ${last}.`);
  }
  return Uint8Array.from(out);
}

// ---------------------------------------------------------------------------------------------
// Parsing

function parseInt65(s: string, at: number): bigint {
  const negative = s.startsWith("-");
  const digits = negative ? s.slice(1) : s;
  const digitsAt = at + (negative ? 1 : 0);
  if (digits.length > 1 && digits[0] === "0") {
    throw new RuleError(digitsAt, [
      "LeadingZero",
      `an integer has no leading zeros (write a string id as %${s})`,
    ]);
  }
  if (negative && digits === "0") throw new RuleError(at, ["NegativeZero", "zero has no sign: write 0"]);
  const magnitude = BigInt(digits);
  if (magnitude > INT_MAX) throw new RuleError(digitsAt, OUT_OF_RANGE);
  return negative ? -magnitude : magnitude;
}

function unescape(raw: string, at: number): string {
  let out = "";
  let i = 0;
  while (i < raw.length) {
    let c = charAt(raw, i);
    if (c === "%") {
      if (i + 1 >= raw.length) {
        throw new RuleError(at + i, ["DanglingEscape", "'%' must be followed by the character it escapes"]);
      }
      i += 1;
      c = charAt(raw, i);
    }
    if (isForbiddenControl(c)) throw new RuleError(at + i, control(c));
    out += c;
    i += c.length;
  }
  return out;
}

function parseId(raw: string, at: number): PathId {
  if (raw.length === 0) throw new RuleError(at, EMPTY_ID);
  if (raw[0] === "~") return decodeBase64url(raw.slice(1), at + 1);
  if (raw[0] === "!") {
    const rest = raw.slice(1);
    at += 1;
    if (rest.length === 0) throw new RuleError(at, EMPTY_ID);
    if (rest[0] === "~") return new Desc(decodeBase64url(rest.slice(1), at + 1));
    if (rest[0] === "!") {
      throw new RuleError(at, [
        "DoubleDescending",
        "a descending string starting with '!' escapes it: !%!...",
      ]);
    }
    if (isIntShaped(rest)) return new Desc(parseInt65(rest, at));
    if (isUuidShaped(rest)) throw new RuleError(at, DESC_UUID);
    return new Desc(unescape(rest, at));
  }
  if (isIntShaped(raw)) return parseInt65(raw, at);
  if (isUuidShaped(raw)) return new Uuid(raw);
  return unescape(raw, at);
}

function idEnd(text: string, start: number): number {
  let i = start;
  while (i < text.length) {
    if (text[i] === "/") return i;
    i += text[i] === "%" ? 2 : 1;
  }
  return text.length;
}

function parseElements(text: string): Element[] {
  if (text.length === 0) throw new RuleError(0, ["EmptyPath", "a key path needs at least one element"]);
  if (text[0] !== "/") throw new RuleError(0, ["MissingLeadingSlash", "a key path starts with '/'"]);
  const elements: Element[] = [];
  let pos = 1;
  const n = text.length;
  for (;;) {
    const nsStart = pos;
    while (pos < n && isNamespaceChar(text[pos] ?? "")) pos++;
    const namespace = text.slice(nsStart, pos);
    if (pos < n && text[pos] !== "/" && text[pos] !== "-") {
      const c = charAt(text, pos);
      throw new RuleError(pos, namespace ? namespaceChar(c) : namespaceStart(c));
    }
    const problem = checkNamespace(namespace);
    if (problem) throw new RuleError(nsStart + problem[0], problem[1]);
    let id: PathId | null = null;
    if (pos < n && text[pos] === "-") {
      const idStart = pos + 1;
      pos = idEnd(text, idStart);
      id = parseId(text.slice(idStart, pos), idStart);
    }
    elements.push({ namespace, id });
    if (pos >= n) break;
    if (id === null) throw new RuleError(pos, MISSING_ID);
    pos += 1;
  }
  if (elements[0]?.id === null) throw new RuleError(1, GROUP_WITHOUT_ID);
  return elements;
}

// ---------------------------------------------------------------------------------------------
// Formatting

function escape(s: string): string {
  const first = s[0];
  const escapeFirst = first === "~" || first === "!" || isIntShaped(s) || isUuidShaped(s);
  let out = "";
  let i = 0;
  for (const c of s) {
    if (c === "/" || c === "%" || (i === 0 && escapeFirst)) out += "%";
    out += c;
    i++;
  }
  return out;
}

/** An id's canonical text, without the `-` before it: `7`, `%7` (the string "7"), `!1500`. */
export function formatId(id: PathId): string {
  if (id instanceof Desc) {
    const inner = id.value;
    if (typeof inner === "string") return "!" + escape(inner);
    if (inner instanceof Uint8Array) return "!~" + encodeBase64url(inner);
    return `!${inner}`;
  }
  if (id instanceof Uuid) return id.text;
  if (id instanceof Uint8Array) return "~" + encodeBase64url(id);
  if (typeof id === "string") return escape(id);
  return id.toString();
}

function formatElement(e: Element): string {
  return e.id === null ? `/${e.namespace}` : `/${e.namespace}-${formatId(e.id)}`;
}

/** Validates an id as given: the rule it breaks, or the id as a path holds it. */
function checkId(id: unknown): Rule | PathId {
  if (id instanceof Desc) {
    const inner: unknown = id.value;
    if (inner instanceof Uuid) return DESC_UUID;
    const checked = checkId(inner);
    if (Array.isArray(checked)) return checked as Rule;
    return new Desc(checked as bigint | string | Uint8Array);
  }
  if (typeof id === "number") {
    if (!Number.isSafeInteger(id)) {
      return ["UnsupportedType", `a number id is a safe integer (use a bigint beyond 2^53), not ${id}`];
    }
    return BigInt(id);
  }
  if (typeof id === "bigint") return id < INT_MIN || id > INT_MAX ? OUT_OF_RANGE : id;
  if (typeof id === "string") {
    if (id.length === 0) return EMPTY_ID;
    for (const c of id) if (isForbiddenControl(c)) return control(c);
    if (loneSurrogate(id) >= 0) return ["InvalidUtf8", "a string id is valid Unicode (no lone surrogates)"];
    return id;
  }
  if (id instanceof Uint8Array) return id.length === 0 ? EMPTY_BYTES : Uint8Array.from(id);
  if (id instanceof Uuid) return id;
  return ["UnsupportedType", "an id is a number, bigint, string, Uint8Array, Uuid or Desc"];
}

/** Byte length of `s` in UTF-8. */
function utf8Length(s: string): number {
  return new TextEncoder().encode(s).length;
}

// The binary form (docs/key-format.md): its byte order is the key order.

/** Bytes and UUID segments: `00`, `01`, `02` become `02 00`, `02 01`, `02 02`. */
function escapeBytes(bytes: Uint8Array): number[] {
  const out: number[] = [];
  for (const b of bytes) {
    if (b <= 2) out.push(2);
    out.push(b);
  }
  return out;
}

/** Sort byte, then the minimal big-endian magnitude (inverted for zero and negatives). */
function intSegment(n: bigint): number[] {
  let magnitude = n < 0n ? -n : n;
  const raw: number[] = [];
  do {
    raw.unshift(Number(magnitude & 0xffn));
    magnitude >>= 8n;
  } while (magnitude > 0n);
  if (n > 0n) return [7 + raw.length, ...raw];
  return [8 - raw.length, ...raw.map((b) => 255 - b)];
}

/** An id's segment and its type code. */
function idSegment(id: PathId): [number[], number] {
  if (id instanceof Desc) {
    const inner = id.value as bigint | string | Uint8Array;
    if (typeof inner === "string") return [[0xfe, ...[...new TextEncoder().encode(inner)].map((b) => 255 - b), 0xff], 5];
    if (inner instanceof Uint8Array) {
      const body: number[] = [0xff];
      for (const b of inner) body.push(...(b === 0 ? [0xff, 0x00] : [255 - b]));
      return [[...body, 0xff, 0xfe], 6];
    }
    const [sort, ...payload] = intSegment(inner);
    return [[0x1f - sort!, ...payload.map((b) => 255 - b)], 4];
  }
  if (id instanceof Uuid) {
    const hex = id.text.replace(/-/g, "");
    const bytes = Uint8Array.from({ length: 16 }, (_, i) => parseInt(hex.slice(2 * i, 2 * i + 2), 16));
    return [escapeBytes(bytes), 3];
  }
  if (id instanceof Uint8Array) return [escapeBytes(id), 1];
  if (typeof id === "string") return [[...new TextEncoder().encode(id)], 0];
  return [intSegment(id), 2];
}

function varint(n: number): number[] {
  const out: number[] = [];
  for (;;) {
    const low = n & 0x7f;
    n = Math.floor(n / 128);
    if (n === 0) {
      out.push(low);
      return out;
    }
    out.push(low | 0x80);
  }
}

function encodeElements(elements: readonly Element[]): Uint8Array {
  const segments: [number[], number][] = [];
  for (const e of elements) {
    segments.push([[...e.namespace].map((c) => c.charCodeAt(0)), 0]);
    if (e.id !== null) segments.push(idSegment(e.id));
  }
  const out: number[] = [];
  segments.forEach(([bytes], i) => {
    if (i > 0) out.push(1);
    out.push(...bytes);
  });
  out.push(0);
  for (const [bytes, type] of segments) out.push(...varint(bytes.length * 8 + type));
  return Uint8Array.from(out);
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    if (a[i] !== b[i]) return a[i]! < b[i]! ? -1 : 1;
  }
  return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
}

/** Marks elements that a parser or `add` has already validated. */
const CHECKED: unique symbol = Symbol("checked");

/**
 * A key path such as `/user-7/post-2`: immutable; `toString()` is its canonical text, and two
 * paths are `equals` exactly when their canonical texts are equal (use the text as a Map key).
 *
 * Compare paths with `equals`, never with `===` or `==`: those compare objects, so two
 * `KeyPath`s of the same path are not `===`, and a `KeyPath` is never `===` its text
 * (`item.path === "/user-7/post-2"` is always false). `a.equals(b)` takes a path or its text.
 *
 * ```ts
 * KeyPath.parse("/user-7/post-2").equals(new KeyPath().add("user", 7).add("post", 2n)); // true
 * KeyPath.parse("/user-7/post-2").equals("/user-7/post-2"); // true
 * new KeyPath().add("tag", "7").toString(); // "/tag-%7"
 * ```
 */
export class KeyPath {
  readonly #elements: readonly Element[];
  readonly #text: string;
  #encoded: Uint8Array | undefined;

  /** An empty path, to `add` elements to. */
  constructor();
  constructor(internal?: typeof CHECKED, elements?: readonly Element[]) {
    this.#elements = internal === CHECKED && elements ? elements : [];
    this.#text = this.#elements.map(formatElement).join("");
  }

  private static of(elements: readonly Element[]): KeyPath {
    return new (KeyPath as unknown as new (i: typeof CHECKED, e: readonly Element[]) => KeyPath)(
      CHECKED,
      elements,
    );
  }

  /** Parses the text form; throws `InvalidKeyPath` naming the rule and the byte offset. */
  static parse(text: string): KeyPath {
    try {
      const bad = loneSurrogate(text);
      if (bad >= 0) throw new RuleError(bad, INVALID_UTF8);
      return KeyPath.of(parseElements(text));
    } catch (e) {
      if (e instanceof RuleError) {
        throw new InvalidKeyPath(e.rule[0], e.rule[1], { offset: utf8Length(text.slice(0, e.at)) });
      }
      throw e;
    }
  }

  /**
   * A new path with one more element. `id` is a safe-integer `number`, a `bigint`
   * (-(2^64-1) to 2^64-1), a `string`, a `Uint8Array`, a `Uuid` or a `Desc`; leave it out for a
   * namespace-only last element.
   */
  add(namespace: string, id?: Id | null): KeyPath {
    const elements = this.elements;
    const index = elements.length;
    const problem = checkNamespace(namespace);
    if (problem) throw new InvalidKeyPath(problem[1][0], problem[1][1], { element: index });
    if (index > 0 && elements[index - 1]?.id === null) {
      throw new InvalidKeyPath(MISSING_ID[0], MISSING_ID[1], { element: index - 1 });
    }
    let checked: PathId | null = null;
    if (id !== undefined && id !== null) {
      const result = checkId(id);
      if (Array.isArray(result)) {
        const [rule, detail] = result as Rule;
        throw new InvalidKeyPath(rule, detail, { element: index });
      }
      checked = result as PathId;
    } else if (index === 0) {
      throw new InvalidKeyPath(GROUP_WITHOUT_ID[0], GROUP_WITHOUT_ID[1], { element: 0 });
    }
    return KeyPath.of([...elements, { namespace, id: checked }]);
  }

  /** The elements, group first. */
  get elements(): readonly Element[] {
    return this.#elements;
  }

  /** The number of elements. */
  get length(): number {
    return this.#elements.length;
  }

  /** The path without its last element, or null for a group. */
  get parent(): KeyPath | null {
    const elements = this.#elements;
    return elements.length <= 1 ? null : KeyPath.of(elements.slice(0, -1));
  }

  /**
   * The binary key (docs/key-format.md), as `pathdb key encode` prints it in hex. Its byte order
   * is PathDB's key order: integers numerically, a parent right before its subtree, descending
   * ids reversed.
   */
  encode(): Uint8Array {
    return this.#key().slice();
  }

  #key(): Uint8Array {
    this.#encoded ??= encodeElements(this.#elements);
    return this.#encoded;
  }

  /**
   * Negative, zero or positive as this path sorts before, with or after `other` in PathDB's key
   * order (the order listings return): `paths.sort(KeyPath.compare)`.
   */
  compare(other: PathLike): number {
    return compareBytes(this.#key(), toPath(other).#key());
  }

  /** `a.compare(b)`, for `Array.prototype.sort`. */
  static compare(a: KeyPath, b: KeyPath): number {
    return a.compare(b);
  }

  /**
   * Whether `other` is the same path (the same typed elements): a `KeyPath`, or a text, which is
   * parsed (`"/a-%b"` is the path `/a-b`; `"/tag-7"`, the integer 7, is not `/tag-%7`, the string
   * "7"). A text that is not a key path, `null` and `undefined` are no path: false. Use this, not
   * `===` (which compares objects).
   */
  equals(other: KeyPath | string | null | undefined): boolean {
    if (other instanceof KeyPath) return this.#text === other.#text;
    if (typeof other !== "string") return false;
    if (other === this.#text) return true;
    try {
      return KeyPath.parse(other).#text === this.#text;
    } catch (e) {
      if (e instanceof InvalidKeyPath) return false;
      throw e;
    }
  }

  /** The canonical text. */
  toString(): string {
    return this.#text;
  }

  toJSON(): string {
    return this.toString();
  }
}

/** A key path, or its text. */
export type PathLike = KeyPath | string;

/** A `KeyPath` from a path or its text. */
export function toPath(path: PathLike): KeyPath {
  if (typeof path === "string") return KeyPath.parse(path);
  if (path.length === 0) {
    throw new InvalidKeyPath("EmptyPath", "a key path needs at least one element", { offset: 0 });
  }
  return path;
}

/**
 * Whether `path` lies in `prefix`'s subtree: it is `prefix` or below it, element by element (typed
 * ids, not text: `/a-1` is not `/a-%1`), and a last element of `prefix` without id stands for its
 * whole namespace (`/user-7/post` covers `/user-7/post-1` and its subtree). `/u-1/p-1` covers
 * `/u-1/p-1/c-2` but not `/u-1/p-10`. The Rust `KeyPath::covers`; clients/vectors/keypath-covers.json
 * holds its cases.
 */
export function covers(prefix: KeyPath, path: KeyPath): boolean {
  const n = prefix.length;
  if (path.length < n) return false;
  // An element's canonical text is equal exactly for the same typed element.
  for (let i = 0; i < n - 1; i++) {
    if (formatElement(prefix.elements[i]!) !== formatElement(path.elements[i]!)) return false;
  }
  const mine = prefix.elements[n - 1]!;
  const theirs = path.elements[n - 1]!;
  if (mine.id === null) return mine.namespace === theirs.namespace;
  return formatElement(mine) === formatElement(theirs);
}
