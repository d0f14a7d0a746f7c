"""The HTTP clients: `Client` (blocking) and `AsyncClient` (asyncio), with the same methods.

Both build requests and read answers through `_Api`, so they cannot disagree on the wire format.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections import deque
from dataclasses import dataclass, field
from typing import (
    Any,
    AsyncIterator,
    Awaitable,
    Callable,
    Deque,
    Dict,
    Iterable,
    Iterator,
    List,
    Literal,
    Optional,
    Sequence,
    Type,
    TypeVar,
    Union,
    overload,
)
from urllib.parse import quote

import httpx

from ._errors import (
    AliasBuilding,
    ConditionFailed,
    Conflict,
    NotFound,
    OutcomeUnknown,
    PathDBError,
    Unavailable,
    error_for,
    not_pathdb,
)
from ._keypath import KeyPath, PathLike, format_id, to_path
from ._model import (
    AliasTemplate,
    Change,
    ChangePage,
    Entry,
    IdKind,
    Item,
    NamespaceDefinition,
    NamespacePage,
    Node,
    Op,
    Page,
    PatchOperation,
    Schema,
    SchemaCheck,
    V,
    ViolatingItem,
    ViolationsPage,
    alias_template,
    change_from_wire,
    check_namespace,
    create_target,
    entry_from_wire,
    increment_operation,
)
from ._transaction import (
    MAX_TRANSACTION_ATTEMPTS,
    AsyncTransaction,
    Transaction,
    backoff_ceiling,
)

T = TypeVar("T")
W = TypeVar("W")

JsonValue = Union[Dict[str, Any], List[Any], str, int, float, bool, None]
"""A value as JSON reads it: what `put` and `create` type as `Item[Any]`, like before values
had types. Any other value (a TypedDict's, say) gives an `Item` of its own type."""

DEFAULT_PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000
DEFAULT_WATCH_WAIT = 30
"""Seconds a `watch` long poll waits for a change before asking again (the server allows 60)."""
JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"


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


def _json_body(value: Any) -> bytes:
    return json.dumps(value, allow_nan=False, separators=(",", ":"), ensure_ascii=False).encode()


def _flag(params: Dict[str, str], name: str, on: bool) -> None:
    if on:
        params[name] = "true"


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
    def get(path: PathLike, version: Optional[int]) -> _Request:
        request = _Request("GET", "/v1/items/" + url_path(to_path(path)))
        if version is not None:
            request.params["version"] = str(int(version))
        return request

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
    def count(response: httpx.Response, name: str) -> int:
        return int(_Api.body(response)[name])

    @staticmethod
    def get_many(paths: Sequence[KeyPath]) -> _Request:
        return _Request(
            "POST",
            "/v1/get",
            headers={"Content-Type": "application/json"},
            body=_json_body({"paths": [str(p) for p in paths]}),
        )

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
    ) -> _Request:
        request = _Request("GET", "/v1/list/" + url_path(to_path(prefix)))
        _flag(request.params, "children", children)
        _flag(request.params, "reverse", reverse)
        for name, bound in (("gt", gt), ("gte", gte), ("lt", lt), ("lte", lte)):
            if bound is not None:
                request.params[name] = str(to_path(bound))
        return _paged(request, page_size, page_token)

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
        prefix: PathLike, since: Optional[str], limit: Optional[int], wait: Optional[int]
    ) -> _Request:
        request = _Request("GET", "/v1/changes/" + url_path(to_path(prefix)))
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
    def many(paths: Sequence[KeyPath], response: httpx.Response) -> List[Optional[Item]]:
        found = {}
        for body in _Api.body(response)["items"]:
            item = Item.from_wire(body)
            # An item read through an alias answers that path.
            found[item.path if item.alias is None else item.alias] = item
        return [found.get(p) for p in paths]

    @staticmethod
    def page(response: httpx.Response) -> Page[Entry]:
        body = _Api.body(response)
        return Page(
            items=[entry_from_wire(i) for i in body["items"]],
            next_page_token=body.get("next_page_token"),
            changes_token=body.get("changes_token"),
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


class Watch:
    """The changes under a prefix, as they commit: an endless iterator that long-polls (see
    `Client.watch`). `token` is where to resume after the changes handed out so far (it may
    repeat some of them when the loop stopped inside a page, never skip one)."""

    def __init__(
        self,
        client: Client,
        prefix: PathLike,
        since: Optional[str],
        wait: int,
        limit: Optional[int],
    ) -> None:
        if wait < 1:
            raise ValueError("a watch's long polls wait 1 second or more (60 at most)")
        self._client = client
        self._prefix = to_path(prefix)
        self._wait = wait
        self._limit = limit
        self._position = _Position(since)

    @property
    def token(self) -> Optional[str]:
        """Where to resume from (None before the first read when started without `since`)."""
        return self._position.token

    def __iter__(self) -> Watch:
        return self

    def __next__(self) -> Change:
        while True:
            change = self._position.take()
            if change is not None:
                return change
            since = self._position.token
            if since is None:
                since = self._client.changes(self._prefix).next_token
            page = self._client.changes(self._prefix, since, limit=self._limit, wait=self._wait)
            self._position.token = since
            self._position.read(page)


class AsyncWatch:
    """The asyncio twin of `Watch`: `async for change in db.watch(prefix)`."""

    def __init__(
        self,
        client: AsyncClient,
        prefix: PathLike,
        since: Optional[str],
        wait: int,
        limit: Optional[int],
    ) -> None:
        if wait < 1:
            raise ValueError("a watch's long polls wait 1 second or more (60 at most)")
        self._client = client
        self._prefix = to_path(prefix)
        self._wait = wait
        self._limit = limit
        self._position = _Position(since)

    @property
    def token(self) -> Optional[str]:
        """See `Watch.token`."""
        return self._position.token

    def __aiter__(self) -> AsyncWatch:
        return self

    async def __anext__(self) -> Change:
        while True:
            change = self._position.take()
            if change is not None:
                return change
            since = self._position.token
            if since is None:
                since = (await self._client.changes(self._prefix)).next_token
            page = await self._client.changes(
                self._prefix, since, limit=self._limit, wait=self._wait
            )
            self._position.token = since
            self._position.read(page)


class _Base:
    def __init__(
        self, url: str, token: Optional[str], retries: int, backoff: float, timeout: float
    ) -> None:
        if retries < 0 or backoff < 0:
            raise ValueError("retries and backoff cannot be negative")
        self.url = url.rstrip("/")
        self.retries = retries
        self.backoff = backoff
        self.timeout = timeout
        self._headers: Dict[str, str] = {"Accept": "application/json"}
        if token is not None:
            self._headers["Authorization"] = f"Bearer {token}"

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


class Client(_Base):
    """A blocking client for a PathDB server.

    `retries` is how many times a single write that met a concurrent write (`Conflict`), or any
    request answered 503 (except `outcome_unknown` and `alias_building`), is tried again, after
    `backoff * 2**attempt` seconds at most (with jitter). `transport` lets tests and proxies
    plug in an `httpx.BaseTransport`.
    """

    def __init__(
        self,
        url: str,
        token: Optional[str] = None,
        *,
        retries: int = 3,
        backoff: float = 0.05,
        timeout: float = 30.0,
        transport: Optional[httpx.BaseTransport] = None,
    ) -> None:
        super().__init__(url, token, retries, backoff, timeout)
        self._http = httpx.Client(
            base_url=self.url, headers=self._headers, timeout=timeout, transport=transport
        )

    def close(self) -> None:
        """Closes the connections."""
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _send(self, request: _Request) -> httpx.Response:
        attempt = 0
        reconnected = False
        while True:
            try:
                response = self._http.request(
                    request.method,
                    request.route,
                    params=request.params,
                    headers=request.headers,
                    content=request.body,
                    timeout=self._timeout(request),
                )
            except httpx.RemoteProtocolError as e:
                # A kept-alive connection the server closed (it does after refusing a request
                # whose body it did not read) fails the next request before any answer: that
                # request was never served, so send it once more on a new connection.
                if reconnected:
                    raise Unavailable(f"{self.url}: {e}", code="unreachable") from e
                reconnected = True
                continue
            except httpx.TransportError as e:
                raise Unavailable(f"cannot reach {self.url}: {e}", code="unreachable") from e
            if attempt >= self.retries or not _Api.should_retry(request, response):
                return response
            time.sleep(self._delay(attempt))
            attempt += 1

    @overload
    def put(
        self,
        path: PathLike,
        value: JsonValue,
        *,
        must_not_exist: bool = ...,
        if_version: Optional[int] = ...,
        history: bool = ...,
        ttl_seconds: Optional[int] = ...,
    ) -> Item: ...

    @overload
    def put(
        self,
        path: PathLike,
        value: W,
        *,
        must_not_exist: bool = ...,
        if_version: Optional[int] = ...,
        history: bool = ...,
        ttl_seconds: Optional[int] = ...,
    ) -> Item[W]: ...

    def put(
        self,
        path: PathLike,
        value: Any,
        *,
        must_not_exist: bool = False,
        if_version: Optional[int] = None,
        history: bool = False,
        ttl_seconds: Optional[int] = None,
    ) -> Item[Any]:
        """Creates or replaces the item at `path`. Raises `ConditionFailed` if `must_not_exist`
        or `if_version` does not hold, `SchemaViolation` if the value does not fit its
        namespace's schema. The item returned has the value's type: `put(path, Post(...))` is
        an `Item[Post]` (a plain dict, list or scalar gives an `Item[Any]`)."""
        request = _Api.put(path, value, must_not_exist, if_version, history, ttl_seconds)
        return Item.from_wire(_Api.body(self._send(request)))

    def patch(
        self,
        path: PathLike,
        operations: Sequence[PatchOperation],
        *,
        must_not_exist: bool = False,
        if_version: Optional[int] = None,
        create: bool = False,
        history: bool = False,
        ttl_seconds: Optional[int] = None,
    ) -> Item:
        """Applies a JSON Patch (RFC 6902 `PatchOperation`s in order, plus `increment`) to the
        item at `path` on the server, all or nothing, and returns the item written. With
        `create`, a missing item is patched from `{}` (otherwise `NotFound`). Raises
        `PatchTestFailed` (a `test` did not hold), `PatchConflict` (an operation does not fit
        the value), `ConditionFailed` (`must_not_exist`, `if_version`) or `InvalidRequest`
        (`invalid_patch`: a bad document); nothing is written then."""
        request = _Api.patch(
            path,
            JSON_PATCH,
            list(operations),
            must_not_exist,
            if_version,
            create,
            history,
            ttl_seconds,
        )
        return Item.from_wire(_Api.body(self._send(request)))

    def merge(
        self,
        path: PathLike,
        document: Any,
        *,
        must_not_exist: bool = False,
        if_version: Optional[int] = None,
        create: bool = False,
        history: bool = False,
        ttl_seconds: Optional[int] = None,
    ) -> Item:
        """Applies a JSON Merge Patch (RFC 7396: objects merge member by member, `None`
        removes a member, any other value replaces) to the item at `path` on the server, and
        returns the item written; options and errors as `patch`."""
        request = _Api.patch(
            path, MERGE_PATCH, document, must_not_exist, if_version, create, history, ttl_seconds
        )
        return Item.from_wire(_Api.body(self._send(request)))

    def increment(
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
    ) -> Item:
        """Adds `by` to the number at the JSON Pointer `pointer` (`"/views"`) in the item at
        `path`, atomically on the server (concurrent increments all count), and returns the
        item written. A missing member starts at 0, and `create` is True by default, so a
        counter that does not exist yet starts at 0 as well (`create=False` raises `NotFound`
        then). Integers stay integers; past 2^53, or on a non-number, raises
        `PatchConflict`."""
        return self.patch(
            path,
            [increment_operation(pointer, by)],
            must_not_exist=must_not_exist,
            if_version=if_version,
            create=create,
            history=history,
            ttl_seconds=ttl_seconds,
        )

    def get(self, path: PathLike, value_type: Optional[Type[V]] = None) -> Optional[Item[V]]:
        """The item at `path`, or None. `value_type` (a TypedDict generated by
        `python -m pathdb.codegen`, say: `db.get(path, Post)`) types the item for type
        checkers, as an `Item[Post]`; the client does not check the value."""
        return _Api.item_or_none(self._send(_Api.get(path, None)))

    def get_version(
        self, path: PathLike, version: int, value_type: Optional[Type[V]] = None
    ) -> Item[V]:
        """A past version of the item at `path` from its history. Raises `NotFound`.
        `value_type` types it, as in `get`."""
        return Item.from_wire(_Api.body(self._send(_Api.get(path, version))))

    def delete(self, path: PathLike, *, if_version: Optional[int] = None) -> Optional[Item]:
        """Deletes the item at `path`: the deleted item, or None if there was none. Raises
        `ConditionFailed` if `if_version` does not hold."""
        return _Api.item_or_none(self._send(_Api.delete(path, if_version)))

    def delete_subtree(self, path: PathLike) -> int:
        """Deletes the item at `path`, if any, and every item below it; how many it deleted.
        `/a/p-1` never touches `/a/p-10`. Each leaves a tombstone and history stays. Atomic when
        it fits in one transaction, otherwise done in resumable batches (call again to finish
        one that was cut off). Raises `NotFound` when there is nothing to delete."""
        return _Api.count(self._send(_Api.delete_subtree(path)), "deleted")

    def move(self, path: PathLike, to: PathLike) -> int:
        """Moves the item at `path` and every item below it to `to` (its elements replace
        `path`'s), with values, times and history; how many it moved. `to` may be in another
        group. Raises `DestinationNotEmpty`, `NotFound` (nothing at `path`) or
        `InvalidRequest` (one path inside the other). Call again to finish a move that was cut
        off."""
        return _Api.count(self._send(_Api.relocate("/v1/move", path, to)), "moved")

    def copy(self, path: PathLike, to: PathLike) -> int:
        """Like `move`, but the source stays as it is; how many items it copied."""
        return _Api.count(self._send(_Api.relocate("/v1/copy", path, to)), "copied")

    def get_many(
        self, paths: Iterable[PathLike], value_type: Optional[Type[V]] = None
    ) -> List[Optional[Item[V]]]:
        """The items at `paths` (at most 100), read from one snapshot, None where missing.
        `value_type` types them, as in `get`."""
        key_paths = [to_path(p) for p in paths]
        return _Api.many(key_paths, self._send(_Api.get_many(key_paths)))

    @overload
    def list_page(
        self,
        prefix: PathLike,
        *,
        children: Literal[False] = ...,
        reverse: bool = ...,
        gt: Optional[PathLike] = ...,
        gte: Optional[PathLike] = ...,
        lt: Optional[PathLike] = ...,
        lte: Optional[PathLike] = ...,
        page_size: Optional[int] = ...,
        page_token: Optional[str] = ...,
        value_type: Optional[Type[V]] = ...,
    ) -> Page[Item[V]]: ...

    @overload
    def list_page(
        self,
        prefix: PathLike,
        *,
        children: Literal[True],
        reverse: bool = ...,
        gt: Optional[PathLike] = ...,
        gte: Optional[PathLike] = ...,
        lt: Optional[PathLike] = ...,
        lte: Optional[PathLike] = ...,
        page_size: Optional[int] = ...,
        page_token: Optional[str] = ...,
        value_type: Optional[Type[V]] = ...,
    ) -> Page[Union[Item[V], Node]]: ...

    @overload
    def list_page(
        self,
        prefix: PathLike,
        *,
        children: bool,
        reverse: bool = ...,
        gt: Optional[PathLike] = ...,
        gte: Optional[PathLike] = ...,
        lt: Optional[PathLike] = ...,
        lte: Optional[PathLike] = ...,
        page_size: Optional[int] = ...,
        page_token: Optional[str] = ...,
        value_type: Optional[Type[V]] = ...,
    ) -> Page[Union[Item[V], Node]]: ...

    def list_page(
        self,
        prefix: PathLike,
        *,
        children: bool = False,
        reverse: bool = False,
        gt: Optional[PathLike] = None,
        gte: Optional[PathLike] = None,
        lt: Optional[PathLike] = None,
        lte: Optional[PathLike] = None,
        page_size: Optional[int] = None,
        page_token: Optional[str] = None,
        value_type: Optional[Type[Any]] = None,
    ) -> Page[Any]:
        """One page of the items under `prefix` (the item at `prefix` itself, then its subtree,
        in key order); `page_size` is 1..=1000, 100 by default. `value_type` types the items'
        values, as in `get`."""
        request = _Api.list_page(
            prefix, children, reverse, gt, gte, lt, lte, page_size, page_token
        )
        return _Api.page(self._send(request))

    @overload
    def list(
        self,
        prefix: PathLike,
        *,
        children: Literal[False] = ...,
        reverse: bool = ...,
        gt: Optional[PathLike] = ...,
        gte: Optional[PathLike] = ...,
        lt: Optional[PathLike] = ...,
        lte: Optional[PathLike] = ...,
        limit: Optional[int] = ...,
        page_size: Optional[int] = ...,
        value_type: Optional[Type[V]] = ...,
    ) -> Iterator[Item[V]]: ...

    @overload
    def list(
        self,
        prefix: PathLike,
        *,
        children: Literal[True],
        reverse: bool = ...,
        gt: Optional[PathLike] = ...,
        gte: Optional[PathLike] = ...,
        lt: Optional[PathLike] = ...,
        lte: Optional[PathLike] = ...,
        limit: Optional[int] = ...,
        page_size: Optional[int] = ...,
        value_type: Optional[Type[V]] = ...,
    ) -> Iterator[Union[Item[V], Node]]: ...

    @overload
    def list(
        self,
        prefix: PathLike,
        *,
        children: bool,
        reverse: bool = ...,
        gt: Optional[PathLike] = ...,
        gte: Optional[PathLike] = ...,
        lt: Optional[PathLike] = ...,
        lte: Optional[PathLike] = ...,
        limit: Optional[int] = ...,
        page_size: Optional[int] = ...,
        value_type: Optional[Type[V]] = ...,
    ) -> Iterator[Union[Item[V], Node]]: ...

    def list(
        self,
        prefix: PathLike,
        *,
        children: bool = False,
        reverse: bool = False,
        gt: Optional[PathLike] = None,
        gte: Optional[PathLike] = None,
        lt: Optional[PathLike] = None,
        lte: Optional[PathLike] = None,
        limit: Optional[int] = None,
        page_size: Optional[int] = None,
        value_type: Optional[Type[Any]] = None,
    ) -> Iterator[Any]:
        """Every item under `prefix` (or the first `limit`), following page tokens; with
        `children`, each child of `prefix` as its `Item`, or as a `Node` when only items below
        it exist. `value_type` types the items' values, as in `get`."""
        token: Optional[str] = None
        remaining = limit
        while remaining is None or remaining > 0:
            size = _page_size(page_size, remaining)
            page = self.list_page(
                prefix,
                children=children,
                reverse=reverse,
                gt=gt,
                gte=gte,
                lt=lt,
                lte=lte,
                page_size=size,
                page_token=token,
            )
            for item in page.items[:remaining]:
                yield item
            if remaining is not None:
                remaining -= len(page.items)
            token = page.next_page_token
            if token is None:
                return

    @overload
    def create(
        self,
        parent: Optional[PathLike],
        namespace: str,
        value: JsonValue,
        *,
        id: IdKind = ...,
        history: bool = ...,
        ttl_seconds: Optional[int] = ...,
    ) -> Item: ...

    @overload
    def create(
        self,
        parent: Optional[PathLike],
        namespace: str,
        value: W,
        *,
        id: IdKind = ...,
        history: bool = ...,
        ttl_seconds: Optional[int] = ...,
    ) -> Item[W]: ...

    def create(
        self,
        parent: Optional[PathLike],
        namespace: str,
        value: Any,
        *,
        id: IdKind = "uuid",
        history: bool = False,
        ttl_seconds: Optional[int] = None,
    ) -> Item[Any]:
        """Creates an item at `{parent}/{namespace}-{id}` with an id the server generates, at a
        path never used before, and returns it (its `path` holds the id). `parent` None makes
        a new group `/{namespace}-{id}`. `id` is "uuid" (random), "rand53" (a random integer
        in [1, 2^53)) or "sequence" (1, 2, 3, ... per parent and namespace, never reused)."""
        request = _Api.create(parent, namespace, value, id, history, ttl_seconds)
        return Item.from_wire(_Api.body(self._send(request)))

    def changes(
        self,
        prefix: PathLike,
        since: Optional[str] = None,
        *,
        limit: Optional[int] = None,
        wait: Optional[int] = None,
    ) -> ChangePage:
        """The changes under `prefix` (at least a group) after the token `since` (a listing's
        `changes_token`, or a page's `next_token`), in commit order, at most `limit` (1..=1000,
        default 100) but never ending inside a transaction. With `wait` (0..=60 seconds) and
        no change yet, the server answers as soon as one commits, or with none after `wait`.
        Without `since`: no changes, and the current position as `next_token`. Raises
        `TokenExpired` for a token older than the server keeps changes, `InvalidRequest`
        (`invalid_change_token`) for one that is not a token of this prefix's group."""
        return _Api.change_page(self._send(_Api.changes(prefix, since, limit, wait)))

    def watch(
        self,
        prefix: PathLike,
        since: Optional[str] = None,
        *,
        wait: int = DEFAULT_WATCH_WAIT,
        limit: Optional[int] = None,
    ) -> Watch:
        """Every change under `prefix` after `since` (from where iterating starts without it),
        as it commits: an endless iterator, long-polling `changes` with `wait`; break out of
        the loop to stop. Errors (`TokenExpired`, `Unavailable`, ...) end it; resume from its
        `token`."""
        return Watch(self, prefix, since, wait, limit)

    def history(
        self,
        path: PathLike,
        *,
        limit: Optional[int] = None,
        value_type: Optional[Type[V]] = None,
    ) -> List[Item[V]]:
        """The kept revisions of `path`, newest first (100 by default, at most 1000);
        `value_type` types them, as in `get`."""
        body = _Api.body(self._send(_Api.history(path, limit)))
        return [Item.from_wire(i) for i in body["items"]]

    def transact(self, ops: Iterable[Op]) -> List[Optional[Item]]:
        """Applies `Put`, `Delete`, `Check`, `CheckList`, `Create`, `Patch`, `Merge` and
        `Increment` operations all or nothing. One result per operation: the item written,
        patched or created, the item deleted (or None), None for a check. Raises
        `ConditionFailed` (its `index` names the operation), `NotFound` (a patch without
        `create` found no item), `PatchTestFailed` or `PatchConflict` (not retried: retry the
        whole unit of work, or use `transaction`)."""
        return _Api.results(self._send(_Api.transact(ops)))

    def transaction(
        self,
        fn: Callable[[Transaction], T],
        *,
        max_attempts: int = MAX_TRANSACTION_ATTEMPTS,
    ) -> T:
        """Runs `fn(tx)` as an interactive transaction and returns what it returned.

        `fn` reads (`tx.get`, `tx.get_many`, `tx.list`) and writes (`tx.put`, `tx.patch`,
        `tx.create`, `tx.delete`) through `tx`; the writes commit together, all or nothing, in
        one `transact`, and only if nothing `fn` read through `tx` (items, their absence,
        listings) changed meanwhile. When something did, `fn` runs again from the start, on
        what is there now, after a random pause below min(2^runs ms, 64 ms): at most
        `max_attempts` runs in all, then `ConditionFailed` is raised. So `fn` may run more than
        once and must have no effects outside `tx`. An exception from `fn` propagates and
        nothing is written. A callback that neither read nor wrote sends nothing. Every path
        read and every listing is one of the transaction's 100 operations."""
        if max_attempts < 1:
            raise ValueError("max_attempts is at least 1")
        runs = 0
        while True:
            runs += 1
            tx = Transaction(self)
            try:
                value = fn(tx)
            finally:
                tx._state.done = True
            if asyncio.iscoroutine(value):
                value.close()
                raise TypeError("Client.transaction takes a plain function: use AsyncClient for async")
            ops = tx._state.ops()
            if not ops:
                return value
            try:
                results = self.transact(ops)
            except ConditionFailed:
                if runs >= max_attempts:
                    raise
                time.sleep(random.uniform(0, backoff_ceiling(runs)))
                continue
            tx._state.committed(results)
            return value

    def list_namespaces_page(
        self, *, page_size: Optional[int] = None, page_token: Optional[str] = None
    ) -> NamespacePage:
        """One page of the namespace definitions, in name order (`page_size` 1..=1000, 100 by
        default); pass its `next_page_token` as `page_token` for the next."""
        return _Api.namespace_page(self._send(_Api.list_namespaces(page_size, page_token)))

    def list_namespaces(
        self, *, limit: Optional[int] = None, page_size: Optional[int] = None
    ) -> Iterator[NamespaceDefinition]:
        """Every namespace definition (or the first `limit`), in name order, following page
        tokens."""
        token: Optional[str] = None
        remaining = limit
        while remaining is None or remaining > 0:
            page = self.list_namespaces_page(
                page_size=_page_size(page_size, remaining), page_token=token
            )
            yield from page.namespaces[:remaining]
            if remaining is not None:
                remaining -= len(page.namespaces)
            token = page.next_page_token
            if token is None:
                return

    def get_namespace(self, namespace: str) -> Optional[NamespaceDefinition]:
        """The definition of `namespace`, or None when it has none."""
        request = _Request("GET", _Api.namespace_route(namespace))
        return _Api.definition_or_none(self._send(request))

    def put_namespace(
        self,
        namespace: str,
        *,
        schema: Optional[Schema] = None,
        history: Optional[int] = None,
        description: Optional[str] = None,
        aliases: Optional[Sequence[AliasTemplate]] = None,
        must_not_exist: bool = False,
        if_version: Optional[int] = None,
    ) -> NamespaceDefinition:
        """Creates or replaces the definition of `namespace` (it replaces all of it: what is
        not given is removed), and returns it. `schema` is a JSON Schema (draft 2020-12 unless
        its `$schema` says 2019-09 or draft 7) that every write into the namespace is checked
        against from now on (items already stored are not: see `check_namespace` and
        `namespace_violations`); `history` how many revisions a put with history keeps;
        `aliases` its alias templates (at most 8: `"/email-{email}"`, see `AliasTemplate`),
        whose aliases every write keeps from now on, and which the server builds for the items
        stored before (the definition's `aliases` tell their state; see `wait_for_aliases`).
        `must_not_exist` and `if_version` are conditions as on an item's `put` (the
        definition's `version`). Needs an `admin` token on a server with tokens (else
        `Forbidden`). Raises `InvalidRequest` with code `invalid_schema` for a schema that is
        not one (or needs a remote `$ref`), `invalid_request` for an invalid template,
        `ConditionFailed` for a condition that does not hold."""
        request = _Api.put_namespace(
            namespace, schema, history, description, aliases, must_not_exist, if_version, False
        )
        return NamespaceDefinition.from_wire(_Api.body(self._send(request)))

    def delete_namespace(self, namespace: str, *, if_version: Optional[int] = None) -> bool:
        """Removes the definition of `namespace` (its items stay, unchecked from now on):
        True, or False when there was none. Needs an `admin` token; raises `ConditionFailed`
        if `if_version` does not hold."""
        return _Api.deleted(self._send(_Api.delete_namespace(namespace, if_version)))

    def check_namespace(
        self,
        namespace: str,
        *,
        schema: Optional[Schema] = None,
        history: Optional[int] = None,
        description: Optional[str] = None,
        aliases: Optional[Sequence[AliasTemplate]] = None,
    ) -> SchemaCheck:
        """A dry run of `put_namespace`: what the definition would say about the items of
        `namespace` already stored (how many it checked, how many violate it, the first 20),
        storing nothing; it refuses what `put_namespace` would (an invalid template, say). It
        reads every item of the namespace (on DynamoDB, a Scan). Needs an `admin` token, like
        `put_namespace`."""
        request = _Api.put_namespace(
            namespace, schema, history, description, aliases, False, None, True
        )
        return _Api.schema_check(self._send(request))

    def retry_alias_build(self, namespace: str, template: str) -> NamespaceDefinition:
        """Starts the build of the alias template `template` of `namespace` again, from the
        beginning, after it stopped in `conflict` (two items would share an alias: fix them
        first), and returns the definition. Needs an `admin` token. Raises `InvalidRequest` for
        a template that is not in conflict, `NotFound` for a namespace without a definition."""
        request = _Api.retry_alias_build(namespace, template)
        return NamespaceDefinition.from_wire(_Api.body(self._send(request)))

    def wait_for_aliases(
        self, namespace: str, *, timeout: Optional[float] = None, interval: float = 0.5
    ) -> NamespaceDefinition:
        """Waits until every alias template of `namespace` is `ready` (reads through its aliases
        are served), reading the definition every `interval` seconds, and returns it. Raises
        `AliasBuilding` (`status` None, `state` `conflict`) when a build stopped in conflict,
        and (`state` `building`) when `timeout` seconds passed first; `NotFound` when the
        namespace has no definition."""
        if interval <= 0:
            raise ValueError("interval is more than 0 seconds")
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            ready = _Api.aliases_ready(namespace, self.get_namespace(namespace), deadline, interval)
            if ready is not None:
                return ready
            time.sleep(interval)

    def namespace_violations_page(
        self,
        namespace: str,
        *,
        page_size: Optional[int] = None,
        page_token: Optional[str] = None,
    ) -> ViolationsPage:
        """One page of the stored items of `namespace` that its current schema refuses. A page
        may hold fewer than `page_size` items, even none, and still have a `next_page_token`:
        follow it until it is None."""
        request = _Api.namespace_violations(namespace, page_size, page_token)
        return _Api.violations_page(self._send(request))

    def namespace_violations(
        self,
        namespace: str,
        *,
        limit: Optional[int] = None,
        page_size: Optional[int] = None,
    ) -> Iterator[ViolatingItem]:
        """Every stored item of `namespace` that its current schema refuses (or the first
        `limit`), following page tokens. It reads every item of the namespace (on DynamoDB, a
        Scan)."""
        token: Optional[str] = None
        remaining = limit
        while remaining is None or remaining > 0:
            page = self.namespace_violations_page(
                namespace, page_size=_page_size(page_size, remaining), page_token=token
            )
            yield from page.items[:remaining]
            if remaining is not None:
                remaining -= len(page.items)
            token = page.next_page_token
            if token is None:
                return


class AsyncClient(_Base):
    """The asyncio twin of `Client`: the same methods, awaited; `list` is an async iterator."""

    def __init__(
        self,
        url: str,
        token: Optional[str] = None,
        *,
        retries: int = 3,
        backoff: float = 0.05,
        timeout: float = 30.0,
        transport: Optional[httpx.AsyncBaseTransport] = None,
    ) -> None:
        super().__init__(url, token, retries, backoff, timeout)
        self._http = httpx.AsyncClient(
            base_url=self.url, headers=self._headers, timeout=timeout, transport=transport
        )

    async def aclose(self) -> None:
        """Closes the connections."""
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _send(self, request: _Request) -> httpx.Response:
        attempt = 0
        reconnected = False
        while True:
            try:
                response = await self._http.request(
                    request.method,
                    request.route,
                    params=request.params,
                    headers=request.headers,
                    content=request.body,
                    timeout=self._timeout(request),
                )
            except httpx.RemoteProtocolError as e:
                # A kept-alive connection the server closed (it does after refusing a request
                # whose body it did not read) fails the next request before any answer: that
                # request was never served, so send it once more on a new connection.
                if reconnected:
                    raise Unavailable(f"{self.url}: {e}", code="unreachable") from e
                reconnected = True
                continue
            except httpx.TransportError as e:
                raise Unavailable(f"cannot reach {self.url}: {e}", code="unreachable") from e
            if attempt >= self.retries or not _Api.should_retry(request, response):
                return response
            await asyncio.sleep(self._delay(attempt))
            attempt += 1

    @overload
    async def put(
        self,
        path: PathLike,
        value: JsonValue,
        *,
        must_not_exist: bool = ...,
        if_version: Optional[int] = ...,
        history: bool = ...,
        ttl_seconds: Optional[int] = ...,
    ) -> Item: ...

    @overload
    async def put(
        self,
        path: PathLike,
        value: W,
        *,
        must_not_exist: bool = ...,
        if_version: Optional[int] = ...,
        history: bool = ...,
        ttl_seconds: Optional[int] = ...,
    ) -> Item[W]: ...

    async def put(
        self,
        path: PathLike,
        value: Any,
        *,
        must_not_exist: bool = False,
        if_version: Optional[int] = None,
        history: bool = False,
        ttl_seconds: Optional[int] = None,
    ) -> Item[Any]:
        """See `Client.put`."""
        request = _Api.put(path, value, must_not_exist, if_version, history, ttl_seconds)
        return Item.from_wire(_Api.body(await self._send(request)))

    async def patch(
        self,
        path: PathLike,
        operations: Sequence[PatchOperation],
        *,
        must_not_exist: bool = False,
        if_version: Optional[int] = None,
        create: bool = False,
        history: bool = False,
        ttl_seconds: Optional[int] = None,
    ) -> Item:
        """See `Client.patch`."""
        request = _Api.patch(
            path,
            JSON_PATCH,
            list(operations),
            must_not_exist,
            if_version,
            create,
            history,
            ttl_seconds,
        )
        return Item.from_wire(_Api.body(await self._send(request)))

    async def merge(
        self,
        path: PathLike,
        document: Any,
        *,
        must_not_exist: bool = False,
        if_version: Optional[int] = None,
        create: bool = False,
        history: bool = False,
        ttl_seconds: Optional[int] = None,
    ) -> Item:
        """See `Client.merge`."""
        request = _Api.patch(
            path, MERGE_PATCH, document, must_not_exist, if_version, create, history, ttl_seconds
        )
        return Item.from_wire(_Api.body(await self._send(request)))

    async def increment(
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
    ) -> Item:
        """See `Client.increment` (`create` is True by default)."""
        return await self.patch(
            path,
            [increment_operation(pointer, by)],
            must_not_exist=must_not_exist,
            if_version=if_version,
            create=create,
            history=history,
            ttl_seconds=ttl_seconds,
        )

    async def get(
        self, path: PathLike, value_type: Optional[Type[V]] = None
    ) -> Optional[Item[V]]:
        """See `Client.get`."""
        return _Api.item_or_none(await self._send(_Api.get(path, None)))

    async def get_version(
        self, path: PathLike, version: int, value_type: Optional[Type[V]] = None
    ) -> Item[V]:
        """See `Client.get_version`."""
        return Item.from_wire(_Api.body(await self._send(_Api.get(path, version))))

    async def delete(self, path: PathLike, *, if_version: Optional[int] = None) -> Optional[Item]:
        """See `Client.delete`."""
        return _Api.item_or_none(await self._send(_Api.delete(path, if_version)))

    async def delete_subtree(self, path: PathLike) -> int:
        """See `Client.delete_subtree`."""
        return _Api.count(await self._send(_Api.delete_subtree(path)), "deleted")

    async def move(self, path: PathLike, to: PathLike) -> int:
        """See `Client.move`."""
        return _Api.count(await self._send(_Api.relocate("/v1/move", path, to)), "moved")

    async def copy(self, path: PathLike, to: PathLike) -> int:
        """See `Client.copy`."""
        return _Api.count(await self._send(_Api.relocate("/v1/copy", path, to)), "copied")

    async def get_many(
        self, paths: Iterable[PathLike], value_type: Optional[Type[V]] = None
    ) -> List[Optional[Item[V]]]:
        """See `Client.get_many`."""
        key_paths = [to_path(p) for p in paths]
        return _Api.many(key_paths, await self._send(_Api.get_many(key_paths)))

    @overload
    async def list_page(
        self,
        prefix: PathLike,
        *,
        children: Literal[False] = ...,
        reverse: bool = ...,
        gt: Optional[PathLike] = ...,
        gte: Optional[PathLike] = ...,
        lt: Optional[PathLike] = ...,
        lte: Optional[PathLike] = ...,
        page_size: Optional[int] = ...,
        page_token: Optional[str] = ...,
        value_type: Optional[Type[V]] = ...,
    ) -> Page[Item[V]]: ...

    @overload
    async def list_page(
        self,
        prefix: PathLike,
        *,
        children: Literal[True],
        reverse: bool = ...,
        gt: Optional[PathLike] = ...,
        gte: Optional[PathLike] = ...,
        lt: Optional[PathLike] = ...,
        lte: Optional[PathLike] = ...,
        page_size: Optional[int] = ...,
        page_token: Optional[str] = ...,
        value_type: Optional[Type[V]] = ...,
    ) -> Page[Union[Item[V], Node]]: ...

    @overload
    async def list_page(
        self,
        prefix: PathLike,
        *,
        children: bool,
        reverse: bool = ...,
        gt: Optional[PathLike] = ...,
        gte: Optional[PathLike] = ...,
        lt: Optional[PathLike] = ...,
        lte: Optional[PathLike] = ...,
        page_size: Optional[int] = ...,
        page_token: Optional[str] = ...,
        value_type: Optional[Type[V]] = ...,
    ) -> Page[Union[Item[V], Node]]: ...

    async def list_page(
        self,
        prefix: PathLike,
        *,
        children: bool = False,
        reverse: bool = False,
        gt: Optional[PathLike] = None,
        gte: Optional[PathLike] = None,
        lt: Optional[PathLike] = None,
        lte: Optional[PathLike] = None,
        page_size: Optional[int] = None,
        page_token: Optional[str] = None,
        value_type: Optional[Type[Any]] = None,
    ) -> Page[Any]:
        """See `Client.list_page`."""
        request = _Api.list_page(
            prefix, children, reverse, gt, gte, lt, lte, page_size, page_token
        )
        return _Api.page(await self._send(request))

    @overload
    def list(  # an async generator: the call returns the iterator
        self,
        prefix: PathLike,
        *,
        children: Literal[False] = ...,
        reverse: bool = ...,
        gt: Optional[PathLike] = ...,
        gte: Optional[PathLike] = ...,
        lt: Optional[PathLike] = ...,
        lte: Optional[PathLike] = ...,
        limit: Optional[int] = ...,
        page_size: Optional[int] = ...,
        value_type: Optional[Type[V]] = ...,
    ) -> AsyncIterator[Item[V]]: ...

    @overload
    def list(  # an async generator: the call returns the iterator
        self,
        prefix: PathLike,
        *,
        children: Literal[True],
        reverse: bool = ...,
        gt: Optional[PathLike] = ...,
        gte: Optional[PathLike] = ...,
        lt: Optional[PathLike] = ...,
        lte: Optional[PathLike] = ...,
        limit: Optional[int] = ...,
        page_size: Optional[int] = ...,
        value_type: Optional[Type[V]] = ...,
    ) -> AsyncIterator[Union[Item[V], Node]]: ...

    @overload
    def list(  # an async generator: the call returns the iterator
        self,
        prefix: PathLike,
        *,
        children: bool,
        reverse: bool = ...,
        gt: Optional[PathLike] = ...,
        gte: Optional[PathLike] = ...,
        lt: Optional[PathLike] = ...,
        lte: Optional[PathLike] = ...,
        limit: Optional[int] = ...,
        page_size: Optional[int] = ...,
        value_type: Optional[Type[V]] = ...,
    ) -> AsyncIterator[Union[Item[V], Node]]: ...

    async def list(
        self,
        prefix: PathLike,
        *,
        children: bool = False,
        reverse: bool = False,
        gt: Optional[PathLike] = None,
        gte: Optional[PathLike] = None,
        lt: Optional[PathLike] = None,
        lte: Optional[PathLike] = None,
        limit: Optional[int] = None,
        page_size: Optional[int] = None,
        value_type: Optional[Type[Any]] = None,
    ) -> AsyncIterator[Any]:
        """See `Client.list`."""
        token: Optional[str] = None
        remaining = limit
        while remaining is None or remaining > 0:
            size = _page_size(page_size, remaining)
            page = await self.list_page(
                prefix,
                children=children,
                reverse=reverse,
                gt=gt,
                gte=gte,
                lt=lt,
                lte=lte,
                page_size=size,
                page_token=token,
            )
            for item in page.items[:remaining]:
                yield item
            if remaining is not None:
                remaining -= len(page.items)
            token = page.next_page_token
            if token is None:
                return

    @overload
    async def create(
        self,
        parent: Optional[PathLike],
        namespace: str,
        value: JsonValue,
        *,
        id: IdKind = ...,
        history: bool = ...,
        ttl_seconds: Optional[int] = ...,
    ) -> Item: ...

    @overload
    async def create(
        self,
        parent: Optional[PathLike],
        namespace: str,
        value: W,
        *,
        id: IdKind = ...,
        history: bool = ...,
        ttl_seconds: Optional[int] = ...,
    ) -> Item[W]: ...

    async def create(
        self,
        parent: Optional[PathLike],
        namespace: str,
        value: Any,
        *,
        id: IdKind = "uuid",
        history: bool = False,
        ttl_seconds: Optional[int] = None,
    ) -> Item[Any]:
        """See `Client.create`."""
        request = _Api.create(parent, namespace, value, id, history, ttl_seconds)
        return Item.from_wire(_Api.body(await self._send(request)))

    async def changes(
        self,
        prefix: PathLike,
        since: Optional[str] = None,
        *,
        limit: Optional[int] = None,
        wait: Optional[int] = None,
    ) -> ChangePage:
        """See `Client.changes`."""
        return _Api.change_page(await self._send(_Api.changes(prefix, since, limit, wait)))

    def watch(
        self,
        prefix: PathLike,
        since: Optional[str] = None,
        *,
        wait: int = DEFAULT_WATCH_WAIT,
        limit: Optional[int] = None,
    ) -> AsyncWatch:
        """See `Client.watch`: `async for change in db.watch(prefix, since)`."""
        return AsyncWatch(self, prefix, since, wait, limit)

    async def history(
        self,
        path: PathLike,
        *,
        limit: Optional[int] = None,
        value_type: Optional[Type[V]] = None,
    ) -> List[Item[V]]:
        """See `Client.history`."""
        body = _Api.body(await self._send(_Api.history(path, limit)))
        return [Item.from_wire(i) for i in body["items"]]

    async def transact(self, ops: Iterable[Op]) -> List[Optional[Item]]:
        """See `Client.transact`."""
        return _Api.results(await self._send(_Api.transact(ops)))

    async def transaction(
        self,
        fn: Callable[[AsyncTransaction], Awaitable[T]],
        *,
        max_attempts: int = MAX_TRANSACTION_ATTEMPTS,
    ) -> T:
        """See `Client.transaction`: `fn` is an async function, `await tx.get(...)`."""
        if max_attempts < 1:
            raise ValueError("max_attempts is at least 1")
        runs = 0
        while True:
            runs += 1
            tx = AsyncTransaction(self)
            try:
                value = await fn(tx)
            finally:
                tx._state.done = True
            ops = tx._state.ops()
            if not ops:
                return value
            try:
                results = await self.transact(ops)
            except ConditionFailed:
                if runs >= max_attempts:
                    raise
                await asyncio.sleep(random.uniform(0, backoff_ceiling(runs)))
                continue
            tx._state.committed(results)
            return value


    async def list_namespaces_page(
        self, *, page_size: Optional[int] = None, page_token: Optional[str] = None
    ) -> NamespacePage:
        """See `Client.list_namespaces_page`."""
        return _Api.namespace_page(await self._send(_Api.list_namespaces(page_size, page_token)))

    async def list_namespaces(
        self, *, limit: Optional[int] = None, page_size: Optional[int] = None
    ) -> AsyncIterator[NamespaceDefinition]:
        """See `Client.list_namespaces`."""
        token: Optional[str] = None
        remaining = limit
        while remaining is None or remaining > 0:
            page = await self.list_namespaces_page(
                page_size=_page_size(page_size, remaining), page_token=token
            )
            for definition in page.namespaces[:remaining]:
                yield definition
            if remaining is not None:
                remaining -= len(page.namespaces)
            token = page.next_page_token
            if token is None:
                return

    async def get_namespace(self, namespace: str) -> Optional[NamespaceDefinition]:
        """See `Client.get_namespace`."""
        request = _Request("GET", _Api.namespace_route(namespace))
        return _Api.definition_or_none(await self._send(request))

    async def put_namespace(
        self,
        namespace: str,
        *,
        schema: Optional[Schema] = None,
        history: Optional[int] = None,
        description: Optional[str] = None,
        aliases: Optional[Sequence[AliasTemplate]] = None,
        must_not_exist: bool = False,
        if_version: Optional[int] = None,
    ) -> NamespaceDefinition:
        """See `Client.put_namespace`."""
        request = _Api.put_namespace(
            namespace, schema, history, description, aliases, must_not_exist, if_version, False
        )
        return NamespaceDefinition.from_wire(_Api.body(await self._send(request)))

    async def delete_namespace(self, namespace: str, *, if_version: Optional[int] = None) -> bool:
        """See `Client.delete_namespace`."""
        return _Api.deleted(await self._send(_Api.delete_namespace(namespace, if_version)))

    async def check_namespace(
        self,
        namespace: str,
        *,
        schema: Optional[Schema] = None,
        history: Optional[int] = None,
        description: Optional[str] = None,
        aliases: Optional[Sequence[AliasTemplate]] = None,
    ) -> SchemaCheck:
        """See `Client.check_namespace`."""
        request = _Api.put_namespace(
            namespace, schema, history, description, aliases, False, None, True
        )
        return _Api.schema_check(await self._send(request))

    async def retry_alias_build(self, namespace: str, template: str) -> NamespaceDefinition:
        """See `Client.retry_alias_build`."""
        request = _Api.retry_alias_build(namespace, template)
        return NamespaceDefinition.from_wire(_Api.body(await self._send(request)))

    async def wait_for_aliases(
        self, namespace: str, *, timeout: Optional[float] = None, interval: float = 0.5
    ) -> NamespaceDefinition:
        """See `Client.wait_for_aliases`."""
        if interval <= 0:
            raise ValueError("interval is more than 0 seconds")
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            definition = await self.get_namespace(namespace)
            ready = _Api.aliases_ready(namespace, definition, deadline, interval)
            if ready is not None:
                return ready
            await asyncio.sleep(interval)

    async def namespace_violations_page(
        self,
        namespace: str,
        *,
        page_size: Optional[int] = None,
        page_token: Optional[str] = None,
    ) -> ViolationsPage:
        """See `Client.namespace_violations_page`."""
        request = _Api.namespace_violations(namespace, page_size, page_token)
        return _Api.violations_page(await self._send(request))

    async def namespace_violations(
        self,
        namespace: str,
        *,
        limit: Optional[int] = None,
        page_size: Optional[int] = None,
    ) -> AsyncIterator[ViolatingItem]:
        """See `Client.namespace_violations`."""
        token: Optional[str] = None
        remaining = limit
        while remaining is None or remaining > 0:
            page = await self.namespace_violations_page(
                namespace, page_size=_page_size(page_size, remaining), page_token=token
            )
            for item in page.items[:remaining]:
                yield item
            if remaining is not None:
                remaining -= len(page.items)
            token = page.next_page_token
            if token is None:
                return


def _page_size(page_size: Optional[int], remaining: Optional[int]) -> Optional[int]:
    if remaining is None:
        return page_size
    return min(page_size or DEFAULT_PAGE_SIZE, remaining, MAX_PAGE_SIZE)


