"""JSON Merge Patch (RFC 7396) and JSON Patch (RFC 6902, plus PathDB's `increment`) applied
locally, as the server applies them (crates/pathdb-store/src/patch.rs): a transaction's `patch`
computes the new value itself so that its later reads see it, and commits it as a put.

Failures raise the errors the server would answer with: `PatchTestFailed` (a `test` did not
hold), `PatchConflict` (an operation does not fit the value) and `InvalidRequest` with code
`invalid_patch` (not a patch document), each naming the operation ("operation 2: ...").
"""

from __future__ import annotations

import copy
import math
from typing import Any, Dict, List, Sequence, Tuple, Union

from ._errors import InvalidRequest, PatchConflict, PatchTestFailed

MAX_EXACT_INTEGER = 2**53 - 1
"""Integers an increment keeps exact: JSON clients read numbers as doubles, exact to 2^53."""

_I64 = 2**63


def merge_patch(value: Any, document: Any) -> Any:
    """`value` with the merge patch `document` applied (RFC 7396); `value` is left as it was."""
    return _merge(copy.deepcopy(value), document)


def _merge(target: Any, document: Any) -> Any:
    if not isinstance(document, dict):
        return copy.deepcopy(document)
    if not isinstance(target, dict):
        target = {}
    for name, member in document.items():
        if member is None:
            target.pop(name, None)
        else:
            target[name] = _merge(target.get(name), member)
    return target


def json_patch(value: Any, operations: Sequence[Any]) -> Any:
    """`value` with the JSON Patch `operations` applied in order, all or nothing; `value` is
    left as it was."""
    if isinstance(operations, (str, bytes)) or not isinstance(operations, Sequence):
        raise _invalid("a JSON Patch is a list of operations")
    checked = [_check(index, op) for index, op in enumerate(operations)]
    doc = copy.deepcopy(value)
    for index, (kind, op) in enumerate(checked):
        try:
            doc = _apply(doc, kind, op)
        except _Failure as e:
            message = f"operation {index}: {e}"
            if kind == "test":
                raise PatchTestFailed(message, code="patch_test_failed") from None
            raise PatchConflict(message, code="patch_conflict") from None
    return doc


class _Failure(Exception):
    """An operation that does not fit the value."""


def _invalid(message: str) -> InvalidRequest:
    return InvalidRequest(message, code="invalid_patch")


_FIELDS = {
    "add": ("path", "value"),
    "remove": ("path",),
    "replace": ("path", "value"),
    "move": ("from", "path"),
    "copy": ("from", "path"),
    "test": ("path", "value"),
    "increment": ("path", "value"),
}


def _check(index: int, op: Any) -> Tuple[str, Dict[str, Any]]:
    """The operation's kind, checked as a document (a bad one is `invalid_patch`)."""
    if not isinstance(op, dict):
        raise _invalid(f"operation {index}: not an object")
    kind = op.get("op")
    if kind not in _FIELDS:
        raise _invalid(f"operation {index}: unknown op {kind!r}")
    for name in _FIELDS[kind]:
        if name not in op:
            raise _invalid(f"operation {index}: {kind} needs {name!r}")
    for name in ("path", "from"):
        if name in _FIELDS[kind]:
            pointer = op[name]
            if not isinstance(pointer, str) or not (pointer == "" or pointer.startswith("/")):
                raise _invalid(f"operation {index}: {pointer!r} is not a JSON Pointer")
    if kind == "increment":
        extra = [k for k in op if k not in ("op", "path", "value")]
        if extra:
            raise _invalid(f"operation {index}: increment has no member {extra[0]!r}")
        by = op["value"]
        if isinstance(by, bool) or not isinstance(by, (int, float)):
            raise _invalid(f"operation {index}: increment needs a number \"value\"")
    return kind, op


def _tokens(pointer: str) -> List[str]:
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]]


def _index(token: str, length: int, end_ok: bool) -> int:
    """An array index as RFC 6901 writes it: digits without a leading zero, `-` for the end."""
    if token == "-" and end_ok:
        return length
    if not token.isdigit() or not token.isascii() or (len(token) > 1 and token[0] == "0"):
        raise _Failure(f"{token!r} is not an array index")
    i = int(token)
    if i > length or (i == length and not end_ok):
        raise _Failure(f"index {i} is out of bounds")
    return i


def _get(doc: Any, pointer: str) -> Any:
    at = doc
    for token in _tokens(pointer):
        if isinstance(at, dict):
            if token not in at:
                raise _Failure(f"{pointer}: no member {token!r}")
            at = at[token]
        elif isinstance(at, list):
            at = at[_index(token, len(at), False)]
        else:
            raise _Failure(f"{pointer}: a scalar has no member {token!r}")
    return at


def _parent(doc: Any, pointer: str) -> Tuple[Any, str]:
    tokens = _tokens(pointer)
    parent_pointer = pointer[: len(pointer) - len(pointer.split("/")[-1]) - 1]
    return _get(doc, parent_pointer), tokens[-1]


def _add(doc: Any, pointer: str, value: Any) -> Any:
    if pointer == "":
        return value
    parent, last = _parent(doc, pointer)
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(last, len(parent), True), value)
    else:
        raise _Failure(f"{pointer}: a scalar has no member {last!r}")
    return doc


def _remove(doc: Any, pointer: str) -> Any:
    if pointer == "":
        raise _Failure("the whole value cannot be removed")
    parent, last = _parent(doc, pointer)
    if isinstance(parent, dict):
        if last not in parent:
            raise _Failure(f"{pointer}: no member {last!r}")
        return parent.pop(last)
    if isinstance(parent, list):
        return parent.pop(_index(last, len(parent), False))
    raise _Failure(f"{pointer}: a scalar has no member {last!r}")


def _apply(doc: Any, kind: str, op: Dict[str, Any]) -> Any:
    path = op["path"]
    if kind == "add":
        return _add(doc, path, copy.deepcopy(op["value"]))
    if kind == "remove":
        _remove(doc, path)
        return doc
    if kind == "replace":
        if path == "":
            return copy.deepcopy(op["value"])
        _get(doc, path)  # must exist
        parent, last = _parent(doc, path)
        if isinstance(parent, list):
            parent[_index(last, len(parent), False)] = copy.deepcopy(op["value"])
        else:
            parent[last] = copy.deepcopy(op["value"])
        return doc
    if kind == "move":
        source = op["from"]
        if path != source and path.startswith(source + "/"):
            raise _Failure(f"{source} cannot move into itself ({path})")
        if path == source:
            _get(doc, source)
            return doc
        return _add(doc, path, _remove(doc, source))
    if kind == "copy":
        return _add(doc, path, copy.deepcopy(_get(doc, op["from"])))
    if kind == "test":
        if not json_equal(_get(doc, path), op["value"]):
            raise _Failure(f"{path}: the value differs")
        return doc
    return _increment(doc, path, op["value"])


def _increment(doc: Any, pointer: str, by: Union[int, float]) -> Any:
    """Adds `by` to the number at `pointer`, creating missing object members (0 at the end,
    `{}` on the way)."""
    tokens = _tokens(pointer)
    if not tokens:
        return _add_numbers(doc, by, pointer)
    at = doc
    for depth, token in enumerate(tokens):
        last = depth + 1 == len(tokens)
        if isinstance(at, dict):
            if token not in at:
                at[token] = 0 if last else {}
            if last:
                at[token] = _add_numbers(at[token], by, pointer)
            else:
                at = at[token]
        elif isinstance(at, list):
            if not token.isdigit() or not token.isascii():
                raise _Failure(f"{pointer}: {token!r} is not an array index")
            i = int(token)
            if i >= len(at):
                raise _Failure(f"{pointer}: index {i} is past the array's end")
            if last:
                at[i] = _add_numbers(at[i], by, pointer)
            else:
                at = at[i]
        else:
            raise _Failure(f"{pointer}: a scalar has no member {token!r}")
    return doc


def _add_numbers(current: Any, by: Union[int, float], pointer: str) -> Union[int, float]:
    if isinstance(current, bool) or not isinstance(current, (int, float)):
        raise _Failure(f"{pointer} is not a number")
    past = f"{pointer}: {current} + {by} is past the exact integer range (2^53) or not finite"
    if isinstance(current, int) and isinstance(by, int):
        if not (-_I64 <= current < _I64 and -_I64 <= by < _I64):
            raise _Failure(past)
        total = current + by
        if abs(total) > MAX_EXACT_INTEGER:
            raise _Failure(past)
        return total
    result = float(current) + float(by)
    if not math.isfinite(result):
        raise _Failure(past)
    return result


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality as the server has it: `true` is not `1`, and `1` is not `1.0`."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and bool(a == b)
