"""PathDB client: typed key paths and a blocking and an asyncio client for `pathdb serve`.

>>> from pathdb import KeyPath, Desc
>>> str(KeyPath().add("season", 2026).add("score", Desc(1500)))
'/season-2026/score-!1500'
"""

from ._client import AsyncClient, AsyncWatch, Client, Watch
from ._errors import (
    ConditionFailed,
    Conflict,
    DestinationNotEmpty,
    Forbidden,
    InvalidRequest,
    NotFound,
    PathDBError,
    TokenExpired,
    Unauthorized,
    Unavailable,
)
from ._keypath import Desc, Element, Id, InvalidKeyPath, KeyPath, PathLike, format_id
from ._model import (
    Change,
    ChangePage,
    Check,
    Create,
    Created,
    Delete,
    DeleteChange,
    Entry,
    IdKind,
    Item,
    Node,
    Op,
    Page,
    Put,
    PutChange,
)

__all__ = [
    "AsyncClient",
    "AsyncWatch",
    "Change",
    "ChangePage",
    "Check",
    "Client",
    "ConditionFailed",
    "Conflict",
    "Create",
    "Created",
    "Delete",
    "DeleteChange",
    "Desc",
    "DestinationNotEmpty",
    "Element",
    "Entry",
    "Forbidden",
    "Id",
    "IdKind",
    "InvalidKeyPath",
    "InvalidRequest",
    "Item",
    "KeyPath",
    "Node",
    "NotFound",
    "Op",
    "Page",
    "PathDBError",
    "PathLike",
    "Put",
    "PutChange",
    "TokenExpired",
    "Unauthorized",
    "Unavailable",
    "Watch",
    "format_id",
]

__version__ = "0.1.0"
