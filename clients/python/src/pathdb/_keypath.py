"""Key paths: the typed model and the text syntax of docs/key-format.md.

Parsing and formatting follow the Rust codec (crates/pathdb-keys/src/text.rs) exactly: the same
escapes, the same canonical spelling, and the same error rule and byte offset for invalid text.
tests/test_keypath.py checks this against clients/vectors/keypath-text.json, which the Rust side
generates.
"""

from __future__ import annotations

import uuid
from base64 import urlsafe_b64encode
from dataclasses import dataclass
from typing import Generic, Iterator, List, NamedTuple, Optional, Tuple, TypeVar, Union

MAX_NAMESPACE_LEN = 64
INT_MAX = 2**64 - 1
INT_MIN = -INT_MAX

_T = TypeVar("_T", bound=Union[int, str, bytes], covariant=True)


@dataclass(frozen=True)
class Desc(Generic[_T]):
    """Wraps an `int`, `str` or `bytes` id so that it sorts in descending order: `Desc(1500)`
    is written `!1500`. UUIDs have no descending form."""

    value: _T

    def __repr__(self) -> str:
        return f"Desc({self.value!r})"


Id = Union[int, str, bytes, uuid.UUID, "Desc[Union[int, str, bytes]]"]
"""An element's id. Its Python type is its key type: the type is part of the key and its order."""


class Element(NamedTuple):
    """One element of a key path: a namespace and an id (only the last element may omit it)."""

    namespace: str
    id: Optional[Id]


class InvalidKeyPath(ValueError):
    """A key path broke a rule of the format.

    `rule` names the rule as the Rust codec does (`LeadingZero`, `EmptyId`, ...). For text,
    `offset` is the byte offset (UTF-8) of the problem, as the Rust parser reports it; for a
    path built with `add`, `element` is the index of the offending element.
    """

    def __init__(
        self,
        rule: str,
        detail: str,
        *,
        offset: Optional[int] = None,
        element: Optional[int] = None,
    ) -> None:
        self.rule = rule
        self.detail = detail
        self.offset = offset
        self.element = element
        if offset is not None:
            message = f"invalid key path at byte {offset}: {detail}"
        elif element is not None:
            message = f"invalid key path element {element}: {detail}"
        else:
            message = f"invalid key path: {detail}"
        super().__init__(message)


class _RuleError(Exception):
    """A rule broken at a position (code points) of the text being parsed."""

    def __init__(self, at: int, rule: str, detail: str) -> None:
        super().__init__(detail)
        self.at = at
        self.rule = rule
        self.detail = detail


def _debug_char(c: str) -> str:
    """A character as Rust's `{:?}` writes it."""
    special = {"\0": "\\0", "\t": "\\t", "\r": "\\r", "\n": "\\n", "'": "\\'", "\\": "\\\\"}
    if c in special:
        return f"'{special[c]}'"
    code = ord(c)
    if code < 0x20 or 0x7F <= code <= 0x9F:
        return "'\\u{%x}'" % code
    return f"'{c}'"


def _namespace_start(c: str) -> Tuple[str, str]:
    return "NamespaceStart", f"a namespace starts with an ASCII letter or '_', not {_debug_char(c)}"


def _namespace_char(c: str) -> Tuple[str, str]:
    return (
        "NamespaceChar",
        "a namespace holds only ASCII letters, digits and '_', not "
        f"{_debug_char(c)} (use '-' before the id)",
    )


def _control(c: str) -> Tuple[str, str]:
    return "ControlCharacter", f"ids cannot hold control characters ({_debug_char(c)})"


_EMPTY_ID = ("EmptyId", "an id cannot be empty (leave out the '-' for an element without id)")
_EMPTY_BYTES = ("EmptyBytes", "a bytes id holds at least one byte")
_OUT_OF_RANGE = ("IntegerOutOfRange", "an integer id lies in -(2^64-1) ..= 2^64-1")
_MISSING_ID = ("MissingId", "only the last element may omit its id")
_GROUP_WITHOUT_ID = ("GroupWithoutId", "the first element (the group) must have an id")
_DESC_UUID = (
    "DescendingUuid",
    "UUID ids have no descending form (escape the first character for a string: !%...)",
)

_ASCII_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_DIGITS = frozenset("0123456789")
_NS_CHARS = _ASCII_LETTERS | _DIGITS | {"_"}
_HEX = frozenset("0123456789abcdefABCDEF")
_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
_B64_VALUE = {c: i for i, c in enumerate(_B64)}


def _is_forbidden_control(c: str) -> bool:
    return ord(c) < 0x20 or ord(c) == 0x7F


def _check_namespace(name: str) -> Optional[Tuple[int, Tuple[str, str]]]:
    """The offset in `name` and the rule it breaks, or None."""
    if not name:
        return 0, ("EmptyNamespace", "a namespace cannot be empty")
    if not (name[0] in _ASCII_LETTERS or name[0] == "_"):
        return 0, _namespace_start(name[0])
    for i, c in enumerate(name):
        if c not in _NS_CHARS:
            return i, _namespace_char(c)
    if len(name) > MAX_NAMESPACE_LEN:
        return MAX_NAMESPACE_LEN, (
            "NamespaceTooLong",
            f"a namespace is at most 64 bytes, this one is {len(name)}",
        )
    return None


def _is_int_shaped(s: str) -> bool:
    digits = s[1:] if s.startswith("-") else s
    return bool(digits) and all(c in _DIGITS for c in digits)


def _is_uuid_shaped(s: str) -> bool:
    return len(s) == 36 and all(
        (c == "-") if i in (8, 13, 18, 23) else (c in _HEX) for i, c in enumerate(s)
    )


def _check_string(s: str) -> Optional[Tuple[int, Tuple[str, str]]]:
    if not s:
        return 0, _EMPTY_ID
    for i, c in enumerate(s):
        if _is_forbidden_control(c):
            return i, _control(c)
        if 0xD800 <= ord(c) <= 0xDFFF:
            return i, ("InvalidUtf8", "a string id is valid Unicode (no lone surrogates)")
    return None


# ------------------------------------------------------------------------------------------------
# Parsing


def _parse_int(s: str, at: int) -> int:
    negative = s.startswith("-")
    digits = s[1:] if negative else s
    digits_at = at + (1 if negative else 0)
    if len(digits) > 1 and digits[0] == "0":
        raise _RuleError(
            digits_at,
            "LeadingZero",
            f"an integer has no leading zeros (write a string id as %{s})",
        )
    if negative and digits == "0":
        raise _RuleError(at, "NegativeZero", "zero has no sign: write 0")
    magnitude = int(digits)
    if magnitude > INT_MAX:
        raise _RuleError(digits_at, *_OUT_OF_RANGE)
    return -magnitude if negative else magnitude


def _base64_error(at: int, detail: str) -> _RuleError:
    return _RuleError(at, "Base64", f"bytes ids are '~' then unpadded base64url: {detail}")


def _decode_base64url(b64: str, at: int) -> bytes:
    """Strict unpadded base64url, as the Rust codec's `URL_SAFE_NO_PAD` engine decodes it."""
    if not b64:
        raise _RuleError(at, *_EMPTY_BYTES)
    for i, c in enumerate(b64):
        if c not in _B64_VALUE and c != "=":
            raise _base64_error(at + i, f"Invalid symbol {c!r}, offset {i}.")
    if "=" in b64:
        raise _base64_error(at, "Invalid padding")
    if len(b64) % 4 == 1:
        raise _base64_error(at, "Invalid input length")
    bits = 0
    n_bits = 0
    out = bytearray()
    for c in b64:
        bits = (bits << 6) | _B64_VALUE[c]
        n_bits += 6
        if n_bits >= 8:
            n_bits -= 8
            out.append((bits >> n_bits) & 0xFF)
    if bits & ((1 << n_bits) - 1):
        last = len(b64) - 1
        raise _base64_error(at + last, f"Invalid last symbol {b64[last]!r}, offset {last}.")
    return bytes(out)


def _unescape(raw: str, at: int) -> str:
    out = []
    i = 0
    while i < len(raw):
        c = raw[i]
        if c == "%":
            if i + 1 >= len(raw):
                raise _RuleError(
                    at + i, "DanglingEscape", "'%' must be followed by the character it escapes"
                )
            i += 1
            c = raw[i]
        if _is_forbidden_control(c):
            raise _RuleError(at + i, *_control(c))
        out.append(c)
        i += 1
    return "".join(out)


def _parse_id(raw: str, at: int) -> Id:
    if not raw:
        raise _RuleError(at, *_EMPTY_ID)
    if raw[0] == "~":
        return _decode_base64url(raw[1:], at + 1)
    if raw[0] == "!":
        rest = raw[1:]
        at += 1
        if not rest:
            raise _RuleError(at, *_EMPTY_ID)
        if rest[0] == "~":
            return Desc(_decode_base64url(rest[1:], at + 1))
        if rest[0] == "!":
            raise _RuleError(
                at,
                "DoubleDescending",
                "a descending string starting with '!' escapes it: !%!...",
            )
        if _is_int_shaped(rest):
            return Desc(_parse_int(rest, at))
        if _is_uuid_shaped(rest):
            raise _RuleError(at, *_DESC_UUID)
        return Desc(_unescape(rest, at))
    if _is_int_shaped(raw):
        return _parse_int(raw, at)
    if _is_uuid_shaped(raw):
        return uuid.UUID(raw)
    return _unescape(raw, at)


def _id_end(text: str, start: int) -> int:
    i = start
    while i < len(text):
        if text[i] == "/":
            return i
        i += 2 if text[i] == "%" else 1
    return len(text)


def _parse_elements(text: str) -> Tuple[Element, ...]:
    if not text:
        raise _RuleError(0, "EmptyPath", "a key path needs at least one element")
    if text[0] != "/":
        raise _RuleError(0, "MissingLeadingSlash", "a key path starts with '/'")
    elements = []
    pos = 1
    n = len(text)
    while True:
        ns_start = pos
        while pos < n and text[pos] in _NS_CHARS:
            pos += 1
        namespace = text[ns_start:pos]
        if pos < n and text[pos] not in "/-":
            rule = _namespace_char(text[pos]) if namespace else _namespace_start(text[pos])
            raise _RuleError(pos, *rule)
        problem = _check_namespace(namespace)
        if problem is not None:
            raise _RuleError(ns_start + problem[0], *problem[1])
        id: Optional[Id] = None
        if pos < n and text[pos] == "-":
            id_start = pos + 1
            pos = _id_end(text, id_start)
            id = _parse_id(text[id_start:pos], id_start)
        elements.append(Element(namespace, id))
        if pos >= n:
            break
        if id is None:
            raise _RuleError(pos, *_MISSING_ID)
        pos += 1
    if elements[0].id is None:
        raise _RuleError(1, *_GROUP_WITHOUT_ID)
    return tuple(elements)


# ------------------------------------------------------------------------------------------------
# Formatting


def _escape(s: str) -> str:
    escape_first = s[0] in "~!" or _is_int_shaped(s) or _is_uuid_shaped(s)
    out = []
    for i, c in enumerate(s):
        if c in "/%" or (i == 0 and escape_first):
            out.append("%")
        out.append(c)
    return "".join(out)


def _b64(b: bytes) -> str:
    return urlsafe_b64encode(b).decode("ascii").rstrip("=")


def format_id(id: Id) -> str:
    """An id's canonical text, without the `-` before it: `7`, `%7` (the string "7"), `!1500`."""
    if isinstance(id, Desc):
        inner = id.value
        if isinstance(inner, str):
            return "!" + _escape(inner)
        if isinstance(inner, bytes):
            return "!~" + _b64(inner)
        return f"!{inner}"
    if isinstance(id, uuid.UUID):
        return str(id)
    if isinstance(id, bytes):
        return "~" + _b64(id)
    if isinstance(id, str):
        return _escape(id)
    return str(id)


def _check_id(id: object) -> Tuple[Optional[Tuple[str, str]], Optional[Id]]:
    """Validates a Python value as an id: the rule it breaks, or the id in its stored form."""
    if isinstance(id, Desc):
        inner = id.value
        if isinstance(inner, uuid.UUID):
            return _DESC_UUID, None
        rule, checked = _check_id(inner)
        if rule is not None:
            return rule, None
        assert isinstance(checked, (int, str, bytes))
        return None, Desc(checked)
    if isinstance(id, bool):
        return ("UnsupportedType", "an id is an int, str, bytes, uuid.UUID or Desc, not bool"), None
    if isinstance(id, int):
        if not INT_MIN <= id <= INT_MAX:
            return _OUT_OF_RANGE, None
        return None, int(id)
    if isinstance(id, str):
        problem = _check_string(id)
        return (problem[1] if problem else None), id
    if isinstance(id, (bytes, bytearray, memoryview)):
        if len(id) == 0:
            return _EMPTY_BYTES, None
        return None, bytes(id)
    if isinstance(id, uuid.UUID):
        return None, id
    kind = type(id).__name__
    return ("UnsupportedType", f"an id is an int, str, bytes, uuid.UUID or Desc, not {kind}"), None


# ------------------------------------------------------------------------------------------------
# The path


class KeyPath:
    """A key path such as `/user-7/post-2`: immutable, hashable, compared by its typed elements.

    A path also equals its canonical text (`str(path)`), and hashes as that text does, so
    `item.path == "/user-7/post-2"` holds and a dict or set keyed by paths finds them by their
    text too. Only the canonical spelling is equal: `"/user-7/tag-7"` (the integer 7) is not
    `/user-7/tag-%7` (the string "7"), and a text spelled another way (`/a-%b` for `/a-b`) is not
    equal to the path it parses to; compare with `KeyPath.parse(text)` for that.

    >>> KeyPath.parse("/user-7/post-2") == KeyPath().add("user", 7).add("post", 2)
    True
    >>> KeyPath.parse("/user-7/post-2") == "/user-7/post-2"
    True
    >>> str(KeyPath().add("user", 7).add("tag", "7"))
    '/user-7/tag-%7'
    >>> KeyPath().add("user", 7).add("tag", "7") == "/user-7/tag-7"
    False
    """

    __slots__ = ("_elements", "_text", "_encoded")

    def __init__(self, elements: Tuple[Element, ...] = ()) -> None:
        self._elements: Tuple[Element, ...] = ()
        self._text = ""
        self._encoded: Optional[bytes] = None
        for e in elements:
            self._elements = self.add(e.namespace, e.id)._elements
        self._text = "".join(_format_element(e) for e in self._elements)

    @classmethod
    def parse(cls, text: str) -> KeyPath:
        """Parses the text form. Raises `InvalidKeyPath` naming the rule and byte offset."""
        if not isinstance(text, str):
            raise TypeError(f"KeyPath.parse takes a str, not {type(text).__name__}")
        try:
            elements = _parse_elements(text)
            _check_no_surrogates(text)
        except _RuleError as e:
            offset = len(text[: e.at].encode("utf-8", "surrogatepass"))
            raise InvalidKeyPath(e.rule, e.detail, offset=offset) from None
        return cls._unchecked(elements)

    @classmethod
    def _unchecked(cls, elements: Tuple[Element, ...]) -> KeyPath:
        path = cls.__new__(cls)
        path._elements = elements
        path._text = "".join(_format_element(e) for e in elements)
        path._encoded = None
        return path

    def add(self, namespace: str, id: Optional[object] = None) -> KeyPath:
        """A new path with one more element. `id` is an `int` (-(2^64-1) ..= 2^64-1), `str`,
        `bytes`, `uuid.UUID` or `Desc(...)`; leave it out for a namespace-only last element."""
        index = len(self._elements)
        if not isinstance(namespace, str):
            raise TypeError(f"a namespace is a str, not {type(namespace).__name__}")
        problem = _check_namespace(namespace)
        if problem is not None:
            raise InvalidKeyPath(*problem[1], element=index)
        if self._elements and self._elements[-1].id is None:
            raise InvalidKeyPath(*_MISSING_ID, element=index - 1)
        checked: Optional[Id] = None
        if id is not None:
            rule, checked = _check_id(id)
            if rule is not None:
                raise InvalidKeyPath(*rule, element=index)
        elif index == 0:
            raise InvalidKeyPath(*_GROUP_WITHOUT_ID, element=0)
        return KeyPath._unchecked(self._elements + (Element(namespace, checked),))

    @property
    def elements(self) -> Tuple[Element, ...]:
        """The elements, group first."""
        return self._elements

    @property
    def parent(self) -> Optional[KeyPath]:
        """The path without its last element, or None for a group."""
        if len(self._elements) <= 1:
            return None
        return KeyPath._unchecked(self._elements[:-1])

    def __len__(self) -> int:
        return len(self._elements)

    def __iter__(self) -> Iterator[Element]:
        return iter(self._elements)

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return f"KeyPath.parse({self._text!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            # The canonical text is one to one with the typed elements (docs/key-format.md):
            # equal text is the same path.
            return self._text == other
        if not isinstance(other, KeyPath):
            return NotImplemented
        return _typed(self._elements) == _typed(other._elements)

    def __hash__(self) -> int:
        # The text's hash, so that a path and its canonical text (equal) hash alike; equal paths
        # have the same text.
        return hash(self._text)

    def encode(self) -> bytes:
        """The binary key (docs/key-format.md), as `pathdb key encode` prints it in hex. Its
        byte order is PathDB's key order, which the comparison operators follow: integers
        numerically, a parent right before its subtree, descending ids reversed.

        >>> KeyPath.parse("/user-7/post-2") < KeyPath.parse("/user-7/post-10")
        True
        """
        if self._encoded is None:
            self._encoded = _encode(self._elements)
        return self._encoded

    def __lt__(self, other: KeyPath) -> bool:
        if not isinstance(other, KeyPath):
            return NotImplemented
        return self.encode() < other.encode()

    def __le__(self, other: KeyPath) -> bool:
        if not isinstance(other, KeyPath):
            return NotImplemented
        return self.encode() <= other.encode()

    def __gt__(self, other: KeyPath) -> bool:
        if not isinstance(other, KeyPath):
            return NotImplemented
        return self.encode() > other.encode()

    def __ge__(self, other: KeyPath) -> bool:
        if not isinstance(other, KeyPath):
            return NotImplemented
        return self.encode() >= other.encode()


def _typed(elements: Tuple[Element, ...]) -> Tuple[object, ...]:
    """Elements with each id's type made explicit (so that `1` and `True`, or `b"a"` and
    `bytearray`, can never compare equal by accident)."""
    return tuple((e.namespace, type(e.id).__name__, e.id) for e in elements)


def covers(prefix: KeyPath, path: KeyPath) -> bool:
    """Whether `path` lies in `prefix`'s subtree: it is `prefix` or below it, element by element
    (typed ids, not text: `/a-1` is not `/a-%1`), and a last element of `prefix` without id
    stands for its whole namespace (`/user-7/post` covers `/user-7/post-1` and its subtree).
    `/u-1/p-1` covers `/u-1/p-1/c-2` but not `/u-1/p-10`. The Rust `KeyPath::covers`;
    clients/vectors/keypath-covers.json holds its cases."""
    n = len(prefix)
    if len(path) < n or _typed(path.elements[: n - 1]) != _typed(prefix.elements[: n - 1]):
        return False
    mine, theirs = prefix.elements[n - 1], path.elements[n - 1]
    if mine.id is None:
        return mine.namespace == theirs.namespace
    return _typed((mine,)) == _typed((theirs,))


def _format_element(e: Element) -> str:
    if e.id is None:
        return f"/{e.namespace}"
    return f"/{e.namespace}-{format_id(e.id)}"


# ------------------------------------------------------------------------------------------------
# The binary form (docs/key-format.md): its byte order is the key order


def _escape_bytes(b: bytes) -> bytes:
    """Bytes and UUID segments: `00`, `01`, `02` become `02 00`, `02 01`, `02 02`."""
    return b.replace(b"\x02", b"\x02\x02").replace(b"\x00", b"\x02\x00").replace(b"\x01", b"\x02\x01")


def _int_segment(n: int) -> bytes:
    """Sort byte, then the minimal big-endian magnitude (inverted for zero and negatives)."""
    magnitude = abs(n)
    length = max(1, (magnitude.bit_length() + 7) // 8)
    raw = magnitude.to_bytes(length, "big")
    if n > 0:
        return bytes([7 + length]) + raw
    return bytes([8 - length]) + bytes(255 - b for b in raw)


def _invert(b: bytes) -> bytes:
    return bytes(255 - x for x in b)


def _id_segment(id: Id) -> Tuple[bytes, int]:
    """An id's segment and its type code."""
    if isinstance(id, Desc):
        inner = id.value
        if isinstance(inner, str):
            return b"\xfe" + _invert(inner.encode("utf-8")) + b"\xff", 5
        if isinstance(inner, bytes):
            body = b"".join(b"\xff\x00" if x == 0 else bytes([255 - x]) for x in inner)
            return b"\xff" + body + b"\xff\xfe", 6
        ascending = _int_segment(inner)
        return bytes([0x1F - ascending[0]]) + _invert(ascending[1:]), 4
    if isinstance(id, uuid.UUID):
        return _escape_bytes(id.bytes), 3
    if isinstance(id, bytes):
        return _escape_bytes(id), 1
    if isinstance(id, str):
        return id.encode("utf-8"), 0
    return _int_segment(id), 2


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low = n & 0x7F
        n >>= 7
        if n:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def _encode(elements: Tuple[Element, ...]) -> bytes:
    segments: List[Tuple[bytes, int]] = []
    for e in elements:
        segments.append((e.namespace.encode("ascii"), 0))
        if e.id is not None:
            segments.append(_id_segment(e.id))
    body = b"\x01".join(s for s, _ in segments)
    meta = b"".join(_varint((len(s) << 3) | t) for s, t in segments)
    return body + b"\x00" + meta


def _check_no_surrogates(text: str) -> None:
    for i, c in enumerate(text):
        if 0xD800 <= ord(c) <= 0xDFFF:
            raise _RuleError(i, "InvalidUtf8", "key path text is valid Unicode (no lone surrogates)")


PathLike = Union[KeyPath, str]
"""A key path, or its text."""


def to_path(path: PathLike) -> KeyPath:
    """A `KeyPath` from a path or its text."""
    if isinstance(path, KeyPath):
        if not path.elements:
            raise InvalidKeyPath("EmptyPath", "a key path needs at least one element", offset=0)
        return path
    return KeyPath.parse(path)
