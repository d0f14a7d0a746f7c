"""The HTTP clients: `Client` (blocking) and `AsyncClient` (asyncio), with the same methods.

Each method is a thin shell over the core in `_api` (the request it sends, how its answer reads,
and the plan of a call of several steps): a client only carries out a plan's steps, with its own
HTTP and its own sleep, so the two cannot disagree on the wire format or on what a call does.
"""

from __future__ import annotations

import asyncio
import time
from datetime import datetime
from typing import (
    Any,
    AsyncIterator,
    Awaitable,
    Callable,
    Dict,
    Generic,
    Iterable,
    Iterator,
    List,
    Literal,
    Mapping,
    Optional,
    Sequence,
    Type,
    TypeVar,
    Union,
    overload,
)

import httpx

from ._api import (
    DEFAULT_WATCH_WAIT,
    JSON_PATCH,
    MERGE_PATCH,
    Plan,
    _Api,
    _Base,
    _call,
    _count,
    _Pages,
    _Position,
    _Reply,
    _Request,
    _Running,
    _Sleep,
    _Step,
    _wait_for_aliases,
)
from ._keypath import PathLike, to_path
from ._model import (
    AliasTemplate,
    Change,
    Fields,
    ChangePage,
    IdKind,
    IssuedToken,
    Item,
    NamespaceDefinition,
    NamespacePage,
    Node,
    Op,
    Page,
    PatchOperation,
    Role,
    RuleLike,
    Schema,
    SchemaCheck,
    Session,
    TokenInfo,
    V,
    VarValue,
    ViolatingItem,
    ViolationsPage,
    increment_operation,
)
from ._transaction import MAX_TRANSACTION_ATTEMPTS, AsyncTransaction, Transaction, _Runs

T = TypeVar("T")
W = TypeVar("W")
C = TypeVar("C")

JsonValue = Union[Dict[str, Any], List[Any], str, int, float, bool, None]
"""A value as JSON reads it: what `put` and `create` type as `Item[Any]`, like before values
had types. Any other value (a TypedDict's, say) gives an `Item` of its own type."""


class _Watching(Generic[C]):
    def __init__(
        self,
        client: C,
        prefix: PathLike,
        since: Optional[str],
        wait: int,
        limit: Optional[int],
        filter: Optional[str] = None,
    ) -> None:
        if wait < 1:
            raise ValueError("a watch's long polls wait 1 second or more (60 at most)")
        self._client = client
        self._prefix = to_path(prefix)
        self._wait = wait
        self._limit = limit
        self._filter = filter
        self._position = _Position(since)

    @property
    def token(self) -> Optional[str]:
        """Where to resume from (None before the first read when started without `since`)."""
        return self._position.token

    def _next(self) -> Plan[Change]:
        return self._position.next(self._prefix, self._wait, self._limit, self._filter)


class Watch(_Watching["Client"]):
    """The changes under a prefix, as they commit: an endless iterator that long-polls (see
    `Client.watch`). `token` is where to resume after the changes handed out so far (it may
    repeat some of them when the loop stopped inside a page, never skip one)."""

    def __iter__(self) -> Watch:
        return self

    def __next__(self) -> Change:
        return self._client._run(self._next())


class AsyncWatch(_Watching["AsyncClient"]):
    """The asyncio twin of `Watch`: `async for change in db.watch(prefix)`."""

    def __aiter__(self) -> AsyncWatch:
        return self

    async def __anext__(self) -> Change:
        return await self._client._run(self._next())


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

    def _run(self, plan: Plan[T]) -> T:
        """Carries out `plan`'s steps, with the retries, and returns its value."""
        running = _Running(plan, self)
        step = running.step(None)
        while step is not None:
            step = running.step(self._do(step))
        return running.value

    def _do(self, step: _Step) -> _Reply:
        """One step: a request's response (or its transport error), None after a pause."""
        if isinstance(step, _Sleep):
            time.sleep(step.seconds)
            return None
        try:
            return self._http.request(**self._request_args(step))
        except httpx.TransportError as e:
            return e

    def _call(self, request: _Request, parse: Callable[[httpx.Response], T]) -> T:
        """A call of one request: what `parse` reads in its response."""
        return self._run(_call(request, parse))

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
        return self._call(request, _Api.item)

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
        document = list(operations)
        request = _Api.patch(
            path, JSON_PATCH, document, must_not_exist, if_version, create, history, ttl_seconds
        )
        return self._call(request, _Api.item)

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
        return self._call(request, _Api.item)

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
        operations = [increment_operation(pointer, by)]
        request = _Api.patch(
            path, JSON_PATCH, operations, must_not_exist, if_version, create, history, ttl_seconds
        )
        return self._call(request, _Api.item)

    def get(
        self,
        path: PathLike,
        value_type: Optional[Type[V]] = None,
        *,
        fields: Optional[Fields] = None,
    ) -> Optional[Item[V]]:
        """The item at `path`, or None. `value_type` (a TypedDict generated by
        `python -m pathdb.codegen`, say: `db.get(path, Post)`) types the item for type
        checkers, as an `Item[Post]`; the client does not check the value. `fields`
        (`["title", "author.name"]` or `"title,author.name"`) keeps only those members of the
        value (its `version` is still the item's)."""
        return self._call(_Api.get(path, None, fields), _Api.item_or_none)

    def get_version(
        self, path: PathLike, version: int, value_type: Optional[Type[V]] = None
    ) -> Item[V]:
        """A past version of the item at `path` from its history. Raises `NotFound`.
        `value_type` types it, as in `get`."""
        return self._call(_Api.get(path, version), _Api.item)

    def delete(self, path: PathLike, *, if_version: Optional[int] = None) -> Optional[Item]:
        """Deletes the item at `path`: the deleted item, or None if there was none. Raises
        `ConditionFailed` if `if_version` does not hold."""
        return self._call(_Api.delete(path, if_version), _Api.item_or_none)

    def delete_subtree(self, path: PathLike) -> int:
        """Deletes the item at `path`, if any, and every item below it; how many it deleted.
        `/a/p-1` never touches `/a/p-10`. Each leaves a tombstone and history stays. Atomic when
        it fits in one transaction, otherwise done in resumable batches (call again to finish
        one that was cut off). Raises `NotFound` when there is nothing to delete."""
        return self._call(_Api.delete_subtree(path), _Api.counted("deleted"))

    def move(self, path: PathLike, to: PathLike) -> int:
        """Moves the item at `path` and every item below it to `to` (its elements replace
        `path`'s), with values, times and history; how many it moved. `to` may be in another
        group. Raises `DestinationNotEmpty`, `NotFound` (nothing at `path`) or
        `InvalidRequest` (one path inside the other). Call again to finish a move that was cut
        off."""
        return self._call(_Api.relocate("/v1/move", path, to), _Api.counted("moved"))

    def copy(self, path: PathLike, to: PathLike) -> int:
        """Like `move`, but the source stays as it is; how many items it copied."""
        return self._call(_Api.relocate("/v1/copy", path, to), _Api.counted("copied"))

    def get_many(
        self,
        paths: Iterable[PathLike],
        value_type: Optional[Type[V]] = None,
        *,
        filter: Optional[str] = None,
        fields: Optional[Fields] = None,
    ) -> List[Optional[Item[V]]]:
        """The items at `paths` (at most 100), read from one snapshot, None where missing.
        `value_type` types them, as in `get`. With `filter` (a CEL expression, see
        `list`), an item it does not match is None too, as if missing; `fields` projects each
        value, as in `get`."""
        key_paths = [to_path(p) for p in paths]
        return self._call(_Api.get_many(key_paths, filter, fields), _Api.many(key_paths))

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
        filter: Optional[str] = ...,
        fields: Optional[Fields] = ...,
        max_scan: Optional[int] = ...,
    ) -> Page[Item[V]]: ...

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
        filter: Optional[str] = ...,
        fields: Optional[Fields] = ...,
        max_scan: Optional[int] = ...,
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
        filter: Optional[str] = None,
        fields: Optional[Fields] = None,
        max_scan: Optional[int] = None,
    ) -> Page[Any]:
        """One page of the items under `prefix` (the item at `prefix` itself, then its subtree,
        in key order); `page_size` is 1..=1000, 100 by default. `value_type` types the items'
        values, as in `get`. `filter`, `fields` and `max_scan` as in `list`: a filtered page
        reads at most `max_scan` items, so it may hold fewer than `page_size` items, even none,
        and still have a `next_page_token` (the page's `scanned` says how many it read)."""
        request = _Api.list_page(
            prefix,
            children,
            reverse,
            gt,
            gte,
            lt,
            lte,
            page_size,
            page_token,
            filter,
            fields,
            max_scan,
        )
        return self._call(request, _Api.page)

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
        filter: Optional[str] = ...,
        fields: Optional[Fields] = ...,
        max_scan: Optional[int] = ...,
    ) -> Iterator[Item[V]]: ...

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
        filter: Optional[str] = ...,
        fields: Optional[Fields] = ...,
        max_scan: Optional[int] = ...,
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
        filter: Optional[str] = None,
        fields: Optional[Fields] = None,
        max_scan: Optional[int] = None,
    ) -> Iterator[Any]:
        """Every item under `prefix` (or the first `limit`), following page tokens; with
        `children`, each child of `prefix` as its `Item`, or as a `Node` when only items below
        it exist. `value_type` types the items' values, as in `get`.

        `filter` is a CEL expression over each item (docs/filters.md): `value` (its JSON value),
        `path` (its text), `ids` (namespace to id), `version`, `created_at` and `modified_at`
        (microseconds); only the items for which it is true are listed (a children listing's
        nodes never match): `filter='value.status == "open" && value.total > 100'`. An invalid
        one raises `InvalidFilter` (with its `position`). `fields` keeps only those members of
        each value (`["title", "author.name"]`). `max_scan` is how many items each page reads
        at most (default 1000, at most 100000): a filtered page may come back with fewer items,
        even none; the iterator follows the page tokens across such pages to the end."""
        pages = _Pages(page_size, limit)
        while not pages.done:
            request = _Api.list_page(
                prefix,
                children,
                reverse,
                gt,
                gte,
                lt,
                lte,
                pages.size,
                pages.token,
                filter,
                fields,
                max_scan,
            )
            page = self._call(request, _Api.page)
            yield from pages.take(page.items, page.next_page_token)

    def count(
        self,
        prefix: PathLike,
        *,
        filter: Optional[str] = None,
        children: bool = False,
        gt: Optional[PathLike] = None,
        gte: Optional[PathLike] = None,
        lt: Optional[PathLike] = None,
        lte: Optional[PathLike] = None,
        max_scan: Optional[int] = None,
    ) -> int:
        """How many items under `prefix` (in the range `children` and the bounds give, as in
        `list`) match `filter` (every item without one), without reading them here. The server
        counts up to `max_scan` items per request (default 1000, at most 100000); a longer range
        takes several requests, which this follows and adds up. Like a listing followed page by
        page, it is not one snapshot: items written meanwhile may or may not count."""
        return self._run(_count(prefix, children, gt, gte, lt, lte, filter, max_scan))

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
        return self._call(request, _Api.item)

    def changes(
        self,
        prefix: PathLike,
        since: Optional[str] = None,
        *,
        limit: Optional[int] = None,
        wait: Optional[int] = None,
        filter: Optional[str] = None,
    ) -> ChangePage:
        """The changes under `prefix` (at least a group) after the token `since` (a listing's
        `changes_token`, or a page's `next_token`), in commit order, at most `limit` (1..=1000,
        default 100) but never ending inside a transaction. With `wait` (0..=60 seconds) and
        no change yet, the server answers as soon as one commits, or with none after `wait`.
        Without `since`: no changes, and the current position as `next_token`. Raises
        `TokenExpired` for a token older than the server keeps changes, `InvalidRequest`
        (`invalid_change_token`) for one that is not a token of this prefix's group.

        With `filter` (a CEL expression, as in `list`), only the changes that matter to the
        filtered result: an item that enters it or changes while matching is a `PutChange`,
        one that leaves it (it matched before the change, not after) a `DeleteChange` with
        `left` True; changes of items that match neither before nor after are left out."""
        return self._call(_Api.changes(prefix, since, limit, wait, filter), _Api.change_page)

    def watch(
        self,
        prefix: PathLike,
        since: Optional[str] = None,
        *,
        wait: int = DEFAULT_WATCH_WAIT,
        limit: Optional[int] = None,
        filter: Optional[str] = None,
    ) -> Watch:
        """Every change under `prefix` after `since` (from where iterating starts without it),
        as it commits: an endless iterator, long-polling `changes` with `wait`; break out of
        the loop to stop. Errors (`TokenExpired`, `Unavailable`, ...) end it; resume from its
        `token`. With `filter`, only the changes that matter to the filtered result, as in
        `changes` (an item leaving it is a `DeleteChange` with `left` True)."""
        return Watch(self, prefix, since, wait, limit, filter)

    def history(
        self,
        path: PathLike,
        *,
        limit: Optional[int] = None,
        value_type: Optional[Type[V]] = None,
    ) -> List[Item[V]]:
        """The kept revisions of `path`, newest first (100 by default, at most 1000);
        `value_type` types them, as in `get`."""
        return self._call(_Api.history(path, limit), _Api.items)

    def transact(self, ops: Iterable[Op]) -> List[Optional[Item]]:
        """Applies `Put`, `Delete`, `Check`, `CheckList`, `Create`, `Patch`, `Merge` and
        `Increment` operations all or nothing. One result per operation: the item written,
        patched or created, the item deleted (or None), None for a check. Raises
        `ConditionFailed` (its `index` names the operation), `NotFound` (a patch without
        `create` found no item), `PatchTestFailed` or `PatchConflict` (not retried: retry the
        whole unit of work, or use `transaction`)."""
        return self._call(_Api.transact(ops), _Api.results)

    def transaction(
        self,
        fn: Callable[[Transaction], T],
        *,
        max_attempts: int = MAX_TRANSACTION_ATTEMPTS,
    ) -> T:
        """Runs `fn(tx)` as an interactive transaction and returns what it returned.

        `fn` reads (`tx.get`, `tx.get_many`, `tx.list`, `tx.list_page`) and writes (`tx.put`,
        `tx.patch`, `tx.create`, `tx.delete`) through `tx`; the writes commit together, all or
        nothing, in one `transact`, and only if nothing `fn` read through `tx` (items, their
        absence, listings) changed meanwhile. When something did, `fn` runs again from the start, on
        what is there now, after a random pause below min(2^runs ms, 64 ms): at most
        `max_attempts` runs in all, then `ConditionFailed` is raised. So `fn` may run more than
        once and must have no effects outside `tx`. An exception from `fn` propagates and
        nothing is written. A callback that neither read nor wrote sends nothing. Every path
        read and every listing is one of the transaction's 100 operations."""
        runs = _Runs(max_attempts)
        while True:
            tx = Transaction(self)
            try:
                value = fn(tx)
            finally:
                tx._state.done = True
            if asyncio.iscoroutine(value):
                value.close()
                raise TypeError("Client.transaction takes a plain function: use AsyncClient for async")
            if self._run(runs.commit(tx._state)):
                return value

    def list_namespaces_page(
        self, *, page_size: Optional[int] = None, page_token: Optional[str] = None
    ) -> NamespacePage:
        """One page of the namespace definitions, in name order (`page_size` 1..=1000, 100 by
        default); pass its `next_page_token` as `page_token` for the next."""
        return self._call(_Api.list_namespaces(page_size, page_token), _Api.namespace_page)

    def list_namespaces(
        self, *, limit: Optional[int] = None, page_size: Optional[int] = None
    ) -> Iterator[NamespaceDefinition]:
        """Every namespace definition (or the first `limit`), in name order, following page
        tokens."""
        pages = _Pages(page_size, limit)
        while not pages.done:
            request = _Api.list_namespaces(pages.size, pages.token)
            page = self._call(request, _Api.namespace_page)
            yield from pages.take(page.namespaces, page.next_page_token)

    def get_namespace(self, namespace: str) -> Optional[NamespaceDefinition]:
        """The definition of `namespace`, or None when it has none."""
        return self._call(_Api.get_namespace(namespace), _Api.definition_or_none)

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
        return self._call(request, _Api.definition)

    def delete_namespace(self, namespace: str, *, if_version: Optional[int] = None) -> bool:
        """Removes the definition of `namespace` (its items stay, unchecked from now on):
        True, or False when there was none. Needs an `admin` token; raises `ConditionFailed`
        if `if_version` does not hold."""
        return self._call(_Api.delete_namespace(namespace, if_version), _Api.deleted)

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
        return self._call(request, _Api.schema_check)

    def retry_alias_build(self, namespace: str, template: str) -> NamespaceDefinition:
        """Starts the build of the alias template `template` of `namespace` again, from the
        beginning, after it stopped in `conflict` (two items would share an alias: fix them
        first), and returns the definition. Needs an `admin` token. Raises `InvalidRequest` for
        a template that is not in conflict, `NotFound` for a namespace without a definition."""
        request = _Api.retry_alias_build(namespace, template)
        return self._call(request, _Api.definition)

    def wait_for_aliases(
        self, namespace: str, *, timeout: Optional[float] = None, interval: float = 0.5
    ) -> NamespaceDefinition:
        """Waits until every alias template of `namespace` is `ready` (reads through its aliases
        are served), reading the definition every `interval` seconds, and returns it. Raises
        `AliasBuilding` (`status` None, `state` `conflict`) when a build stopped in conflict,
        and (`state` `building`) when `timeout` seconds passed first; `NotFound` when the
        namespace has no definition."""
        return self._run(_wait_for_aliases(namespace, timeout, interval))

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
        return self._call(request, _Api.violations_page)

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
        pages = _Pages(page_size, limit)
        while not pages.done:
            request = _Api.namespace_violations(namespace, pages.size, pages.token)
            page = self._call(request, _Api.violations_page)
            yield from pages.take(page.items, page.next_page_token)

    def session(self) -> Session:
        """What this client's token (or, on a server without tokens, anyone) may do: its role,
        the role's rules and the vars they are bound to, whether it may administer the database
        (`admin`), and how it was recognized (`via`). Raises `Unauthorized` for a token the
        server does not accept."""
        return self._call(_Api.session(), _Api.session_of)

    def list_roles(self) -> List[Role]:
        """Every role, by name, the built-in ones (`read`, `read-write`, `admin`) included.
        Needs an `admin` token (else `Forbidden`)."""
        return self._call(_Api.list_roles(), _Api.roles)

    def get_role(self, name: str) -> Optional[Role]:
        """The role `name`, or None when there is none. Needs an `admin` token."""
        return self._call(_Api.get_role(name), _Api.role_or_none)

    def put_role(
        self,
        name: str,
        rules: Sequence[RuleLike],
        *,
        description: Optional[str] = None,
        must_not_exist: bool = False,
        if_version: Optional[int] = None,
    ) -> Role:
        """Creates or replaces the role `name` (1 to 64 letters, digits, `_`, `-`, `.`) and
        returns it. `rules` are `Rule`s or `{"path": "/team-{team}/**", "allow": ["read",
        "write"]}` (at most 100); a path is allowed an operation when any rule allows it there.
        Its tokens have the new rules from their next request. `must_not_exist` and
        `if_version` (the role's `version`) are conditions as on an item's `put`. Needs an
        `admin` token. Raises `InvalidRole` for a rule that is not valid (the message names
        it), `BuiltinRole` for `read`, `read-write` and `admin`, `ConditionFailed` for a
        condition that does not hold."""
        request = _Api.put_role(name, rules, description, must_not_exist, if_version)
        return self._call(request, _Api.role)

    def delete_role(self, name: str, *, if_version: Optional[int] = None) -> bool:
        """Deletes the role `name`: True, or False when there was none. Needs an `admin` token.
        Raises `BuiltinRole` for a built-in role, `ConditionFailed` if `if_version` does not
        hold."""
        return self._call(_Api.delete_role(name, if_version), _Api.deleted)

    def create_token(
        self,
        role: str,
        *,
        vars: Optional[Mapping[str, VarValue]] = None,
        expires_at: Optional[datetime] = None,
        description: Optional[str] = None,
    ) -> IssuedToken:
        """Issues a token of `role`, whose rules' variables `vars` binds (`{"team": 7}`:
        integers or strings, read as key path ids), that stops working at `expires_at` (an
        aware datetime; None: when revoked). The `IssuedToken`'s `token` is the secret, shown
        only this once. Needs an `admin` token. Raises `UnknownRole` for a role that does not
        exist, `InvalidRequest` for vars that are not ids or an `expires_at` in the past."""
        request = _Api.create_token(role, vars, expires_at, description)
        return self._call(request, _Api.issued)

    def list_tokens(self) -> List[TokenInfo]:
        """Every issued token, by id, without its secret (expired ones too, until revoked).
        Needs an `admin` token."""
        return self._call(_Api.list_tokens(), _Api.tokens)

    def get_token(self, id: str) -> Optional[TokenInfo]:
        """The issued token `id`, without its secret, or None when there is none. Needs an
        `admin` token."""
        return self._call(_Api.get_token(id), _Api.token_or_none)

    def revoke_token(self, id: str) -> bool:
        """Revokes the issued token `id`: True, or False when there was none. This server
        refuses it (`Unauthorized`) from its next request, other servers sharing the database
        within seconds. Needs an `admin` token."""
        return self._call(_Api.revoke_token(id), _Api.deleted)


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

    async def _run(self, plan: Plan[T]) -> T:
        """See `Client._run`."""
        running = _Running(plan, self)
        step = running.step(None)
        while step is not None:
            step = running.step(await self._do(step))
        return running.value

    async def _do(self, step: _Step) -> _Reply:
        if isinstance(step, _Sleep):
            await asyncio.sleep(step.seconds)
            return None
        try:
            return await self._http.request(**self._request_args(step))
        except httpx.TransportError as e:
            return e

    async def _call(self, request: _Request, parse: Callable[[httpx.Response], T]) -> T:
        return await self._run(_call(request, parse))

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
        return await self._call(request, _Api.item)

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
        document = list(operations)
        request = _Api.patch(
            path, JSON_PATCH, document, must_not_exist, if_version, create, history, ttl_seconds
        )
        return await self._call(request, _Api.item)

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
        return await self._call(request, _Api.item)

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
        operations = [increment_operation(pointer, by)]
        request = _Api.patch(
            path, JSON_PATCH, operations, must_not_exist, if_version, create, history, ttl_seconds
        )
        return await self._call(request, _Api.item)

    async def get(
        self,
        path: PathLike,
        value_type: Optional[Type[V]] = None,
        *,
        fields: Optional[Fields] = None,
    ) -> Optional[Item[V]]:
        """See `Client.get`."""
        return await self._call(_Api.get(path, None, fields), _Api.item_or_none)

    async def get_version(
        self, path: PathLike, version: int, value_type: Optional[Type[V]] = None
    ) -> Item[V]:
        """See `Client.get_version`."""
        return await self._call(_Api.get(path, version), _Api.item)

    async def delete(self, path: PathLike, *, if_version: Optional[int] = None) -> Optional[Item]:
        """See `Client.delete`."""
        return await self._call(_Api.delete(path, if_version), _Api.item_or_none)

    async def delete_subtree(self, path: PathLike) -> int:
        """See `Client.delete_subtree`."""
        return await self._call(_Api.delete_subtree(path), _Api.counted("deleted"))

    async def move(self, path: PathLike, to: PathLike) -> int:
        """See `Client.move`."""
        return await self._call(_Api.relocate("/v1/move", path, to), _Api.counted("moved"))

    async def copy(self, path: PathLike, to: PathLike) -> int:
        """See `Client.copy`."""
        return await self._call(_Api.relocate("/v1/copy", path, to), _Api.counted("copied"))

    async def get_many(
        self,
        paths: Iterable[PathLike],
        value_type: Optional[Type[V]] = None,
        *,
        filter: Optional[str] = None,
        fields: Optional[Fields] = None,
    ) -> List[Optional[Item[V]]]:
        """See `Client.get_many`."""
        key_paths = [to_path(p) for p in paths]
        return await self._call(_Api.get_many(key_paths, filter, fields), _Api.many(key_paths))

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
        filter: Optional[str] = ...,
        fields: Optional[Fields] = ...,
        max_scan: Optional[int] = ...,
    ) -> Page[Item[V]]: ...

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
        filter: Optional[str] = ...,
        fields: Optional[Fields] = ...,
        max_scan: Optional[int] = ...,
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
        filter: Optional[str] = None,
        fields: Optional[Fields] = None,
        max_scan: Optional[int] = None,
    ) -> Page[Any]:
        """See `Client.list_page`."""
        request = _Api.list_page(
            prefix,
            children,
            reverse,
            gt,
            gte,
            lt,
            lte,
            page_size,
            page_token,
            filter,
            fields,
            max_scan,
        )
        return await self._call(request, _Api.page)

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
        filter: Optional[str] = ...,
        fields: Optional[Fields] = ...,
        max_scan: Optional[int] = ...,
    ) -> AsyncIterator[Item[V]]: ...

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
        filter: Optional[str] = ...,
        fields: Optional[Fields] = ...,
        max_scan: Optional[int] = ...,
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
        filter: Optional[str] = None,
        fields: Optional[Fields] = None,
        max_scan: Optional[int] = None,
    ) -> AsyncIterator[Any]:
        """See `Client.list`."""
        pages = _Pages(page_size, limit)
        while not pages.done:
            request = _Api.list_page(
                prefix,
                children,
                reverse,
                gt,
                gte,
                lt,
                lte,
                pages.size,
                pages.token,
                filter,
                fields,
                max_scan,
            )
            page = await self._call(request, _Api.page)
            for item in pages.take(page.items, page.next_page_token):
                yield item

    async def count(
        self,
        prefix: PathLike,
        *,
        filter: Optional[str] = None,
        children: bool = False,
        gt: Optional[PathLike] = None,
        gte: Optional[PathLike] = None,
        lt: Optional[PathLike] = None,
        lte: Optional[PathLike] = None,
        max_scan: Optional[int] = None,
    ) -> int:
        """See `Client.count`."""
        return await self._run(_count(prefix, children, gt, gte, lt, lte, filter, max_scan))

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
        return await self._call(request, _Api.item)

    async def changes(
        self,
        prefix: PathLike,
        since: Optional[str] = None,
        *,
        limit: Optional[int] = None,
        wait: Optional[int] = None,
        filter: Optional[str] = None,
    ) -> ChangePage:
        """See `Client.changes`."""
        request = _Api.changes(prefix, since, limit, wait, filter)
        return await self._call(request, _Api.change_page)

    def watch(
        self,
        prefix: PathLike,
        since: Optional[str] = None,
        *,
        wait: int = DEFAULT_WATCH_WAIT,
        limit: Optional[int] = None,
        filter: Optional[str] = None,
    ) -> AsyncWatch:
        """See `Client.watch`: `async for change in db.watch(prefix, since)`."""
        return AsyncWatch(self, prefix, since, wait, limit, filter)

    async def history(
        self,
        path: PathLike,
        *,
        limit: Optional[int] = None,
        value_type: Optional[Type[V]] = None,
    ) -> List[Item[V]]:
        """See `Client.history`."""
        return await self._call(_Api.history(path, limit), _Api.items)

    async def transact(self, ops: Iterable[Op]) -> List[Optional[Item]]:
        """See `Client.transact`."""
        return await self._call(_Api.transact(ops), _Api.results)

    async def transaction(
        self,
        fn: Callable[[AsyncTransaction], Awaitable[T]],
        *,
        max_attempts: int = MAX_TRANSACTION_ATTEMPTS,
    ) -> T:
        """See `Client.transaction`: `fn` is an async function, `await tx.get(...)`."""
        runs = _Runs(max_attempts)
        while True:
            tx = AsyncTransaction(self)
            try:
                value = await fn(tx)
            finally:
                tx._state.done = True
            if await self._run(runs.commit(tx._state)):
                return value


    async def list_namespaces_page(
        self, *, page_size: Optional[int] = None, page_token: Optional[str] = None
    ) -> NamespacePage:
        """See `Client.list_namespaces_page`."""
        return await self._call(_Api.list_namespaces(page_size, page_token), _Api.namespace_page)

    async def list_namespaces(
        self, *, limit: Optional[int] = None, page_size: Optional[int] = None
    ) -> AsyncIterator[NamespaceDefinition]:
        """See `Client.list_namespaces`."""
        pages = _Pages(page_size, limit)
        while not pages.done:
            request = _Api.list_namespaces(pages.size, pages.token)
            page = await self._call(request, _Api.namespace_page)
            for definition in pages.take(page.namespaces, page.next_page_token):
                yield definition

    async def get_namespace(self, namespace: str) -> Optional[NamespaceDefinition]:
        """See `Client.get_namespace`."""
        return await self._call(_Api.get_namespace(namespace), _Api.definition_or_none)

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
        return await self._call(request, _Api.definition)

    async def delete_namespace(self, namespace: str, *, if_version: Optional[int] = None) -> bool:
        """See `Client.delete_namespace`."""
        return await self._call(_Api.delete_namespace(namespace, if_version), _Api.deleted)

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
        return await self._call(request, _Api.schema_check)

    async def retry_alias_build(self, namespace: str, template: str) -> NamespaceDefinition:
        """See `Client.retry_alias_build`."""
        request = _Api.retry_alias_build(namespace, template)
        return await self._call(request, _Api.definition)

    async def wait_for_aliases(
        self, namespace: str, *, timeout: Optional[float] = None, interval: float = 0.5
    ) -> NamespaceDefinition:
        """See `Client.wait_for_aliases`."""
        return await self._run(_wait_for_aliases(namespace, timeout, interval))

    async def namespace_violations_page(
        self,
        namespace: str,
        *,
        page_size: Optional[int] = None,
        page_token: Optional[str] = None,
    ) -> ViolationsPage:
        """See `Client.namespace_violations_page`."""
        request = _Api.namespace_violations(namespace, page_size, page_token)
        return await self._call(request, _Api.violations_page)

    async def namespace_violations(
        self,
        namespace: str,
        *,
        limit: Optional[int] = None,
        page_size: Optional[int] = None,
    ) -> AsyncIterator[ViolatingItem]:
        """See `Client.namespace_violations`."""
        pages = _Pages(page_size, limit)
        while not pages.done:
            request = _Api.namespace_violations(namespace, pages.size, pages.token)
            page = await self._call(request, _Api.violations_page)
            for item in pages.take(page.items, page.next_page_token):
                yield item

    async def session(self) -> Session:
        """See `Client.session`."""
        return await self._call(_Api.session(), _Api.session_of)

    async def list_roles(self) -> List[Role]:
        """See `Client.list_roles`."""
        return await self._call(_Api.list_roles(), _Api.roles)

    async def get_role(self, name: str) -> Optional[Role]:
        """See `Client.get_role`."""
        return await self._call(_Api.get_role(name), _Api.role_or_none)

    async def put_role(
        self,
        name: str,
        rules: Sequence[RuleLike],
        *,
        description: Optional[str] = None,
        must_not_exist: bool = False,
        if_version: Optional[int] = None,
    ) -> Role:
        """See `Client.put_role`."""
        request = _Api.put_role(name, rules, description, must_not_exist, if_version)
        return await self._call(request, _Api.role)

    async def delete_role(self, name: str, *, if_version: Optional[int] = None) -> bool:
        """See `Client.delete_role`."""
        return await self._call(_Api.delete_role(name, if_version), _Api.deleted)

    async def create_token(
        self,
        role: str,
        *,
        vars: Optional[Mapping[str, VarValue]] = None,
        expires_at: Optional[datetime] = None,
        description: Optional[str] = None,
    ) -> IssuedToken:
        """See `Client.create_token`."""
        request = _Api.create_token(role, vars, expires_at, description)
        return await self._call(request, _Api.issued)

    async def list_tokens(self) -> List[TokenInfo]:
        """See `Client.list_tokens`."""
        return await self._call(_Api.list_tokens(), _Api.tokens)

    async def get_token(self, id: str) -> Optional[TokenInfo]:
        """See `Client.get_token`."""
        return await self._call(_Api.get_token(id), _Api.token_or_none)

    async def revoke_token(self, id: str) -> bool:
        """See `Client.revoke_token`."""
        return await self._call(_Api.revoke_token(id), _Api.deleted)
