"""Items, pages and transaction operations, as the clients return and take them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Dict, List, Optional, Union

from ._keypath import KeyPath, PathLike, to_path

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
class Page:
    """One page of a listing; pass `next_page_token` to `list_page` to continue (None at the
    end)."""

    items: List[Item]
    next_page_token: Optional[str]


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


Op = Union[Put, Delete, Check]
"""A transaction operation."""
