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
    """No token, or one the server does not accept (HTTP 401 `unauthorized`): `reason` says why
    when the server tells (`missing`, `unknown_token` (also a revoked token), `expired`, and for
    a JWT `not_yet_valid`, `wrong_issuer`, `wrong_audience`, `unknown_key`,
    `algorithm_not_allowed`, `bad_signature`, `malformed`, `no_role`), else None."""

    def __init__(
        self,
        message: str,
        *,
        code: str = "unauthorized",
        status: Optional[int] = 401,
        index: Optional[int] = None,
        reason: Optional[str] = None,
    ) -> None:
        super().__init__(message, code=code, status=status, index=index)
        self.reason = reason


class Forbidden(PathDBError):
    """The token's role may not do this (HTTP 403 `forbidden`), or the server refused it for
    another reason (`read_only`: the server is read-only; `origin_not_allowed`,
    `host_not_allowed`). With `forbidden`, `operation` is what was refused (`read`, `write`,
    `admin`) and `path` where (None for `admin`, which concerns the whole database); both are
    None for the other codes. It never carries a value."""

    def __init__(
        self,
        message: str,
        *,
        code: str = "forbidden",
        status: Optional[int] = 403,
        index: Optional[int] = None,
        operation: Optional[str] = None,
        path: Optional[KeyPath] = None,
    ) -> None:
        super().__init__(message, code=code, status=status, index=index)
        self.operation = operation
        self.path = path


class InvalidRequest(PathDBError):
    """The server refused the request as invalid: a bad path, JSON, patch document
    (`invalid_patch`, its message naming the operation: "operation 2: ..."), page or change
    token (`invalid_change_token`: not a token, or one of another group), size, or option (HTTP
    400, 413, 415)."""


class InvalidFilter(InvalidRequest):
    """A listing's, a read's, a change feed's or a listing check's `filter` is not a valid filter
    (HTTP 400 `invalid_filter`): it does not parse, uses a name other than the item's (`value`,
    `path`, `ids`, `version`, `created_at`, `modified_at`), is empty, too long or nests too deep.
    `position` is the character offset in the filter where the problem is (None when the server
    names none); `message` says what it is. Nothing was read or written."""

    def __init__(
        self,
        message: str,
        *,
        code: str = "invalid_filter",
        status: Optional[int] = 400,
        index: Optional[int] = None,
        position: Optional[int] = None,
    ) -> None:
        super().__init__(message, code=code, status=status, index=index)
        self.position = position


class UnknownSchemaVersion(InvalidRequest):
    """The `Schema-Version` the client speaks (`schema_versions`) names a version a namespace
    does not have, or a namespace with no definition (HTTP 400 `unknown_schema_version`):
    `message` names it. Nothing was read or written."""


class MigrationFailed(InvalidRequest):
    """A value written in an older definition version (`schema_versions`) that its migration
    steps cannot bring to the newest, such as a rename onto a member the value has as well
    (HTTP 422 `migration_failed`). `path` is the item's path (None when not named). Nothing was
    written."""

    def __init__(
        self,
        message: str,
        *,
        code: str = "migration_failed",
        status: Optional[int] = 422,
        index: Optional[int] = None,
        path: Optional[KeyPath] = None,
    ) -> None:
        super().__init__(message, code=code, status=status, index=index)
        self.path = path


class IncompatibleSchema(PathDBError):
    """A new namespace definition that would break stored items or clients of older versions,
    not forced (HTTP 409 `incompatible_schema`): `problems` lists each one, a sentence (`/plan
    is required, ...`). Nothing was stored. Not retried: add `migrate` steps (a default for the
    new member, say), or force it."""

    def __init__(
        self,
        message: str,
        *,
        code: str = "incompatible_schema",
        status: Optional[int] = 409,
        index: Optional[int] = None,
        problems: Optional[List[str]] = None,
    ) -> None:
        super().__init__(message, code=code, status=status, index=index)
        self.problems: List[str] = list(problems or [])


class UnknownRole(InvalidRequest):
    """A token issued for a role that does not exist (HTTP 422 `unknown_role`): create the role
    first (`put_role`). Nothing was issued."""


class InvalidRole(InvalidRequest):
    """A role's rules are not valid (HTTP 422 `invalid_role`): a path template that is not one,
    an operation other than `read`, `write`, `admin`, or `admin` elsewhere than on `/**`. The
    message names the rule. Nothing was stored."""


class BuiltinRole(PathDBError):
    """A change to a built-in role, `read`, `read-write` or `admin` (HTTP 409 `builtin_role`):
    they cannot be replaced or deleted. Not retried."""


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


class AliasTaken(PathDBError):
    """A write would give an item an alias path that another item holds, or at which an item is
    stored (HTTP 409 `alias_taken`): an alias belongs to one item. Nothing was written (in a
    transaction, none of the other operations either). `alias` is the alias path, `holder` the
    item that holds it, `index` the transaction operation (None when not named). Not retried:
    the same write would be refused again."""

    def __init__(
        self,
        message: str,
        *,
        code: str = "alias_taken",
        status: Optional[int] = 409,
        index: Optional[int] = None,
        alias: Optional[KeyPath] = None,
        holder: Optional[KeyPath] = None,
    ) -> None:
        super().__init__(message, code=code, status=status, index=index)
        self.alias = alias
        self.holder = holder


class PathIsAlias(PathDBError):
    """A put or create at a path that is an alias of an item (HTTP 409 `path_is_alias`): an alias
    is not a place to store a second item; write the item at its own path, `item`. `path` is the
    path written. Nothing was written."""

    def __init__(
        self,
        message: str,
        *,
        code: str = "path_is_alias",
        status: Optional[int] = 409,
        index: Optional[int] = None,
        path: Optional[KeyPath] = None,
        item: Optional[KeyPath] = None,
    ) -> None:
        super().__init__(message, code=code, status=status, index=index)
        self.path = path
        self.item = item


class AliasInvalid(PathDBError):
    """A member of the value that an alias template of its namespace names cannot fill an
    alias id: it is an object, an array, a boolean or a number that is not an integer (HTTP 422
    `alias_invalid`). Nothing was written (in a transaction, none of the other operations
    either). `path` is the item's path, `member` the member as the template names it
    (`address.city`), `index` the transaction operation (None when not named)."""

    def __init__(
        self,
        message: str,
        *,
        code: str = "alias_invalid",
        status: Optional[int] = 422,
        index: Optional[int] = None,
        path: Optional[KeyPath] = None,
        member: Optional[str] = None,
    ) -> None:
        super().__init__(message, code=code, status=status, index=index)
        self.path = path
        self.member = member


class TokenExpired(PathDBError):
    """A change token is older than the server's retention window (default 7 days), so changes
    after it may be gone (HTTP 410 `token_expired`): list the prefix again and follow from the
    new listing's `changes_token`."""


class Unavailable(PathDBError):
    """The server could not be reached or could not serve the request (HTTP 503 and other
    5xx); 503 is retried by the client before this is raised, except `outcome_unknown` and
    `alias_building`."""


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


class AliasBuilding(Unavailable):
    """A read through an alias path whose template's aliases are not all written yet (HTTP 503
    `alias_building`): `template` is the template, `state` `building` (its build is under way)
    or `conflict` (its build stopped: two items would share an alias), and `checked` how many
    items the build has checked. Not retried by the client: a build outlasts the client's
    backoff, and one in conflict waits for `retry_alias_build`. `wait_for_aliases(namespace)`
    waits for a namespace's builds (and raises this, with the state `conflict`, for one that
    stopped)."""

    def __init__(
        self,
        message: str,
        *,
        code: str = "alias_building",
        status: Optional[int] = 503,
        index: Optional[int] = None,
        template: Optional[str] = None,
        state: Optional[str] = None,
        checked: Optional[int] = None,
    ) -> None:
        super().__init__(message, code=code, status=status, index=index)
        self.template = template
        self.state = state
        self.checked = checked


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


def _str(value: object) -> Optional[str]:
    return value if isinstance(value, str) else None


def _path(value: object) -> Optional[KeyPath]:
    """A key path the server named, or None (not named, or not one)."""
    if not isinstance(value, str):
        return None
    try:
        return KeyPath.parse(value)
    except InvalidKeyPath:
        return None


def _schema_violation(
    status: int, message: str, index: Optional[int], detail: Mapping[str, Any]
) -> SchemaViolation:
    violations = detail.get("violations")
    path = _path(detail.get("path"))
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
    detail = detail or {}
    if code == "schema_violation":
        return _schema_violation(status, message, index, detail)
    if code == "alias_taken":
        return AliasTaken(
            message,
            status=status,
            index=index,
            alias=_path(detail.get("alias")),
            holder=_path(detail.get("holder")),
        )
    if code == "path_is_alias":
        return PathIsAlias(
            message,
            status=status,
            index=index,
            path=_path(detail.get("path")),
            item=_path(detail.get("item")),
        )
    if code == "alias_invalid":
        return AliasInvalid(
            message,
            status=status,
            index=index,
            path=_path(detail.get("path")),
            member=_str(detail.get("member")),
        )
    if code == "alias_building":
        return AliasBuilding(
            message,
            status=status,
            index=index,
            template=_str(detail.get("template")),
            state=_str(detail.get("state")),
            checked=_int(detail.get("checked")),
        )
    if code == "invalid_filter":
        return InvalidFilter(
            message, status=status, index=index, position=_int(detail.get("position"))
        )
    if code == "migration_failed":
        return MigrationFailed(message, status=status, index=index, path=_path(detail.get("path")))
    if code == "incompatible_schema":
        problems = detail.get("problems")
        listed = problems if isinstance(problems, list) else []
        return IncompatibleSchema(
            message,
            status=status,
            index=index,
            problems=[p for p in listed if isinstance(p, str)],
        )
    if status == 401:
        return Unauthorized(
            message, code=code, status=status, index=index, reason=_str(detail.get("reason"))
        )
    if status == 403:
        return Forbidden(
            message,
            code=code,
            status=status,
            index=index,
            operation=_str(detail.get("operation")),
            path=_path(detail.get("path")),
        )
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
    elif code == "builtin_role":
        kind = BuiltinRole
    elif code == "unknown_role":
        kind = UnknownRole
    elif code == "invalid_role":
        kind = InvalidRole
    elif code == "unknown_schema_version":
        kind = UnknownSchemaVersion
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
