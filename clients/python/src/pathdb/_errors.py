"""The exceptions the clients raise: one per kind of failure, each with the server's code."""

from __future__ import annotations

from typing import Any, List, Mapping, Optional

from ._keypath import InvalidKeyPath, KeyPath
from ._model import Violation


class PathDBError(Exception):
    """Base of every error the server answers, or of a failure to reach it.

    `status` is the HTTP status (None if there was no answer), `code` the server's stable error
    code (`condition_failed`, `invalid_path`, ...), `message` its text for people, and `index`
    the transaction operation it is about, when the server names one (a failed condition).
    """

    def __init__(
        self,
        message: str,
        *,
        code: str = "",
        status: Optional[int] = None,
        index: Optional[int] = None,
    ) -> None:
        super().__init__(f"{code}: {message}" if code else message)
        self.code = code
        self.message = message
        self.status = status
        self.index = index


class ConditionFailed(PathDBError):
    """A condition did not hold: `must_not_exist`, `if_version`, or a transaction's check or
    listing check (HTTP 412, or 409 `condition_failed` with the operation's `index`). Also what
    `transaction` raises when what its callback read kept changing for `max_attempts` runs."""


class Conflict(PathDBError):
    """A concurrent write got there first (HTTP 409 `conflict`); retrying may succeed. Single
    writes are retried by the client before this is raised. Current servers no longer answer it
    (a write that loses a race is planned again there); older ones may."""


class DestinationNotEmpty(PathDBError):
    """A move or copy found an item at or below its destination (HTTP 409
    `destination_not_empty`); nothing was written."""


class PatchTestFailed(PathDBError):
    """A JSON Patch's `test` operation did not hold (HTTP 409 `patch_test_failed`); nothing was
    written."""


class PatchConflict(PathDBError):
    """A patch operation does not fit the item's value (HTTP 409 `patch_conflict`): an
    increment of a non-number or past 2^53, a remove or replace of a missing member, an add
    under a missing parent, ...; nothing was written. The same patch would fail again, so it is
    not retried."""


class NotFound(PathDBError):
    """The item (or revision) a method promises, or a patch without `create` changes, does not
    exist (HTTP 404)."""


class Unauthorized(PathDBError):
    """No token, or one the server does not know (HTTP 401)."""


class Forbidden(PathDBError):
    """The token may not do this (a read-only token writing), or the server is read-only
    (HTTP 403)."""


class InvalidRequest(PathDBError):
    """The server refused the request as invalid: a bad path, JSON, patch document
    (`invalid_patch`, its message naming the operation: "operation 2: ..."), page or change
    token (`invalid_change_token`: not a token, or one of another group), size, or option (HTTP
    400, 413, 415)."""


class SchemaViolation(PathDBError):
    """The value does not fit its namespace's schema (HTTP 422 `schema_violation`); nothing was
    written, in a transaction or an import none of the other operations either.

    `violations` lists what failed (at most 20), each `Violation` with a JSON Pointer into the
    value (`instance_path`), one into the schema (`schema_path`) and a `message`. `path` is the
    item's path, `index` the transaction operation (in `transact` and `transaction`) and `line`
    the import line (1-based), each None when the server does not name one."""

    def __init__(
        self,
        message: str,
        *,
        code: str = "schema_violation",
        status: Optional[int] = 422,
        index: Optional[int] = None,
        violations: Optional[List[Violation]] = None,
        path: Optional[KeyPath] = None,
        line: Optional[int] = None,
    ) -> None:
        super().__init__(message, code=code, status=status, index=index)
        self.violations: List[Violation] = list(violations or [])
        self.path = path
        self.line = line


class TokenExpired(PathDBError):
    """A change token is older than the server's retention window (default 7 days), so changes
    after it may be gone (HTTP 410 `token_expired`): list the prefix again and follow from the
    new listing's `changes_token`."""


class Unavailable(PathDBError):
    """The server could not be reached or could not serve the request (HTTP 503 and other
    5xx); 503 is retried by the client before this is raised, except `outcome_unknown`."""


class InsufficientStorage(Unavailable):
    """The server's disk is full (HTTP 507 `insufficient_storage`): nothing was written. Not
    retried: space has to be freed first; the server recovers on its own once it is."""


class OutcomeUnknown(Unavailable):
    """The storage failed after the write was sent, so it may or may not have been made (HTTP
    503 `outcome_unknown`). Not retried by the client, since a retried increment or create could
    apply twice: read the item to find out."""


class NotPathDB(Unavailable):
    """The address answered, but not as PathDB does: an error without PathDB's JSON error body
    (`{"error": {"code", "message"}}`), or a success that is not JSON. Another program listens
    there (a web server, a proxy's own error page). `message` names the server and quotes the
    start of its answer; `status` is its HTTP status."""


def not_pathdb(server: str, status: int, content_type: str, body: str) -> NotPathDB:
    """The error for an answer that is not PathDB's."""
    flat = " ".join(body.split())
    shown = flat[:60] + ("..." if len(flat) > 60 else "")
    kind = content_type or "no content type"
    return NotPathDB(
        f"{server} is not a PathDB server (it answered HTTP {status}, {kind}: {shown!r})",
        status=status,
    )


def _int(value: object) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _schema_violation(
    status: int, message: str, index: Optional[int], detail: Mapping[str, Any]
) -> SchemaViolation:
    violations = detail.get("violations")
    path: Optional[KeyPath] = None
    if isinstance(detail.get("path"), str):
        try:
            path = KeyPath.parse(detail["path"])
        except InvalidKeyPath:
            path = None
    return SchemaViolation(
        message,
        status=status,
        index=index,
        violations=[
            Violation.from_wire(v)
            for v in (violations if isinstance(violations, list) else [])
            if isinstance(v, dict)
        ],
        path=path,
        line=_int(detail.get("line")),
    )


def error_for(
    status: int,
    code: str,
    message: str,
    index: Optional[int] = None,
    detail: Optional[Mapping[str, Any]] = None,
) -> PathDBError:
    """The exception for an error answer (`detail`: the whole `error` object, for the members
    of a kind's own, such as a schema violation's)."""
    kind: type[PathDBError]
    if code == "schema_violation":
        return _schema_violation(status, message, index, detail or {})
    if code == "condition_failed" or status == 412:
        kind = ConditionFailed
    elif code == "conflict":
        kind = Conflict
    elif code == "destination_not_empty":
        kind = DestinationNotEmpty
    elif code == "patch_test_failed":
        kind = PatchTestFailed
    elif code == "patch_conflict":
        kind = PatchConflict
    elif code == "token_expired" or status == 410:
        kind = TokenExpired
    elif status == 401:
        kind = Unauthorized
    elif status == 403:
        kind = Forbidden
    elif status == 404:
        kind = NotFound
    elif status in (400, 413, 415, 422):
        kind = InvalidRequest
    elif code == "insufficient_storage" or status == 507:
        kind = InsufficientStorage
    elif code == "outcome_unknown":
        kind = OutcomeUnknown
    elif status >= 500:
        kind = Unavailable
    else:
        kind = PathDBError
    return kind(message, code=code, status=status, index=index)
