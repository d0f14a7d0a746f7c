"""Key path text and subtrees: the vectors the Rust codec generates, the builder, and round-trip
properties."""

from __future__ import annotations

import doctest
import json
import uuid
from pathlib import Path
from typing import Any, Dict, List, Optional, Union

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pathdb
import pathdb._keypath
from pathdb import Desc, Element, Id, InvalidKeyPath, KeyPath
from pathdb._api import url_path
from pathdb._keypath import covers

VECTORS = Path(__file__).resolve().parents[2] / "vectors" / "keypath-text.json"
CASES: List[Dict[str, Any]] = json.loads(VECTORS.read_text(encoding="utf-8"))["cases"]
COVERS = VECTORS.with_name("keypath-covers.json")
COVERS_CASES: List[Dict[str, Any]] = json.loads(COVERS.read_text(encoding="utf-8"))["cases"]


def typed_id(spec: Optional[Dict[str, Any]]) -> Optional[Id]:
    """An id from the vectors' JSON description."""
    if spec is None:
        return None
    kind, value = spec["type"], spec["value"]
    plain: Union[int, str, bytes]
    if kind == "int":
        plain = int(value)
    elif kind == "string":
        plain = str(value)
    elif kind == "bytes":
        plain = bytes.fromhex(value)
    else:
        assert kind == "uuid" and not spec["desc"]
        return uuid.UUID(value)
    return Desc(plain) if spec["desc"] else plain


def test_the_vectors_cover_every_kind_of_case() -> None:
    assert len(CASES) > 100
    assert any("error" in c for c in CASES) and any("canonical" in c for c in CASES)


@pytest.mark.parametrize("case", CASES, ids=[repr(c["text"]) for c in CASES])
def test_vectors_from_the_rust_codec(case: Dict[str, Any]) -> None:
    text = case["text"]
    if "error" in case:
        with pytest.raises(InvalidKeyPath) as raised:
            KeyPath.parse(text)
        expected = case["error"]
        assert (raised.value.rule, raised.value.offset) == (expected["rule"], expected["offset"])
        if expected["rule"] != "Base64":  # the rest of a Base64 message is the Rust crate's
            assert str(raised.value) == expected["message"]
        return
    path = KeyPath.parse(text)
    assert str(path) == case["canonical"]
    elements = tuple(Element(e["namespace"], typed_id(e["id"])) for e in case["elements"])
    assert path.elements == elements
    built = KeyPath()
    for e in elements:
        built = built.add(e.namespace, e.id)
    assert built == path and hash(built) == hash(path)
    assert str(built) == case["canonical"]
    assert KeyPath.parse(case["canonical"]) == path
    if "encoded" in case:  # the binary key, whose byte order is the key order
        assert path.encode().hex() == case["encoded"]


def test_the_covers_vectors_have_both_answers() -> None:
    assert len(COVERS_CASES) > 100
    assert any(c["covers"] for c in COVERS_CASES) and not all(c["covers"] for c in COVERS_CASES)


@pytest.mark.parametrize(
    "case", COVERS_CASES, ids=[f"{c['prefix']!r} {c['path']!r}" for c in COVERS_CASES]
)
def test_covers_vectors_from_the_rust_codec(case: Dict[str, Any]) -> None:
    prefix, path = KeyPath.parse(case["prefix"]), KeyPath.parse(case["path"])
    assert covers(prefix, path) is case["covers"]


def test_key_order_follows_the_binary_key() -> None:
    # docs/key-format.md section 4: no id < integer < desc integer < string < desc string <
    # desc bytes, a parent right before its subtree.
    texts = ["/x-1/y", "/x-1/y--3", "/x-1/y-5", "/x-1/y-!5", "/x-1/y-a", "/x-1/y-!a", "/x-1/y-~_w", "/x-1/y-!~YQ"]
    paths = [KeyPath.parse(t) for t in texts]
    assert sorted(reversed(paths)) == paths
    assert KeyPath.parse("/u-1/p-2") < KeyPath.parse("/u-1/p-10") < KeyPath.parse("/u-1/p-10/c-1")
    assert KeyPath.parse("/u-1/p-!10") < KeyPath.parse("/u-1/p-!2")
    assert not KeyPath.parse("/u-1") < KeyPath.parse("/u-1") and KeyPath.parse("/u-1") >= KeyPath.parse("/u-1")


def test_builder_types_and_equality() -> None:
    u = uuid.UUID("4c9d36e5-6b19-4e6a-828c-226ed667458a")
    path = KeyPath().add("user", u).add("post", 2**64 - 1).add("tag", "7").add("b", b"\x00\x01")
    assert str(path) == f"/user-{u}/post-18446744073709551615/tag-%7/b-~AAE"
    assert str(KeyPath().add("s", Desc(-3)).add("n", Desc("a/b")).add("x", Desc(b"\xff"))) == (
        "/s-!-3/n-!a%/b/x-!~_w"
    )
    assert KeyPath().add("a", 1) != KeyPath().add("a", "1")
    assert KeyPath().add("a", 1) != KeyPath().add("a", Desc(1))
    assert KeyPath().add("a", b"x") == KeyPath().add("a", bytearray(b"x"))
    assert len({KeyPath.parse("/a-1/b"), KeyPath().add("a", 1).add("b")}) == 1
    assert KeyPath.parse("/a-1/b-2").parent == KeyPath.parse("/a-1")
    assert str(KeyPath().add("a", -(2**64 - 1))) == "/a--18446744073709551615"


@pytest.mark.parametrize(
    "build, rule",
    [
        (lambda: KeyPath().add("a", 2**64), "IntegerOutOfRange"),
        (lambda: KeyPath().add("a", -(2**64)), "IntegerOutOfRange"),
        (lambda: KeyPath().add("a", ""), "EmptyId"),
        (lambda: KeyPath().add("a", b""), "EmptyBytes"),
        (lambda: KeyPath().add("a", "x\ny"), "ControlCharacter"),
        (lambda: KeyPath().add("a", "\ud800"), "InvalidUtf8"),
        (lambda: KeyPath().add("a", True), "UnsupportedType"),
        (lambda: KeyPath().add("a", 1.5), "UnsupportedType"),
        (lambda: KeyPath().add("a", Desc(uuid.uuid4())), "DescendingUuid"),  # type: ignore[type-var]
        (lambda: KeyPath().add("a"), "GroupWithoutId"),
        (lambda: KeyPath().add("a", 1).add("b").add("c", 1), "MissingId"),
        (lambda: KeyPath().add("1a", 1), "NamespaceStart"),
        (lambda: KeyPath().add("a-b", 1), "NamespaceChar"),
        (lambda: KeyPath().add("", 1), "EmptyNamespace"),
        (lambda: KeyPath().add("n" * 65, 1), "NamespaceTooLong"),
    ],
)
def test_builder_refuses_what_the_format_forbids(build: Any, rule: str) -> None:
    with pytest.raises(InvalidKeyPath) as raised:
        build()
    assert raised.value.rule == rule


def test_parse_offsets_count_utf8_bytes() -> None:
    with pytest.raises(InvalidKeyPath) as raised:
        KeyPath.parse("/a-\u00e9\u00e9%")
    assert raised.value.offset == 7 and raised.value.rule == "DanglingEscape"


def test_url_path_encodes_each_element() -> None:
    path = KeyPath().add("a", 1).add("s", "x/y%z!~.").add("t", "caf\u00e9 ?#")
    assert url_path(path) == "a-1/s-x%25%2Fy%25%25z!~./t-caf%C3%A9%20%3F%23"


def test_docstrings() -> None:
    for module in (pathdb, pathdb._keypath):
        failed, _ = doctest.testmod(module)
        assert failed == 0


# ------------------------------------------------------------------------------------------------
# Properties

namespaces = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,10}", fullmatch=True)
strings = st.text(
    alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\x7f"),
    min_size=1,
    max_size=12,
).filter(lambda s: all(ord(c) >= 0x20 for c in s))
tricky = st.sampled_from(["%", "/", "-", "!", "~", "-1", "0", "01", "!x", "~x", "%/", "a-b"])
strings = strings | st.lists(tricky | strings, min_size=1, max_size=4).map("".join)
ints = st.integers(min_value=-(2**64 - 1), max_value=2**64 - 1)
blobs = st.binary(min_size=1, max_size=20)
ids: st.SearchStrategy[Id] = st.one_of(
    ints,
    strings,
    blobs,
    st.uuids(),
    ints.map(Desc),
    strings.map(Desc),
    blobs.map(Desc),
)


@st.composite
def paths(draw: st.DrawFn) -> KeyPath:
    path = KeyPath().add(draw(namespaces), draw(ids))
    for _ in range(draw(st.integers(0, 4))):
        path = path.add(draw(namespaces), draw(ids))
    if draw(st.booleans()):
        path = path.add(draw(namespaces))
    return path


@settings(max_examples=400, deadline=None)
@given(paths())
def test_format_then_parse_is_the_same_path(path: KeyPath) -> None:
    text = str(path)
    parsed = KeyPath.parse(text)
    assert parsed == path
    assert str(parsed) == text


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from("/-_%!~aZ09\u00e9\n="), max_size=14))
def test_parse_is_canonical_or_names_an_offset_inside(text: str) -> None:
    try:
        path = KeyPath.parse(text)
    except InvalidKeyPath as e:
        assert e.offset is not None and 0 <= e.offset <= len(text.encode())
        return
    assert KeyPath.parse(str(path)) == path
    assert str(KeyPath.parse(str(path))) == str(path)
