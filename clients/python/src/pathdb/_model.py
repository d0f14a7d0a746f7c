"""Items, pages and transaction operations, as the clients return and take them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import (
    Any,
    Dict,
    Generic,
    Iterable,
    List,
    Literal,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    TypedDict,
    TypeVar,
    Union,
)

from ._keypath import Element, InvalidKeyPath, KeyPath, PathLike, _check_namespace, to_path

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _time(micros: Optional[int]) -> Optional[datetime]:
    if micros is None:
        return None
    return _EPOCH + timedelta(microseconds=micros)


@dataclass(frozen=True)
class Item:
    """A JSON document at a key path, with its metadata (times are UTC, to the microsecond)."""

    path: KeyPath
    version: int
    value: Any
    created_at: datetime
    modified_at: datetime
    expires_at: Optional[datetime]

    @classmethod
    def from_wire(cls, body: Dict[str, Any]) -> Item:
        """An item from its JSON shape (`ItemOut` in /openapi.json)."""
        created = _time(body["created_at"])
        modified = _time(body["modified_at"])
        assert created is not None and modified is not None
        return cls(
            path=KeyPath.parse(body["path"]),
            version=int(body["version"]),
            value=body["value"],
            created_at=created,
            modified_at=modified,
            expires_at=_time(body.get("expires_at")),
        )


@dataclass(frozen=True)
class Node:
    """A child in a children listing that has items below it and no item of its own (a
    folder): `{"path": ..., "node": true}` on the wire. Tell it from an `Item` with
    `isinstance` or its `node` attribute (an `Item` has none)."""

    path: KeyPath
    node: bool = True


Entry = Union[Item, Node]
"""One entry of a listing: an item, or (in a children listing) a node."""


def entry_from_wire(body: Dict[str, Any]) -> Entry:
    """A listing entry from its JSON shape (`EntryOut` in /openapi.json)."""
    if body.get("node") is True:
        return Node(path=KeyPath.parse(body["path"]))
    return Item.from_wire(body)


E = TypeVar("E", bound=Entry)


@dataclass(frozen=True)
class Page(Generic[E]):
    """One page of a listing; pass `next_page_token` to `list_page` to continue (None at the
    end). A first page (no `page_token`) also has `changes_token`: the change feed's position at
    this listing, to follow the prefix from with `changes` or `watch` without a gap (None on
    later pages)."""

    items: List[E]
    next_page_token: Optional[str]
    changes_token: Optional[str] = None


@dataclass(frozen=True)
class PutChange:
    """A change of the feed: the item was created or replaced; `item` is as that commit wrote
    it."""

    item: Item

    @property
    def path(self) -> KeyPath:
        """The item's path."""
        return self.item.path

    @property
    def version(self) -> int:
        """The version written."""
        return self.item.version


@dataclass(frozen=True)
class DeleteChange:
    """A change of the feed: the item at `path` was deleted or expired; `version` is the version
    that was removed."""

    path: KeyPath
    version: int


Change = Union[PutChange, DeleteChange]
"""One change of the feed. Both kinds have `path` and `version`: apply a change only if its
`version` is not older than the one you hold (docs/changes.md)."""


def change_from_wire(body: Dict[str, Any]) -> Change:
    """A change from its JSON shape (`ChangeOut` in /openapi.json)."""
    op = body.get("op")
    if op == "put":
        return PutChange(Item.from_wire(body["item"]))
    if op == "delete":
        return DeleteChange(KeyPath.parse(body["path"]), int(body["version"]))
    raise ValueError(f"unknown change op {op!r}")


@dataclass(frozen=True)
class ChangePage:
    """Changes after a token, in commit order; pass `next_token` as `since` to continue."""

    changes: List[Change]
    next_token: str


IdKind = Literal["uuid", "rand53", "sequence"]
"""How a create generates its id: a random version 4 UUID (`uuid`), a random integer in
[1, 2^53) (`rand53`), or the parent's next integer for that namespace, 1, 2, 3, ..., never
issued twice even after deletes (`sequence`)."""


def _conditions(
    if_version: Optional[int], must_exist: bool, must_not_exist: bool
) -> Dict[str, Any]:
    given = (if_version is not None) + must_exist + must_not_exist
    if given > 1:
        raise ValueError("give at most one of if_version, must_exist, must_not_exist")
    out: Dict[str, Any] = {}
    if if_version is not None:
        out["if_version"] = if_version
    if must_exist:
        out["must_exist"] = True
    if must_not_exist:
        out["must_not_exist"] = True
    return out


class Put:
    """A transaction operation: create or replace the item at `path`."""

    def __init__(
        self,
        path: PathLike,
        value: Any,
        *,
        must_not_exist: bool = False,
        if_version: Optional[int] = None,
        history: bool = False,
        ttl_seconds: Optional[int] = None,
    ) -> None:
        self.path = to_path(path)
        self.value = value
        self._wire: Dict[str, Any] = {"op": "put", "path": str(self.path), "value": value}
        self._wire.update(_conditions(if_version, False, must_not_exist))
        if history:
            self._wire["history"] = True
        if ttl_seconds is not None:
            self._wire["ttl_seconds"] = ttl_seconds

    def to_wire(self) -> Dict[str, Any]:
        """The operation's JSON shape."""
        return dict(self._wire)


class Delete:
    """A transaction operation: delete the item at `path` (its result is the deleted item, or
    None if there was none)."""

    def __init__(self, path: PathLike, *, if_version: Optional[int] = None) -> None:
        self.path = to_path(path)
        self._wire: Dict[str, Any] = {"op": "delete", "path": str(self.path)}
        self._wire.update(_conditions(if_version, False, False))

    def to_wire(self) -> Dict[str, Any]:
        """The operation's JSON shape."""
        return dict(self._wire)


class Check:
    """A transaction operation: a condition that must hold for the transaction to apply."""

    def __init__(
        self,
        path: PathLike,
        *,
        if_version: Optional[int] = None,
        must_exist: bool = False,
        must_not_exist: bool = False,
    ) -> None:
        self.path = to_path(path)
        conditions = _conditions(if_version, must_exist, must_not_exist)
        if not conditions:
            raise ValueError("a check needs if_version, must_exist or must_not_exist")
        self._wire: Dict[str, Any] = {"op": "check", "path": str(self.path), **conditions}

    def to_wire(self) -> Dict[str, Any]:
        """The operation's JSON shape."""
        return dict(self._wire)


class CheckList:
    """A transaction operation: a listing's check. The transaction fails (`ConditionFailed`,
    409 `condition_failed`) if anything in the listing's range (`prefix` with `children` and
    the bounds, as `list_page` takes them) was put, patched, deleted, expired, moved or copied
    after the listing whose first page returned `changes_token`. `seen` is what the listing's
    pages showed, path to version: on DynamoDB a listing token starts a margin before the
    listing, and `seen` lets the server ignore the changes of that margin the listing already
    reflects (`transaction` always sends it)."""

    def __init__(
        self,
        prefix: PathLike,
        changes_token: str,
        *,
        children: bool = False,
        gt: Optional[PathLike] = None,
        gte: Optional[PathLike] = None,
        lt: Optional[PathLike] = None,
        lte: Optional[PathLike] = None,
        seen: Optional[Union[Mapping[KeyPath, int], Mapping[str, int]]] = None,
    ) -> None:
        self.prefix = to_path(prefix)
        self.changes_token = changes_token
        self._wire: Dict[str, Any] = {
            "op": "check_list",
            "prefix": str(self.prefix),
            "changes_token": changes_token,
        }
        if children:
            self._wire["children"] = True
        for name, bound in (("gt", gt), ("gte", gte), ("lt", lt), ("lte", lte)):
            if bound is not None:
                self._wire[name] = str(to_path(bound))
        if seen is not None:
            items: Iterable[Tuple[PathLike, int]] = seen.items()
            self._wire["seen"] = {str(to_path(p)): int(v) for p, v in items}

    def to_wire(self) -> Dict[str, Any]:
        """The operation's JSON shape."""
        return dict(self._wire)


@dataclass(frozen=True)
class Created:
    """In a transaction, the path that operation `index` (a `Create`) creates, as the parent of
    a later `Create`: `Create(Created(0), "comment", ...)`."""

    index: int


class Create:
    """A transaction operation: create an item at `{parent}/{namespace}-{id}` with a generated
    id (see `Client.create`). `parent` is a path, None for a new group, or `Created(n)` for the
    item operation `n` creates. Its result is the item created."""

    def __init__(
        self,
        parent: Union[PathLike, Created, None],
        namespace: str,
        value: Any,
        *,
        id: IdKind = "uuid",
        history: bool = False,
        ttl_seconds: Optional[int] = None,
    ) -> None:
        self.parent = parent
        self.namespace = namespace
        self.value = value
        if isinstance(parent, Created):
            index = parent.index
            if isinstance(index, bool) or not isinstance(index, int) or index < 0:
                raise ValueError(f"Created takes an operation's index, not {parent.index!r}")
            check_namespace(namespace)
            path = f"${parent.index}/{namespace}"
        else:
            path = str(create_target(parent, namespace))
        self._wire: Dict[str, Any] = {"op": "create", "path": path, "id": id, "value": value}
        if history:
            self._wire["history"] = True
        if ttl_seconds is not None:
            self._wire["ttl_seconds"] = ttl_seconds

    def to_wire(self) -> Dict[str, Any]:
        """The operation's JSON shape."""
        return dict(self._wire)


class PatchAdd(TypedDict):
    """`{"op": "add", "path": pointer, "value": ...}`: set a member, or insert into an array
    (`/-` appends)."""

    op: Literal["add"]
    path: str
    value: Any


class PatchRemove(TypedDict):
    """`{"op": "remove", "path": pointer}`: remove a member or an array element (which must
    exist)."""

    op: Literal["remove"]
    path: str


class PatchReplace(TypedDict):
    """`{"op": "replace", "path": pointer, "value": ...}`: replace a value (which must exist)."""

    op: Literal["replace"]
    path: str
    value: Any


# "from" is a keyword: these two take the functional form.
PatchMove = TypedDict("PatchMove", {"op": Literal["move"], "from": str, "path": str})
"""`{"op": "move", "from": pointer, "path": pointer}`: remove a value and add it elsewhere."""

PatchCopy = TypedDict("PatchCopy", {"op": Literal["copy"], "from": str, "path": str})
"""`{"op": "copy", "from": pointer, "path": pointer}`: add a copy of a value elsewhere."""


class PatchTest(TypedDict):
    """`{"op": "test", "path": pointer, "value": ...}`: the value there must equal `value`, or
    the whole patch fails with `PatchTestFailed` and nothing is written."""

    op: Literal["test"]
    path: str
    value: Any


class PatchIncrement(TypedDict):
    """`{"op": "increment", "path": pointer, "value": n}` (PathDB's extension): add `n` to the
    number there; a missing member starts at 0, integers stay integers (within 2^53)."""

    op: Literal["increment"]
    path: str
    value: Union[int, float]


PatchOperation = Union[
    PatchAdd,
    PatchRemove,
    PatchReplace,
    PatchMove,
    PatchCopy,
    PatchTest,
    PatchIncrement,
]
"""One operation of a JSON Patch (RFC 6902, plus `increment`), as a dict: `{"op": "replace",
"path": "/title", "value": "new"}`. Paths are JSON Pointers (RFC 6901) into the item's value."""


def increment_operation(pointer: str, by: Union[int, float]) -> PatchIncrement:
    """`{"op": "increment", "path": pointer, "value": by}`, checked."""
    if not isinstance(pointer, str):
        raise TypeError(f"a JSON Pointer is a str, not {type(pointer).__name__}")
    if isinstance(by, bool) or not isinstance(by, (int, float)):
        raise TypeError(f"an increment is an int or a float, not {type(by).__name__}")
    return {"op": "increment", "path": pointer, "value": by}


class Patch:
    """A transaction operation: apply a JSON Patch (`PatchOperation`s, applied in order) to the
    item at `path`; `create` applies it to `{}` when there is no item (otherwise the transaction
    fails with `NotFound`). After a `Put` of the same path in the transaction it applies to the
    value put. Its result is the item written."""

    def __init__(
        self,
        path: PathLike,
        operations: Sequence[PatchOperation],
        *,
        must_not_exist: bool = False,
        if_version: Optional[int] = None,
        create: bool = False,
        history: bool = False,
        ttl_seconds: Optional[int] = None,
    ) -> None:
        self.path = to_path(path)
        self.operations: List[PatchOperation] = list(operations)
        self._wire = _patch_wire(
            self.path,
            "patch",
            self.operations,
            must_not_exist,
            if_version,
            create,
            history,
            ttl_seconds,
        )

    def to_wire(self) -> Dict[str, Any]:
        """The operation's JSON shape."""
        return dict(self._wire)


class Merge:
    """A transaction operation: apply a JSON Merge Patch (RFC 7396: objects merge member by
    member, `None` removes a member, anything else replaces) to the item at `path`, with the
    options of `Patch`. Its result is the item written."""

    def __init__(
        self,
        path: PathLike,
        document: Any,
        *,
        must_not_exist: bool = False,
        if_version: Optional[int] = None,
        create: bool = False,
        history: bool = False,
        ttl_seconds: Optional[int] = None,
    ) -> None:
        self.path = to_path(path)
        self.document = document
        self._wire = _patch_wire(
            self.path, "merge", document, must_not_exist, if_version, create, history, ttl_seconds
        )

    def to_wire(self) -> Dict[str, Any]:
        """The operation's JSON shape."""
        return dict(self._wire)


class Increment(Patch):
    """A transaction operation: add `by` to the number at the JSON Pointer `pointer` in the
    item at `path` (`Patch(path, [{"op": "increment", ...}])`). A missing member starts at 0;
    `create` defaults to True, so a counter that does not exist yet starts at 0 too."""

    def __init__(
        self,
        path: PathLike,
        pointer: str,
        by: Union[int, float] = 1,
        *,
        must_not_exist: bool = False,
        if_version: Optional[int] = None,
        create: bool = True,
        history: bool = False,
        ttl_seconds: Optional[int] = None,
    ) -> None:
        super().__init__(
            path,
            [increment_operation(pointer, by)],
            must_not_exist=must_not_exist,
            if_version=if_version,
            create=create,
            history=history,
            ttl_seconds=ttl_seconds,
        )


def _patch_wire(
    path: KeyPath,
    kind: Literal["patch", "merge"],
    document: Any,
    must_not_exist: bool,
    if_version: Optional[int],
    create: bool,
    history: bool,
    ttl_seconds: Optional[int],
) -> Dict[str, Any]:
    wire: Dict[str, Any] = {"op": "patch", "path": str(path), kind: document}
    wire.update(_conditions(if_version, False, must_not_exist))
    if create:
        wire["create"] = True
    if history:
        wire["history"] = True
    if ttl_seconds is not None:
        wire["ttl_seconds"] = ttl_seconds
    return wire


def check_namespace(namespace: str) -> None:
    """Raises `InvalidKeyPath` unless `namespace` is a valid namespace."""
    if not isinstance(namespace, str):
        raise TypeError(f"a namespace is a str, not {type(namespace).__name__}")
    problem = _check_namespace(namespace)
    if problem is not None:
        raise InvalidKeyPath(*problem[1], element=0)


def create_target(parent: Optional[PathLike], namespace: str) -> KeyPath:
    """`{parent}/{namespace}` (just `/{namespace}` without a parent), checked: the path whose
    last element a create completes with an id."""
    if isinstance(parent, KeyPath) and not parent.elements:
        parent = None
    if parent is None or parent in ("", "/"):
        check_namespace(namespace)
        return KeyPath._unchecked((Element(namespace, None),))
    return to_path(parent).add(namespace)


Op = Union[Put, Delete, Check, CheckList, Create, Patch, Merge]
"""A transaction operation."""
