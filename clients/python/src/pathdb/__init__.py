"""PathDB client: typed key paths and a blocking and an asyncio client for `pathdb serve`.

>>> from pathdb import KeyPath, Desc
>>> str(KeyPath().add("season", 2026).add("score", Desc(1500)))
'/season-2026/score-!1500'
"""

from ._client import AsyncClient, Client
from ._errors import (
    ConditionFailed,
    Conflict,
    Forbidden,
    InvalidRequest,
    NotFound,
    PathDBError,
    Unauthorized,
    Unavailable,
)
from ._keypath import Desc, Element, Id, InvalidKeyPath, KeyPath, PathLike, format_id
from ._model import Check, Delete, Item, Op, Page, Put

__all__ = [
    "AsyncClient",
    "Check",
    "Client",
    "ConditionFailed",
    "Conflict",
    "Delete",
    "Desc",
    "Element",
    "Forbidden",
    "Id",
    "InvalidKeyPath",
    "InvalidRequest",
    "Item",
    "KeyPath",
    "NotFound",
    "Op",
    "Page",
    "PathDBError",
    "PathLike",
    "Put",
    "Unauthorized",
    "Unavailable",
    "format_id",
]

__version__ = "0.1.0"
