"""The clients' core, without I/O: the request each call sends and how its answer reads, and
the plans of the calls that take more than one step (retries, paging, watches, waiting for alias
builds), which `Client` and `AsyncClient` (and the transactions) carry out over their own HTTP,
blocking or asyncio. So the two clients cannot disagree on the wire format, nor on what a call
does with its answers.

A plan is a generator: it yields a `_Request` and is sent its `httpx.Response`, or yields a
`_Sleep` and is sent None, and returns the call's value. `_Running` adds the retries to a plan:
it yields each attempt, and is sent its response or its transport error (handed back, not
raised), so a client's whole part is to carry out one step at a time.
"""

from __future__ import annotations

import json
import random
import re
import time
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import (
    Any,
    Awaitable,
    Callable,
    Deque,
    Dict,
    Generator,
    Generic,
    Iterable,
    List,
    Mapping,
    Optional,
    Protocol,
    Sequence,
    Tuple,
    TypeVar,
    Union,
    cast,
)
from urllib.parse import quote

import httpx

from ._errors import (
    AliasBuilding,
    Conflict,
    NotFound,
    OutcomeUnknown,
    PathDBError,
    Unavailable,
    error_for,
    not_pathdb,
)
from ._keypath import KeyPath, PathLike, _check_namespace, format_id, to_path
from ._model import (
    AliasTemplate,
    Fields,
    Formats,
    Change,
    ChangePage,
    Entry,
    IdKind,
    IssuedToken,
    Item,
    MigrationStep,
    NamespaceDefinition,
    NamespacePage,
    Op,
    Page,
    Role,
    RuleLike,
    Schema,
    SchemaCheck,
    Session,
    TokenInfo,
    VarValue,
    ViolatingItem,
    ViolationsPage,
    alias_template,
    change_from_wire,
    check_filter,
    check_namespace,
    create_target,
    entry_from_wire,
    fields_param,
    migration_steps,
    _micros,
    rule_wire,
)

T = TypeVar("T")
E = TypeVar("E")

DEFAULT_PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000
DEFAULT_WATCH_WAIT = 30
"""Seconds a `watch` long poll waits for a change before asking again (the server allows 60)."""
JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"


_ROLE_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")


def url_path(path: KeyPath) -> str:
    """The path as it goes in a URL: each element percent-encoded on its own, so `/` and `%`
    inside ids become `%2F` and `%25`, and only the separators stay `/`."""
    parts = []
    for e in path.elements:
        text = e.namespace if e.id is None else f"{e.namespace}-{format_id(e.id)}"
        parts.append(quote(text, safe="!-_.~"))
    return "/".join(parts)


@dataclass
class _Request:
    method: str
    route: str
    params: Dict[str, str] = field(default_factory=dict)
    headers: Dict[str, str] = field(default_factory=dict)
    body: Optional[bytes] = None
    retry_conflict: bool = False
    # Seconds the server may hold the answer back (a long poll), added to the client's timeout.
    wait: Optional[int] = None
    # Takes as long as the work takes (a subtree job): no timeout.
    unbounded: bool = False


def _paged(request: _Request, page_size: Optional[int], page_token: Optional[str]) -> _Request:
    """`request` with a page's `limit` and `page_token`, where given."""
    if page_size is not None:
        request.params["limit"] = str(int(page_size))
    if page_token is not None:
        request.params["page_token"] = page_token
    return request


def _filtered(
    request: _Request,
    filter: Optional[str] = None,
    fields: Optional[Fields] = None,
    max_scan: Optional[int] = None,
) -> _Request:
    """`request` with a `filter`, `fields` and `max_scan`, where given (docs/filters.md)."""
    filter = check_filter(filter)
    if filter is not None:
        request.params["filter"] = filter
    if fields is not None:
        request.params["fields"] = fields_param(fields)
    if max_scan is not None:
        request.params["max_scan"] = str(int(max_scan))
    return request


def _json_body(value: Any) -> bytes:
    return json.dumps(value, allow_nan=False, separators=(",", ":"), ensure_ascii=False).encode()


def _flag(params: Dict[str, str], name: str, on: bool) -> None:
    if on:
        params[name] = "true"


@dataclass(frozen=True)
class _Sleep:
    """A plan's pause, in seconds."""

    seconds: float


_Step = Union[_Request, _Sleep]

Plan = Generator[_Step, Optional[httpx.Response], T]
"""A call's steps: a request is answered with its response, a pause with None."""

_Reply = Union[httpx.Response, httpx.TransportError, None]
"""What a client hands back for a step: a response, the transport error that stopped a request
before any answer, or None after a pause."""


def _fetch(request: _Request) -> Plan[httpx.Response]:
    """Sends `request`: its response."""
    response = yield request
    assert response is not None, "a request's step is answered with its response"
    return response


def _call(request: _Request, parse: Callable[[httpx.Response], T]) -> Plan[T]:
    """A call of one request: what `parse` reads in its response."""
    return parse((yield from _fetch(request)))


class _Runner(Protocol):
    """What runs a plan to its end, blocking: `Client`."""

    def _run(self, plan: Plan[T]) -> T: ...


class _AsyncRunner(Protocol):
    """What runs a plan to its end, awaited: `AsyncClient`."""

    def _run(self, plan: Plan[T]) -> Awaitable[T]: ...


class _Api:
    """Requests and answers, without I/O."""

    @staticmethod
    def put(
        path: PathLike,
        value: Any,
        must_not_exist: bool,
        if_version: Optional[int],
        history: bool,
        ttl_seconds: Optional[int],
    ) -> _Request:
        if must_not_exist and if_version is not None:
            raise ValueError("give at most one of must_not_exist and if_version")
        request = _Request(
            "PUT",
            "/v1/items/" + url_path(to_path(path)),
            headers={"Content-Type": "application/json"},
            body=_json_body(value),
            retry_conflict=True,
        )
        if must_not_exist:
            request.headers["If-None-Match"] = "*"
        if if_version is not None:
            request.headers["If-Match"] = f'"{int(if_version)}"'
        _flag(request.params, "history", history)
        if ttl_seconds is not None:
            request.params["ttl_seconds"] = str(int(ttl_seconds))
        return request

    @staticmethod
    def patch(
        path: PathLike,
        media_type: str,
        document: Any,
        must_not_exist: bool,
        if_version: Optional[int],
        create: bool,
        history: bool,
        ttl_seconds: Optional[int],
    ) -> _Request:
        # The conditions, history and TTL as on a put; a patch that met a concurrent write
        # wrote nothing, so it is retried like one.
        request = _Api.put(path, document, must_not_exist, if_version, history, ttl_seconds)
        request.method = "PATCH"
        request.headers["Content-Type"] = media_type
        _flag(request.params, "create", create)
        return request

    @staticmethod
    def get(path: PathLike, version: Optional[int], fields: Optional[Fields] = None) -> _Request:
        request = _Request("GET", "/v1/items/" + url_path(to_path(path)))
        if version is not None:
            request.params["version"] = str(int(version))
        return _filtered(request, fields=fields)

    @staticmethod
    def delete(path: PathLike, if_version: Optional[int]) -> _Request:
        request = _Request("DELETE", "/v1/items/" + url_path(to_path(path)), retry_conflict=True)
        if if_version is not None:
            request.headers["If-Match"] = f'"{int(if_version)}"'
        return request

    @staticmethod
    def delete_subtree(path: PathLike) -> _Request:
        request = _Request("DELETE", "/v1/items/" + url_path(to_path(path)), unbounded=True)
        request.params["recursive"] = "true"
        return request

    @staticmethod
    def relocate(route: str, path: PathLike, to: PathLike) -> _Request:
        return _Request(
            "POST",
            route,
            headers={"Content-Type": "application/json"},
            body=_json_body({"from": str(to_path(path)), "to": str(to_path(to))}),
            unbounded=True,
        )

    @staticmethod
    def counted(name: str) -> Callable[[httpx.Response], int]:
        """How a subtree job's answer reads: the count it gives as `name`."""
        return lambda response: int(_Api.body(response)[name])

    @staticmethod
    def get_many(
        paths: Sequence[KeyPath], filter: Optional[str] = None, fields: Optional[Fields] = None
    ) -> _Request:
        request = _Request(
            "POST",
            "/v1/get",
            headers={"Content-Type": "application/json"},
            body=_json_body({"paths": [str(p) for p in paths]}),
        )
        return _filtered(request, filter, fields)

    @staticmethod
    def list_page(
        prefix: PathLike,
        children: bool,
        reverse: bool,
        gt: Optional[PathLike],
        gte: Optional[PathLike],
        lt: Optional[PathLike],
        lte: Optional[PathLike],
        page_size: Optional[int],
        page_token: Optional[str],
        filter: Optional[str] = None,
        fields: Optional[Fields] = None,
        max_scan: Optional[int] = None,
    ) -> _Request:
        request = _Request("GET", "/v1/list/" + url_path(to_path(prefix)))
        _flag(request.params, "children", children)
        _flag(request.params, "reverse", reverse)
        for name, bound in (("gt", gt), ("gte", gte), ("lt", lt), ("lte", lte)):
            if bound is not None:
                request.params[name] = str(to_path(bound))
        _filtered(request, filter, fields, max_scan)
        return _paged(request, page_size, page_token)

    @staticmethod
    def count(
        prefix: PathLike,
        children: bool,
        gt: Optional[PathLike],
        gte: Optional[PathLike],
        lt: Optional[PathLike],
        lte: Optional[PathLike],
        filter: Optional[str],
        max_scan: Optional[int],
        page_token: Optional[str],
    ) -> _Request:
        """One page of a count: `GET /v1/list/{prefix}?count=true`."""
        request = _Api.list_page(
            prefix, children, False, gt, gte, lt, lte, None, page_token, filter, None, max_scan
        )
        request.params["count"] = "true"
        return request

    @staticmethod
    def counted_page(response: httpx.Response) -> Tuple[int, Optional[str]]:
        """A count page's answer: how many matched, and the token to count on from (None at
        the end)."""
        body = _Api.body(response)
        return int(body["count"]), body.get("next_page_token")

    @staticmethod
    def create(
        parent: Optional[PathLike],
        namespace: str,
        value: Any,
        id: IdKind,
        history: bool,
        ttl_seconds: Optional[int],
    ) -> _Request:
        target = create_target(parent, namespace)
        request = _Request(
            "POST",
            "/v1/items/" + url_path(target),
            params={"id": str(id)},
            headers={"Content-Type": "application/json"},
            body=_json_body(value),
            # A create that met a concurrent write wrote nothing; trying again draws a new id.
            retry_conflict=True,
        )
        _flag(request.params, "history", history)
        if ttl_seconds is not None:
            request.params["ttl_seconds"] = str(int(ttl_seconds))
        return request

    @staticmethod
    def changes(
        prefix: PathLike,
        since: Optional[str],
        limit: Optional[int],
        wait: Optional[int],
        filter: Optional[str] = None,
    ) -> _Request:
        request = _Request("GET", "/v1/changes/" + url_path(to_path(prefix)))
        _filtered(request, filter)
        if since is not None:
            request.params["since"] = since
        if limit is not None:
            request.params["limit"] = str(int(limit))
        if wait is not None and since is not None:
            request.params["wait"] = str(int(wait))
            request.wait = int(wait)
        return request

    @staticmethod
    def change_page(response: httpx.Response) -> ChangePage:
        body = _Api.body(response)
        return ChangePage(
            changes=[change_from_wire(c) for c in body["changes"]],
            next_token=str(body["next_token"]),
        )

    @staticmethod
    def history(path: PathLike, limit: Optional[int]) -> _Request:
        request = _Request("GET", "/v1/history/" + url_path(to_path(path)))
        if limit is not None:
            request.params["limit"] = str(int(limit))
        return request

    @staticmethod
    def transact(ops: Iterable[Op]) -> _Request:
        return _Request(
            "POST",
            "/v1/transact",
            headers={"Content-Type": "application/json"},
            body=_json_body({"ops": [op.to_wire() for op in ops]}),
        )

    @staticmethod
    def namespace_route(namespace: str) -> str:
        check_namespace(namespace)  # letters, digits and '_': nothing to escape
        return "/v1/namespaces/" + namespace

    @staticmethod
    def get_namespace(namespace: str) -> _Request:
        return _Request("GET", _Api.namespace_route(namespace))

    @staticmethod
    def list_namespaces(page_size: Optional[int], page_token: Optional[str]) -> _Request:
        request = _Request("GET", "/v1/namespaces")
        return _paged(request, page_size, page_token)

    @staticmethod
    def namespace_page(response: httpx.Response) -> NamespacePage:
        body = _Api.body(response)
        return NamespacePage(
            namespaces=[NamespaceDefinition.from_wire(d) for d in body["namespaces"]],
            next_page_token=body.get("next_page_token"),
        )

    @staticmethod
    def definition_or_none(response: httpx.Response) -> Optional[NamespaceDefinition]:
        if response.status_code == 404:
            error = _Api.error(response)
            if isinstance(error, NotFound):
                return None
            raise error
        return NamespaceDefinition.from_wire(_Api.body(response))

    @staticmethod
    def put_namespace(
        namespace: str,
        schema: Optional[Schema],
        history: Optional[int],
        description: Optional[str],
        aliases: Optional[Sequence[AliasTemplate]],
        must_not_exist: bool,
        if_version: Optional[int],
        dry_run: bool,
        migrate: Optional[Sequence[MigrationStep]],
        formats: Optional[Formats],
        changes: Optional[bool],
        force: bool,
    ) -> _Request:
        if must_not_exist and if_version is not None:
            raise ValueError("give at most one of must_not_exist and if_version")
        definition: Dict[str, Any] = {}
        if schema is not None:
            definition["schema"] = schema
        if history is not None:
            definition["history"] = int(history)
        if description is not None:
            definition["description"] = description
        if aliases:  # none: left out, which a server from before aliases also takes
            definition["aliases"] = [{"path": alias_template(a)} for a in aliases]
        # None (and no steps): left out, which a server from before migrations also takes.
        if migrate is not None:
            steps = migration_steps(migrate)
            if steps:
                definition["migrate"] = steps
        if formats is not None:
            if not isinstance(formats, str):
                raise TypeError(f'formats is "assert" or "annotate", not {formats!r:.80}')
            definition["formats"] = formats
        # None: left out (the groups keep a change log), which a server from before also takes.
        if changes is not None:
            if not isinstance(changes, bool):
                raise TypeError(f"changes is a bool, not {changes!r:.80}")
            definition["changes"] = changes
        request = _Request(
            "PUT",
            _Api.namespace_route(namespace),
            headers={"Content-Type": "application/json"},
            body=_json_body(definition),
        )
        if must_not_exist:
            request.headers["If-None-Match"] = "*"
        if if_version is not None:
            request.headers["If-Match"] = f'"{int(if_version)}"'
        _flag(request.params, "dry_run", dry_run)
        _flag(request.params, "force", force)
        return request

    @staticmethod
    def retry_alias_build(namespace: str, template: str) -> _Request:
        if not isinstance(template, str):
            raise TypeError(f"an alias template is a str, not {type(template).__name__}")
        return _Request(
            "POST",
            _Api.namespace_route(namespace) + "/aliases/retry",
            headers={"Content-Type": "application/json"},
            body=_json_body({"path": template}),
        )

    @staticmethod
    def aliases_ready(
        namespace: str,
        definition: Optional[NamespaceDefinition],
        deadline: Optional[float],
        interval: float,
    ) -> Optional[NamespaceDefinition]:
        """`definition` when every alias template of it is ready, None to read it again after
        `interval` seconds. Raises `AliasBuilding` for a build that stopped in conflict, or one
        still building at `deadline` (a `time.monotonic()`), `NotFound` without a definition."""
        if definition is None:
            raise NotFound(f"namespace {namespace} has no definition", code="not_found")
        # A template being removed is already gone for reads: nothing to wait for.
        waiting = [b for b in definition.aliases if b.state not in ("ready", "removing")]
        if not waiting:
            return definition
        stopped = [b for b in waiting if b.state == "conflict"]
        if not stopped and (deadline is None or time.monotonic() + interval <= deadline):
            return None
        build = (stopped or waiting)[0]
        if stopped:
            shown = "; ".join(
                f"{c.alias} for {', '.join(str(i) for i in c.items)}" for c in build.conflicts
            )
            message = (
                f"the build of alias template {build.path} of namespace {namespace} stopped:"
                f" items would share an alias ({shown or 'see get_namespace'}); fix them, then"
                " retry_alias_build"
            )
        else:
            message = (
                f"the aliases of template {build.path} of namespace {namespace} are still being"
                f" built ({build.checked} items checked)"
            )
        raise AliasBuilding(
            message, status=None, template=build.path, state=build.state, checked=build.checked
        )

    @staticmethod
    def delete_namespace(namespace: str, if_version: Optional[int]) -> _Request:
        request = _Request("DELETE", _Api.namespace_route(namespace))
        if if_version is not None:
            request.headers["If-Match"] = f'"{int(if_version)}"'
        return request

    @staticmethod
    def deleted(response: httpx.Response) -> bool:
        if response.status_code == 404:
            error = _Api.error(response)
            if isinstance(error, NotFound):
                return False
            raise error
        _Api.checked(response)
        return True

    @staticmethod
    def schema_check(response: httpx.Response) -> SchemaCheck:
        body = _Api.body(response)
        return SchemaCheck(
            checked=int(body["checked"]),
            violating=int(body["violating"]),
            first=[ViolatingItem.from_wire(i) for i in body["first"]],
            problems=[p for p in body.get("problems") or [] if isinstance(p, str)],
        )

    @staticmethod
    def namespace_violations(
        namespace: str, page_size: Optional[int], page_token: Optional[str]
    ) -> _Request:
        request = _Request("GET", _Api.namespace_route(namespace) + "/violations")
        return _paged(request, page_size, page_token)

    @staticmethod
    def violations_page(response: httpx.Response) -> ViolationsPage:
        body = _Api.body(response)
        return ViolationsPage(
            items=[ViolatingItem.from_wire(i) for i in body["items"]],
            checked=int(body.get("checked", 0)),
            next_page_token=body.get("next_page_token"),
        )

    @staticmethod
    def role_route(name: str) -> str:
        if not isinstance(name, str) or not _ROLE_NAME.fullmatch(name) or name in (".", ".."):
            raise ValueError(f"a role name is 1 to 64 letters, digits, '_', '-', '.', not {name!r:.80}")
        return "/v1/roles/" + name  # nothing to escape

    @staticmethod
    def list_roles() -> _Request:
        return _Request("GET", "/v1/roles")

    @staticmethod
    def roles(response: httpx.Response) -> List[Role]:
        return [Role.from_wire(r) for r in _Api.body(response)["roles"]]

    @staticmethod
    def get_role(name: str) -> _Request:
        return _Request("GET", _Api.role_route(name))

    @staticmethod
    def role(response: httpx.Response) -> Role:
        return Role.from_wire(_Api.body(response))

    @staticmethod
    def role_or_none(response: httpx.Response) -> Optional[Role]:
        if response.status_code == 404:
            error = _Api.error(response)
            if isinstance(error, NotFound):
                return None
            raise error
        return Role.from_wire(_Api.body(response))

    @staticmethod
    def put_role(
        name: str,
        rules: Iterable[RuleLike],
        description: Optional[str],
        must_not_exist: bool,
        if_version: Optional[int],
    ) -> _Request:
        if must_not_exist and if_version is not None:
            raise ValueError("give at most one of must_not_exist and if_version")
        if isinstance(rules, (str, bytes, dict)):
            raise TypeError("rules is a list of rules, not one")
        body: Dict[str, Any] = {"rules": [rule_wire(r) for r in rules]}
        if description is not None:
            body["description"] = description
        request = _Request(
            "PUT",
            _Api.role_route(name),
            headers={"Content-Type": "application/json"},
            body=_json_body(body),
        )
        if must_not_exist:
            request.headers["If-None-Match"] = "*"
        if if_version is not None:
            request.headers["If-Match"] = f'"{int(if_version)}"'
        return request

    @staticmethod
    def delete_role(name: str, if_version: Optional[int]) -> _Request:
        request = _Request("DELETE", _Api.role_route(name))
        if if_version is not None:
            request.headers["If-Match"] = f'"{int(if_version)}"'
        return request

    @staticmethod
    def token_route(id: str) -> str:
        if not isinstance(id, str) or not id:
            raise ValueError(f"a token id is a non-empty str, not {id!r:.80}")
        return "/v1/tokens/" + quote(id, safe="")

    @staticmethod
    def create_token(
        role: str,
        vars: Optional[Mapping[str, VarValue]],
        expires_at: Optional[datetime],
        description: Optional[str],
    ) -> _Request:
        body: Dict[str, Any] = {"role": role}
        if vars is not None:
            body["vars"] = dict(vars)
        if expires_at is not None:
            body["expires_at"] = _micros(expires_at)
        if description is not None:
            body["description"] = description
        return _Request(
            "POST", "/v1/tokens", headers={"Content-Type": "application/json"}, body=_json_body(body)
        )

    @staticmethod
    def issued(response: httpx.Response) -> IssuedToken:
        return IssuedToken.from_wire(_Api.body(response))

    @staticmethod
    def list_tokens() -> _Request:
        return _Request("GET", "/v1/tokens")

    @staticmethod
    def tokens(response: httpx.Response) -> List[TokenInfo]:
        return [TokenInfo.from_wire(t) for t in _Api.body(response)["tokens"]]

    @staticmethod
    def get_token(id: str) -> _Request:
        return _Request("GET", _Api.token_route(id))

    @staticmethod
    def token_or_none(response: httpx.Response) -> Optional[TokenInfo]:
        if response.status_code == 404:
            error = _Api.error(response)
            if isinstance(error, NotFound):
                return None
            raise error
        return TokenInfo.from_wire(_Api.body(response))

    @staticmethod
    def revoke_token(id: str) -> _Request:
        return _Request("DELETE", _Api.token_route(id))

    @staticmethod
    def session() -> _Request:
        return _Request("GET", "/v1/session")

    @staticmethod
    def session_of(response: httpx.Response) -> Session:
        return Session.from_wire(_Api.body(response))

    @staticmethod
    def error(response: httpx.Response) -> PathDBError:
        """The exception for an error answer: PathDB's own, or `NotPathDB` for an answer
        without PathDB's JSON error body (another program on the address)."""
        try:
            detail = response.json()["error"]
            code, message = str(detail["code"]), str(detail["message"])
        except (ValueError, KeyError, TypeError):
            return _Api.foreign(response)
        index = detail.get("index")
        if isinstance(index, bool) or not isinstance(index, int):
            index = None
        return error_for(response.status_code, code, message, index, detail)

    @staticmethod
    def foreign(response: httpx.Response) -> PathDBError:
        url = response.request.url
        server = f"{url.scheme}://{url.netloc.decode('ascii')}"
        content_type = response.headers.get("content-type", "")
        return not_pathdb(server, response.status_code, content_type, response.text)

    @staticmethod
    def should_retry(request: _Request, response: httpx.Response) -> bool:
        if response.status_code == 503:
            # A write whose outcome is unknown may have been made: retrying could apply it twice.
            # An alias build takes longer than the backoff (and one in conflict waits for a
            # retry): `wait_for_aliases` is the way to wait for it.
            return not isinstance(_Api.error(response), (OutcomeUnknown, AliasBuilding))
        if response.status_code == 409 and request.retry_conflict:
            return isinstance(_Api.error(response), Conflict)
        return False

    @staticmethod
    def item(response: httpx.Response) -> Item:
        return Item.from_wire(_Api.body(response))

    @staticmethod
    def items(response: httpx.Response) -> List[Item]:
        return [Item.from_wire(i) for i in _Api.body(response)["items"]]

    @staticmethod
    def definition(response: httpx.Response) -> NamespaceDefinition:
        return NamespaceDefinition.from_wire(_Api.body(response))

    @staticmethod
    def item_or_none(response: httpx.Response) -> Optional[Item]:
        if response.status_code == 404:
            error = _Api.error(response)
            # Only PathDB's 404 means "no item"; another server's 404 page is not an answer.
            if isinstance(error, NotFound):
                return None
            raise error
        return Item.from_wire(_Api.body(response))

    @staticmethod
    def checked(response: httpx.Response) -> httpx.Response:
        if response.status_code >= 400 or response.status_code == 304:
            raise _Api.error(response)
        return response

    @staticmethod
    def body(response: httpx.Response) -> Any:
        """A success's JSON body. A success that is not JSON comes from another program."""
        _Api.checked(response)
        essence = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if essence != "application/json":
            raise _Api.foreign(response)
        try:
            return response.json()
        except ValueError:
            raise _Api.foreign(response) from None

    @staticmethod
    def many(paths: Sequence[KeyPath]) -> Callable[[httpx.Response], List[Optional[Item]]]:
        """How the answer to `get_many(paths)` reads: the item at each path, or None."""

        def parse(response: httpx.Response) -> List[Optional[Item]]:
            found = {}
            for body in _Api.body(response)["items"]:
                item = Item.from_wire(body)
                # An item read through an alias answers that path.
                found[item.path if item.alias is None else item.alias] = item
            return [found.get(p) for p in paths]

        return parse

    @staticmethod
    def page(response: httpx.Response) -> Page[Entry]:
        body = _Api.body(response)
        scanned = body.get("scanned")
        return Page(
            items=[entry_from_wire(i) for i in body["items"]],
            next_page_token=body.get("next_page_token"),
            changes_token=body.get("changes_token"),
            scanned=None if scanned is None else int(scanned),
        )

    @staticmethod
    def results(response: httpx.Response) -> List[Optional[Item]]:
        out: List[Optional[Item]] = []
        for result in _Api.body(response)["results"]:
            if result["op"] == "put":
                out.append(Item.from_wire(result["item"]))
            elif result["op"] == "delete" and result.get("deleted") is not None:
                out.append(Item.from_wire(result["deleted"]))
            else:
                out.append(None)
        return out



def _count(
    prefix: PathLike,
    children: bool,
    gt: Optional[PathLike],
    gte: Optional[PathLike],
    lt: Optional[PathLike],
    lte: Optional[PathLike],
    filter: Optional[str],
    max_scan: Optional[int],
) -> Plan[int]:
    """How many items under `prefix` match `filter` (all of them without one): the counts of
    each page of the range, following `next_page_token` (see `Client.count`)."""
    total = 0
    token: Optional[str] = None
    while True:
        request = _Api.count(prefix, children, gt, gte, lt, lte, filter, max_scan, token)
        count, token = yield from _call(request, _Api.counted_page)
        total += count
        if token is None:
            return total


def _wait_for_aliases(
    namespace: str, timeout: Optional[float], interval: float
) -> Plan[NamespaceDefinition]:
    """Reads the definition of `namespace` every `interval` seconds until its alias templates are
    ready (see `Client.wait_for_aliases`)."""
    if interval <= 0:
        raise ValueError("interval is more than 0 seconds")
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        definition = yield from _call(_Api.get_namespace(namespace), _Api.definition_or_none)
        ready = _Api.aliases_ready(namespace, definition, deadline, interval)
        if ready is not None:
            return ready
        yield _Sleep(interval)


class _Position:
    """A watch's place in the feed: the changes read but not yet handed out, and the token to
    resume from, which only moves past a page once all of it was handed out."""

    def __init__(self, since: Optional[str]) -> None:
        self.token = since
        self._pending: Deque[Change] = deque()
        self._after: Optional[str] = None

    def take(self) -> Optional[Change]:
        if not self._pending:
            return None
        change = self._pending.popleft()
        if not self._pending:
            self.token = self._after
        return change

    def read(self, page: ChangePage) -> None:
        self._pending.extend(page.changes)
        self._after = page.next_token
        if not self._pending:
            self.token = page.next_token


    def next(
        self, prefix: KeyPath, wait: int, limit: Optional[int], filter: Optional[str] = None
    ) -> Plan[Change]:
        """The next change under `prefix` (that matters to `filter`), long-polling the feed
        (`wait` seconds) until one comes; without a token yet, the feed's current position is
        where it starts."""
        while True:
            change = self.take()
            if change is not None:
                return change
            since = self.token
            if since is None:
                now = yield from _call(
                    _Api.changes(prefix, None, None, None, filter), _Api.change_page
                )
                since = now.next_token
            request = _Api.changes(prefix, since, limit, wait, filter)
            page = yield from _call(request, _Api.change_page)
            self.token = since
            self.read(page)


class _Pages:
    """Where a listing that follows page tokens stands: the next page's size and token, and
    whether it is done (no next page, or `limit` entries handed out)."""

    def __init__(self, page_size: Optional[int], limit: Optional[int]) -> None:
        self._page_size = page_size
        self._remaining = limit
        self.token: Optional[str] = None
        self.done = limit is not None and limit <= 0

    @property
    def size(self) -> Optional[int]:
        """The next page's `page_size`: at most what remains of the limit."""
        if self._remaining is None:
            return self._page_size
        return min(self._page_size or DEFAULT_PAGE_SIZE, self._remaining, MAX_PAGE_SIZE)

    def take(self, entries: Sequence[E], next_page_token: Optional[str]) -> Sequence[E]:
        """A page's entries to hand out (those within the limit); moves on to the next page."""
        out = entries[: self._remaining]
        if self._remaining is not None:
            self._remaining -= len(entries)
        self.token = next_page_token
        self.done = next_page_token is None or (
            self._remaining is not None and self._remaining <= 0
        )
        return out


def schema_version_header(versions: Mapping[str, int]) -> Optional[str]:
    """The `Schema-Version` header that speaks `versions` (`{"user": 1, "order": 3}` ->
    `user=1, order=3`), or None for none (the server's newest of every namespace). Raises
    `ValueError` for a name that is not a namespace or a version that is not 1, 2, ..."""
    parts = []
    for namespace, version in versions.items():
        if not isinstance(namespace, str) or _check_namespace(namespace) is not None:
            raise ValueError(f"schema_versions: {namespace!r} is not a namespace")
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise ValueError(
                f"schema_versions: the version of {namespace} is {version!r}, not 1, 2, ..."
            )
        parts.append(f"{namespace}={version}")
    return ", ".join(parts) if parts else None


class _Base:
    """What both clients hold, without I/O: the server's address and headers, the retry policy
    (which `_Running` follows) and the timeouts."""

    def __init__(
        self,
        url: str,
        token: Optional[str],
        retries: int,
        backoff: float,
        timeout: float,
        schema_versions: Optional[Mapping[str, int]] = None,
    ) -> None:
        if retries < 0 or backoff < 0:
            raise ValueError("retries and backoff cannot be negative")
        self.url = url.rstrip("/")
        self.retries = retries
        self.backoff = backoff
        self.timeout = timeout
        # Read-only: the header is made once, here.
        self.schema_versions: Mapping[str, int] = MappingProxyType(dict(schema_versions or {}))
        self._headers: Dict[str, str] = {"Accept": "application/json"}
        if token is not None:
            self._headers["Authorization"] = f"Bearer {token}"
        header = schema_version_header(self.schema_versions)
        if header is not None:
            self._headers["Schema-Version"] = header

    def _delay(self, attempt: int) -> float:
        """Exponential backoff with full jitter."""
        return float(random.uniform(0, self.backoff * (2**attempt)))

    def _timeout(self, request: _Request) -> Union[float, None, httpx._client.UseClientDefault]:
        """A long poll's timeout: the client's, plus the time the server may wait; none for a
        subtree job, which takes as long as its batches take."""
        if request.unbounded:
            return None
        if request.wait is None:
            return httpx.USE_CLIENT_DEFAULT
        return self.timeout + request.wait

    def _request_args(self, request: _Request) -> Dict[str, Any]:
        """The arguments of `httpx.Client.request` (and `httpx.AsyncClient.request`)."""
        return {
            "method": request.method,
            "url": request.route,
            "params": request.params,
            "headers": request.headers,
            "content": request.body,
            "timeout": self._timeout(request),
        }


class _Running(Generic[T]):
    """A plan under way, with the client's retries: `step` takes what the previous step gave
    (None at first) and returns the next one, or None when the plan is done, with its `value`.

    A kept-alive connection the server closed (it does after refusing a request whose body it
    did not read) fails the next request before any answer: that request was never served, so
    it is sent once more (on a new connection). Any other transport error is `Unavailable`.
    """

    def __init__(self, plan: Plan[T], client: _Base) -> None:
        self._steps = self._retried(plan, client)
        self._value: Optional[T] = None

    @property
    def value(self) -> T:
        """The plan's value, once `step` returned None."""
        return cast(T, self._value)

    def step(self, reply: _Reply) -> Optional[_Step]:
        try:
            return self._steps.send(reply)
        except StopIteration as stop:
            self._value = stop.value
            return None

    @staticmethod
    def _retried(plan: Plan[T], client: _Base) -> Generator[_Step, _Reply, T]:
        """`plan` with each request sent by `_exchange`."""
        answer: Optional[httpx.Response] = None
        while True:
            try:
                step = plan.send(answer)
            except StopIteration as stop:
                value: T = stop.value
                return value
            if isinstance(step, _Sleep):
                yield step
                answer = None
            else:
                answer = yield from _Running._exchange(step, client)

    @staticmethod
    def _exchange(request: _Request, client: _Base) -> Generator[_Step, _Reply, httpx.Response]:
        """The response to `request`, after the retries of a conflict or a 503 that may be
        retried, and the resending of a request a closed connection never served."""
        attempt = 0
        reconnected = False
        while True:
            reply = yield request
            if isinstance(reply, httpx.RemoteProtocolError) and not reconnected:
                reconnected = True
                continue
            if isinstance(reply, httpx.RemoteProtocolError):
                raise Unavailable(f"{client.url}: {reply}", code="unreachable") from reply
            if isinstance(reply, httpx.TransportError):
                message = f"cannot reach {client.url}: {reply}"
                raise Unavailable(message, code="unreachable") from reply
            assert reply is not None, "a request's step is answered"
            if attempt >= client.retries or not _Api.should_retry(request, reply):
                return reply
            yield _Sleep(client._delay(attempt))
            attempt += 1
