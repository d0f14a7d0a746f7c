"""Interactive transactions: `Client.transaction(fn)` and `AsyncClient.transaction(fn)`.

`fn` reads and writes through a `Transaction` (`AsyncTransaction`). The transaction records what
it read (each path's version or absence, each listing's range, `changes_token` and the items
its pages showed) and buffers its writes, which its own reads then see. The commit is one
`POST /v1/transact`: the creates, then the writes in the order made, each conditional on what
was read at its path, then a `check` for every other path read and a `check_list` for every
listing. When one of them no longer holds (409 `condition_failed`), `fn` runs again from the
start on what is there now. docs/transactions.md has the design; this follows the Rust
`Store::transaction` (crates/pathdb-store/src/interactive.rs).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import random
import re
import warnings
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import (
    Any,
    AsyncIterator,
    Awaitable,
    Callable,
    Deque,
    Dict,
    Generator,
    Iterable,
    Iterator,
    List,
    Optional,
    Sequence,
    Tuple,
    Union,
)

from ._api import Plan, _Api, _AsyncRunner, _call, _Pages, _Runner, _Sleep
from ._errors import ConditionFailed, InvalidRequest, NotFound
from ._keypath import KeyPath, PathLike, covers, to_path
from ._model import (
    Check,
    CheckList,
    Create,
    Delete,
    Entry,
    IdKind,
    Item,
    Node,
    Op,
    Page,
    PatchOperation,
    Put,
)
from ._patch import json_patch, merge_patch

MAX_TRANSACTION_ATTEMPTS = 16
"""How many times `transaction` runs its callback at most (its `max_attempts` by default)."""

MAX_BACKOFF_MS = 64


def backoff_ceiling(failed_runs: int) -> float:
    """Seconds below which the pause after `failed_runs` failed runs is drawn at random:
    2^failed_runs ms, at most 64 ms."""
    return float(min(2**failed_runs, MAX_BACKOFF_MS)) / 1000.0


@dataclass(frozen=True)
class _Put:
    value: Any


@dataclass(frozen=True)
class _Delete:
    pass


_Pending = Union[_Put, _Delete]

_RangeKey = Tuple[
    KeyPath,
    bool,
    Optional[KeyPath],
    Optional[KeyPath],
    Optional[KeyPath],
    Optional[KeyPath],
    Optional[str],
]
"""A listing's identity in a transaction: its range (prefix, children, bounds) and its filter."""


@dataclass
class _Listing:
    """A listing read in the transaction: its range and filter, its first page's token, what it
    showed."""

    prefix: KeyPath
    children: bool
    gt: Optional[KeyPath]
    gte: Optional[KeyPath]
    lt: Optional[KeyPath]
    lte: Optional[KeyPath]
    token: str
    filter: Optional[str] = None
    seen: Dict[KeyPath, int] = field(default_factory=dict)
    # A page token -> the key of the last entry of the page that returned it: the next page
    # starts after it, so a pending write shows on exactly one page.
    after: Dict[str, bytes] = field(default_factory=dict)

    def child_of(self, path: KeyPath) -> Optional[KeyPath]:
        """The prefix's child that `path` is or lies under (None for the prefix itself)."""
        depth = len(self.prefix) + 1
        if len(path) < depth:
            return None
        return KeyPath._unchecked(path.elements[:depth])

    def covers(self, path: KeyPath) -> bool:
        """Whether a write at `path` changes what the listing shows (ListRange::covers)."""
        if not covers(self.prefix, path):
            return False
        entry: Optional[KeyPath] = path
        if self.children:
            entry = self.child_of(path)
            if entry is None:
                return False
        assert entry is not None
        key = entry.encode()
        return (
            (self.gt is None or key > self.gt.encode())
            and (self.gte is None or key >= self.gte.encode())
            and (self.lt is None or key < self.lt.encode())
            and (self.lte is None or key <= self.lte.encode())
        )

    def op(self) -> CheckList:
        return CheckList(
            self.prefix,
            self.token,
            children=self.children,
            gt=self.gt,
            gte=self.gte,
            lt=self.lt,
            lte=self.lte,
            seen=dict(self.seen),
            filter=self.filter,
        )


_GROUP_NAMESPACE = re.compile(r"/[A-Za-z_][A-Za-z0-9_]{0,63}")


class PendingCreate:
    """What `tx.create` returns: the item it creates, once the transaction committed (its id,
    and so its path, is generated at the commit). `path` and `item` are None until then, and
    stay None when the run that made it did not commit."""

    def __init__(self, parent: Optional[KeyPath], namespace: str, value: Any, id: IdKind) -> None:
        self.parent = parent
        self.namespace = namespace
        self.value = value
        self.id: IdKind = id
        self.item: Optional[Item] = None

    @property
    def path(self) -> Optional[KeyPath]:
        """The created item's path, after the commit."""
        return None if self.item is None else self.item.path

    def __repr__(self) -> str:
        where = f"{self.parent or ''}/{self.namespace}-<{self.id}>"
        return f"PendingCreate({where!r}, path={self.path!r})"


def _create_target(target: PathLike) -> Tuple[Optional[KeyPath], str]:
    """`/user-1/order` -> (`/user-1`, "order"); `/user` (a new group) -> (None, "user")."""
    if isinstance(target, str) and _GROUP_NAMESPACE.fullmatch(target):
        return None, target[1:]
    path = to_path(target)
    last = path.elements[-1]
    if last.id is not None:
        raise ValueError(
            f"create takes the parent and the new item's namespace (/user-1/order), not a full "
            f"path: {path}"
        )
    return path.parent, last.namespace


class _State:
    """What one run of the callback read and wrote; no I/O."""

    def __init__(self) -> None:
        self.reads: Dict[KeyPath, Optional[Item]] = {}
        self.listings: Dict[_RangeKey, _Listing] = {}
        # In the order made; a path written again keeps its place and takes the new write.
        self.writes: Dict[KeyPath, _Pending] = {}
        self.creates: List[PendingCreate] = []
        self.done = False

    def check_open(self) -> None:
        if self.done:
            raise RuntimeError(
                "this transaction's run is over: use the transaction object only inside the "
                "callback it was given to"
            )

    def unread(self, paths: Iterable[KeyPath]) -> List[KeyPath]:
        return [p for p in dict.fromkeys(paths) if p not in self.reads]

    def record(self, path: KeyPath, item: Optional[Item]) -> None:
        self.reads.setdefault(path, item)

    def view(self, path: KeyPath) -> Optional[Item]:
        """The item at a path read before, as this transaction sees it (its own write, if any)."""
        read = self.reads[path]
        pending = self.writes.get(path)
        if pending is None:
            return None if read is None else dataclasses.replace(read, value=copy.deepcopy(read.value))
        if isinstance(pending, _Delete):
            return None
        now = datetime.now(timezone.utc)
        return Item(
            path=path,
            version=1 if read is None else read.version + 1,
            value=copy.deepcopy(pending.value),
            created_at=now if read is None else read.created_at,
            modified_at=now,
            expires_at=None,
        )

    def write(self, path: PathLike, pending: _Pending) -> None:
        self.check_open()
        self.writes[to_path(path)] = pending

    def put(self, path: PathLike, value: Any) -> None:
        self.write(path, _Put(_snapshot(value)))

    def create(self, target: PathLike, value: Any, id: IdKind) -> PendingCreate:
        self.check_open()
        parent, namespace = _create_target(target)
        Create(parent, namespace, None, id=id)  # checks the namespace now
        handle = PendingCreate(parent, namespace, _snapshot(value), id)
        self.creates.append(handle)
        return handle

    # Reads: plans, which `Transaction` and `AsyncTransaction` run through their client -------

    def get(self, path: PathLike) -> Plan[Optional[Item]]:
        """See `Transaction.get`."""
        self.check_open()
        key = to_path(path)
        if key not in self.reads:
            self.record(key, (yield from _call(_Api.get(key, None), _Api.item_or_none)))
        return self.view(key)

    def get_many(self, paths: Iterable[PathLike]) -> Plan[List[Optional[Item]]]:
        """See `Transaction.get_many`."""
        self.check_open()
        keys = [to_path(p) for p in paths]
        unread = self.unread(keys)
        if unread:
            items = yield from _call(_Api.get_many(unread), _Api.many(unread))
            for key, item in zip(unread, items):
                self.record(key, item)
        return [self.view(k) for k in keys]

    def list_page(
        self,
        key: _RangeKey,
        reverse: bool,
        page_size: Optional[int],
        page_token: Optional[str],
        max_scan: Optional[int] = None,
    ) -> Plan[Page[Any]]:
        """See `Transaction.list_page`."""
        prefix, children, gt, gte, lt, lte, filter = key
        known = self.listing_before(key, prefix, page_token)
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
            None,
            max_scan,
        )
        page = yield from _call(request, _Api.page)
        listing = self.listed(key, known, page)
        yield from self.get_many(self.overlay_reads(listing, page, reverse, page_token))
        return self.overlay(listing, page, reverse, page_token)

    def patch(self, path: PathLike, merge: Any, patch: Any) -> Plan[Item]:
        """See `Transaction.patch`."""
        if (merge is _UNSET) == (patch is None):
            raise TypeError("patch takes exactly one of merge= and patch=")
        key = to_path(path)
        current = yield from self.get(key)
        if current is None:
            raise NotFound(f"no item at {key} to patch", code="not_found")
        if merge is not _UNSET:
            value = merge_patch(current.value, merge)
        else:
            value = json_patch(current.value, patch)
        self.put(key, value)
        item = self.view(key)
        assert item is not None
        return item

    # Listings --------------------------------------------------------------------------------

    def listing_before(
        self, key: _RangeKey, prefix: KeyPath, page_token: Optional[str]
    ) -> Optional[_Listing]:
        """The listing of this range read before; a next page of one never read is refused."""
        self.check_open()
        known = self.listings.get(key)
        if known is None and page_token is not None:
            raise InvalidRequest(
                f"list {prefix}'s first page in the transaction before its next pages: the "
                "commit checks the listing from its first page's changes_token",
                code="invalid_request",
            )
        return known

    def listed(
        self,
        key: _RangeKey,
        known: Optional[_Listing],
        page: Page[Any],
    ) -> _Listing:
        """Records a page of a listing: a first page starts its check, every page adds to what
        it showed."""
        listing = known
        if listing is None:
            if page.changes_token is None:
                raise InvalidRequest(
                    "the server gave the listing's first page no changes_token: it cannot check "
                    "listings (an older server?)",
                    code="invalid_request",
                )
            prefix, children, gt, gte, lt, lte, filter = key
            listing = _Listing(
                prefix, children, gt, gte, lt, lte, page.changes_token, filter=filter
            )
            self.listings[key] = listing
        for entry in page.items:
            if isinstance(entry, Item):
                # Where the listing shows it: under an alias, the alias (docs/aliases.md).
                at = entry.alias if entry.alias is not None else entry.path
                held = listing.seen.get(at)
                # Shown twice (read again): the older version is what a decision may rest on.
                listing.seen[at] = entry.version if held is None else min(held, entry.version)
        return listing

    @staticmethod
    def _within(
        listing: _Listing, page: Page[Any], reverse: bool, page_token: Optional[str]
    ) -> Callable[[bytes], bool]:
        """Whether a key is this page's share of the range: after the previous page's last
        entry, up to its own last entry when more pages follow (so a write shows on one page)."""
        if page.next_page_token is not None and not page.items:
            # An empty page with a next one (a filtered page stops after max_scan items): where
            # it stopped is the server's secret, so what would join it joins a later page.
            return lambda key: False
        start = listing.after.get(page_token) if page_token is not None else None
        end: Optional[bytes] = None
        if page.next_page_token is not None and page.items:
            end = _position(page.items[-1]).encode()

        def within(key: bytes) -> bool:
            if reverse:
                return (start is None or key < start) and (end is None or key >= end)
            return (start is None or key > start) and (end is None or key <= end)

        return within

    def _overlaid(self, listing: _Listing) -> List[Tuple[KeyPath, _Pending]]:
        return [(p, w) for p, w in self.writes.items() if listing.covers(p)]

    def overlay_reads(
        self, listing: _Listing, page: Page[Any], reverse: bool, page_token: Optional[str]
    ) -> List[KeyPath]:
        """The paths the overlay reads first: items put here that join the page (the view of
        an item put has the version read + 1, so, as in Rust, the read is then checked).

        A filtered listing cannot show them: whether a value put here matches the filter is
        the server's to say (the client does not evaluate filters), so such a page is refused
        rather than shown wrong."""
        within = self._within(listing, page, reverse, page_token)
        joining = [
            p
            for p, w in self._overlaid(listing)
            if isinstance(w, _Put)
            and not (listing.children and len(p) > len(listing.prefix) + 1)
            and within(p.encode())
        ]
        if listing.filter is not None and joining:
            raise InvalidRequest(
                f"a filtered listing of {listing.prefix} cannot show what this transaction put "
                f"in its range ({joining[0]}): the client cannot tell whether a value put here "
                "matches the filter. List before writing there, or list without a filter",
                code="invalid_request",
            )
        return self.unread(joining)

    def overlay(
        self,
        listing: _Listing,
        page: Page[Any],
        reverse: bool,
        page_token: Optional[str],
    ) -> Page[Any]:
        """`page` with this transaction's writes in the listing's range applied: items put
        replace or join the entries (in key order), items deleted leave. A children listing
        shows a child deleted here as gone even when items remain below it, and a child with
        a put below it at least as a node."""
        within = self._within(listing, page, reverse, page_token)
        if page.next_page_token is not None and page.items:
            listing.after[page.next_page_token] = _position(page.items[-1]).encode()
        elif page.next_page_token is not None and page_token in listing.after:
            # An empty page (a filtered one stops after max_scan items): the next starts where
            # this one did, as far as the overlay knows.
            listing.after[page.next_page_token] = listing.after[page_token]
        writes = self._overlaid(listing)
        if not writes:
            return page
        entries: List[Entry] = list(page.items)
        for path, pending in writes:
            if listing.children and len(path) > len(listing.prefix) + 1:
                child = listing.child_of(path)
                if (
                    child is not None
                    and listing.filter is None  # a node never matches a filter
                    and isinstance(pending, _Put)
                    and within(child.encode())
                    and not any(e.path == child for e in entries)
                ):
                    _insert_sorted(entries, Node(path=child), reverse)
                continue
            entries = [e for e in entries if e.path != path]
            if isinstance(pending, _Put) and within(path.encode()):
                item = self.view(path)
                if item is not None:
                    _insert_sorted(entries, item, reverse)
        return Page(
            items=entries,
            next_page_token=page.next_page_token,
            changes_token=page.changes_token,
            scanned=page.scanned,
        )

    # The commit ------------------------------------------------------------------------------

    def ops(self) -> List[Op]:
        """The transaction to commit (empty when the callback neither read nor wrote)."""
        ops: List[Op] = [Create(c.parent, c.namespace, c.value, id=c.id) for c in self.creates]
        missing = object()
        for path, pending in self.writes.items():
            read = self.reads.get(path, missing)
            if isinstance(pending, _Put):
                if read is missing:
                    ops.append(Put(path, pending.value))
                elif read is None:
                    ops.append(Put(path, pending.value, must_not_exist=True))
                else:
                    assert isinstance(read, Item)
                    ops.append(Put(path, pending.value, if_version=read.version))
            elif read is missing:
                ops.append(Delete(path))
            elif read is None:
                # Nothing to delete, and the commit must find it still absent.
                ops.append(Check(path, must_not_exist=True))
            else:
                assert isinstance(read, Item)
                ops.append(Delete(path, if_version=read.version))
        # In key order: the same reads give the same transaction.
        checked = sorted((p for p in self.reads if p not in self.writes), key=KeyPath.encode)
        for path in checked:
            item = self.reads[path]
            if item is None:
                ops.append(Check(path, must_not_exist=True))
            else:
                ops.append(Check(path, if_version=item.version))
        ops.extend(listing.op() for listing in self.listings.values())
        return ops

    def committed(self, results: Sequence[Optional[Item]]) -> None:
        for handle, item in zip(self.creates, results):
            handle.item = item


class _Runs:
    """The runs of a transaction's callback: after each, `commit` commits what it wrote, or
    decides that it runs again (after a pause) or that the transaction failed."""

    def __init__(self, max_attempts: int) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts is at least 1")
        self.max_attempts = max_attempts
        self.runs = 0

    def commit(self, state: _State) -> Plan[bool]:
        """Commits what the run in `state` wrote: True when done (committed, or nothing to
        commit), False when something it read changed meanwhile and it runs again. Raises
        `ConditionFailed` after `max_attempts` runs."""
        self.runs += 1
        ops = state.ops()
        if not ops:
            return True
        try:
            results = yield from _call(_Api.transact(ops), _Api.results)
        except ConditionFailed:
            if self.runs >= self.max_attempts:
                raise
            yield _Sleep(random.uniform(0, backoff_ceiling(self.runs)))
            return False
        state.committed(results)
        return True


def _insert_sorted(entries: List[Entry], entry: Entry, reverse: bool) -> None:
    """Inserts `entry` before the first entry that does not sort before it."""
    key = entry.path.encode()
    at = len(entries)
    for i, other in enumerate(entries):
        other_key = other.path.encode()
        if not ((other_key > key) if reverse else (other_key < key)):
            at = i
            break
    entries.insert(at, entry)


def _snapshot(value: Any) -> Any:
    """A copy of `value`, checked as JSON now (as a request body is): a later change to the
    caller's object does not change what commits."""
    return json.loads(json.dumps(value, allow_nan=False, ensure_ascii=False))


class _Unset:
    def __repr__(self) -> str:
        return "<unset>"


_UNSET: Any = _Unset()


def _range_key(
    prefix: PathLike,
    children: bool,
    gt: Optional[PathLike],
    gte: Optional[PathLike],
    lt: Optional[PathLike],
    lte: Optional[PathLike],
    filter: Optional[str] = None,
) -> _RangeKey:
    def bound(b: Optional[PathLike]) -> Optional[KeyPath]:
        return None if b is None else to_path(b)

    if filter is not None and not isinstance(filter, str):
        raise TypeError(f"a filter is a str (a CEL expression), not {type(filter).__name__}")
    return (to_path(prefix), bool(children), bound(gt), bound(gte), bound(lt), bound(lte), filter)


_PAGE_OF_LIST = (
    "tx.list(...) iterates the listing's items now, as Client.list does; use "
    "tx.list_page(...) for one page (.items, .next_page_token, .changes_token)"
)


class _ListingPages:
    """Where a transaction's listing that follows page tokens stands: the entries read but not
    yet handed out, and its first page (for the deprecated page view)."""

    def __init__(
        self, page_size: Optional[int], limit: Optional[int], page_token: Optional[str]
    ) -> None:
        self.pages = _Pages(page_size, limit)
        self.pages.token = page_token
        self.pending: Deque[Any] = deque()
        self.first: Optional[Page[Any]] = None

    def read(self, page: Page[Any]) -> None:
        if self.first is None:
            self.first = page
        self.pending.extend(self.pages.take(page.items, page.next_page_token))

    def first_page(self) -> Optional[Page[Any]]:
        """The first page read, or None when none was read yet (the caller reads it); an empty
        page when there is nothing to read (`limit` 0)."""
        if self.first is None and self.pages.done:
            return Page(items=[], next_page_token=None)
        return self.first


class TransactionListing(Iterator[Any]):
    """What `Transaction.list` returns: an iterator over the listing's entries (its items, and
    with `children` its nodes), with the transaction's own writes applied, that reads the
    listing's pages through the transaction as it goes (so each is checked at the commit).

    Before `tx.list` iterated, it returned one page: `items`, `next_page_token`,
    `changes_token` and `scanned` still give the first page (they read it if need be), with a
    `DeprecationWarning`; use `tx.list_page` for pages."""

    def __init__(
        self,
        read: Callable[[Optional[int], Optional[str]], Page[Any]],
        page_size: Optional[int],
        limit: Optional[int],
        page_token: Optional[str],
    ) -> None:
        self._read = read
        self._state = _ListingPages(page_size, limit, page_token)

    def __iter__(self) -> TransactionListing:
        return self

    def __next__(self) -> Any:
        state = self._state
        while not state.pending:
            if state.pages.done:
                raise StopIteration
            state.read(self._read(state.pages.size, state.pages.token))
        return state.pending.popleft()

    def _page(self) -> Page[Any]:
        warnings.warn(_PAGE_OF_LIST, DeprecationWarning, stacklevel=3)
        first = self._state.first_page()
        if first is None:
            state = self._state
            state.read(self._read(state.pages.size, state.pages.token))
            first = state.first
        assert first is not None
        return first

    @property
    def items(self) -> List[Any]:
        """Deprecated: the first page's entries (use `tx.list_page(...).items`)."""
        return self._page().items

    @property
    def next_page_token(self) -> Optional[str]:
        """Deprecated: the first page's `next_page_token` (use `tx.list_page`)."""
        return self._page().next_page_token

    @property
    def changes_token(self) -> Optional[str]:
        """Deprecated: the first page's `changes_token` (use `tx.list_page`)."""
        return self._page().changes_token

    @property
    def scanned(self) -> Optional[int]:
        """Deprecated: the first page's `scanned` (use `tx.list_page`)."""
        return self._page().scanned


class AsyncTransactionListing(AsyncIterator[Any]):
    """What `AsyncTransaction.list` returns: an async iterator over the listing's entries, as
    `TransactionListing` (`async for item in tx.list(prefix)`). Awaiting it (`await
    tx.list(prefix)`, as when it returned one page) gives the first page, with a
    `DeprecationWarning`: use `await tx.list_page(...)` for pages."""

    def __init__(
        self,
        read: Callable[[Optional[int], Optional[str]], Awaitable[Page[Any]]],
        page_size: Optional[int],
        limit: Optional[int],
        page_token: Optional[str],
    ) -> None:
        self._read = read
        self._state = _ListingPages(page_size, limit, page_token)

    def __aiter__(self) -> AsyncTransactionListing:
        return self

    async def __anext__(self) -> Any:
        state = self._state
        while not state.pending:
            if state.pages.done:
                raise StopAsyncIteration
            state.read(await self._read(state.pages.size, state.pages.token))
        return state.pending.popleft()

    async def _first_page(self) -> Page[Any]:
        first = self._state.first_page()
        if first is None:
            state = self._state
            state.read(await self._read(state.pages.size, state.pages.token))
            first = state.first
        assert first is not None
        return first

    def __await__(self) -> Generator[Any, None, Page[Any]]:
        warnings.warn(_PAGE_OF_LIST, DeprecationWarning, stacklevel=2)
        return self._first_page().__await__()


def _deprecated_page_token(page_token: Optional[str]) -> None:
    if page_token is not None:
        warnings.warn(
            "tx.list(..., page_token=...) is deprecated: use tx.list_page(..., page_token=...) "
            "for one page",
            DeprecationWarning,
            stacklevel=3,
        )


class Transaction:
    """The callback's handle in `Client.transaction`: reads that the commit checks, and writes
    that commit together, all or nothing (see `Client.transaction`)."""

    def __init__(self, client: _Runner) -> None:
        self._client = client
        self._state = _State()

    def get(self, path: PathLike) -> Optional[Item]:
        """The item at `path` as this transaction sees it, or None. The first read of a path
        is the one the commit checks (its version, or that there was no item); later reads
        repeat it. After a `put` here: the value put, at the version it will have (the version
        read + 1); after a `delete`: None."""
        return self._client._run(self._state.get(path))

    def get_many(self, paths: Iterable[PathLike]) -> List[Optional[Item]]:
        """The items at `paths` as `get` sees them, None where there is none; the paths not read
        before are read together, in one request (at most 100)."""
        return self._client._run(self._state.get_many(paths))

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
        filter: Optional[str] = None,
        max_scan: Optional[int] = None,
        limit: Optional[int] = None,
        page_size: Optional[int] = None,
        page_token: Optional[str] = None,
    ) -> TransactionListing:
        """Every entry of a listing (or the first `limit`), as `Client.list` iterates them,
        with this transaction's writes in its range applied: `for item in tx.list(prefix)`.
        It reads the pages through the transaction as the loop goes (`page_size` each), and
        the commit fails if anything in the listing's range changes after its first page (with
        `filter`, only a change to the filtered result: an item entering, changing in or
        leaving it). `filter` and `max_scan` as in `Client.list`; a filtered listing cannot show
        items this transaction put in its range (`InvalidRequest`: the client does not evaluate
        filters), so list it before writing there.

        `page_token` is deprecated (`list_page` reads one page); so are the page attributes of
        the result (`.items`, ...), which give its first page."""
        _deprecated_page_token(page_token)
        key = _range_key(prefix, children, gt, gte, lt, lte, filter)
        state, client = self._state, self._client

        def read(size: Optional[int], token: Optional[str]) -> Page[Any]:
            return client._run(state.list_page(key, reverse, size, token, max_scan))

        return TransactionListing(read, page_size, limit, page_token)

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
        filter: Optional[str] = None,
        max_scan: Optional[int] = None,
        page_size: Optional[int] = None,
        page_token: Optional[str] = None,
    ) -> Page[Any]:
        """One page of a listing (as `Client.list_page`), with this transaction's writes in its
        range applied. The commit fails if anything in the listing's range (with `filter`: in
        its filtered result) changes after its first page: read the first page here, then the
        next ones with its page tokens (a `page_token` of a listing whose first page this
        transaction did not read raises `InvalidRequest`). A filtered page may be empty and
        still have a `next_page_token`."""
        key = _range_key(prefix, children, gt, gte, lt, lte, filter)
        return self._client._run(
            self._state.list_page(key, reverse, page_size, page_token, max_scan)
        )

    def put(self, path: PathLike, value: Any) -> None:
        """Writes `value` at `path` when the transaction commits (if `path` was read, only if it
        is still as read)."""
        self._state.put(path, value)

    def patch(
        self,
        path: PathLike,
        *,
        merge: Any = _UNSET,
        patch: Optional[Sequence[PatchOperation]] = None,
    ) -> Item:
        """Changes the item at `path` as this transaction sees it: reads it (`get`), applies a
        JSON Merge Patch (`merge=`, RFC 7396) or a JSON Patch (`patch=[...]`, RFC 6902 plus
        `increment`) here, in the client, and puts the result; returns the item as it will be.
        Raises `NotFound` for no item, and `PatchTestFailed`, `PatchConflict` or
        `InvalidRequest` (`invalid_patch`) as the server would."""
        return self._client._run(self._state.patch(path, merge, patch))

    def create(self, parent_and_namespace: PathLike, value: Any, *, id: IdKind = "uuid") -> PendingCreate:
        """Creates an item with a generated id at `{parent}/{namespace}-{id}` when the
        transaction commits: `tx.create("/user-1/order", {...})` (`"/user"` makes a new group).
        Returns a `PendingCreate` whose `path` and `item` are filled in by the commit."""
        return self._state.create(parent_and_namespace, value, id)

    def delete(self, path: PathLike) -> None:
        """Deletes the item at `path` when the transaction commits (if `path` was read, only if
        it is still as read; read as absent, the commit only checks it is still absent)."""
        self._state.write(path, _Delete())


class AsyncTransaction:
    """The asyncio twin of `Transaction`: `get`, `get_many`, `list_page` and `patch` are
    awaited, `list` is an async iterator (`async for item in tx.list(prefix)`); `put`, `create`
    and `delete` only record a write."""

    def __init__(self, client: _AsyncRunner) -> None:
        self._client = client
        self._state = _State()

    async def get(self, path: PathLike) -> Optional[Item]:
        """See `Transaction.get`."""
        return await self._client._run(self._state.get(path))

    async def get_many(self, paths: Iterable[PathLike]) -> List[Optional[Item]]:
        """See `Transaction.get_many`."""
        return await self._client._run(self._state.get_many(paths))

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
        filter: Optional[str] = None,
        max_scan: Optional[int] = None,
        limit: Optional[int] = None,
        page_size: Optional[int] = None,
        page_token: Optional[str] = None,
    ) -> AsyncTransactionListing:
        """See `Transaction.list`: `async for item in tx.list(prefix)` (not awaited; awaiting
        it gives its first page, deprecated)."""
        _deprecated_page_token(page_token)
        key = _range_key(prefix, children, gt, gte, lt, lte, filter)
        state, client = self._state, self._client

        def read(size: Optional[int], token: Optional[str]) -> Awaitable[Page[Any]]:
            return client._run(state.list_page(key, reverse, size, token, max_scan))

        return AsyncTransactionListing(read, page_size, limit, page_token)

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
        filter: Optional[str] = None,
        max_scan: Optional[int] = None,
        page_size: Optional[int] = None,
        page_token: Optional[str] = None,
    ) -> Page[Any]:
        """See `Transaction.list_page`."""
        key = _range_key(prefix, children, gt, gte, lt, lte, filter)
        return await self._client._run(
            self._state.list_page(key, reverse, page_size, page_token, max_scan)
        )

    def put(self, path: PathLike, value: Any) -> None:
        """See `Transaction.put`."""
        self._state.put(path, value)

    async def patch(
        self,
        path: PathLike,
        *,
        merge: Any = _UNSET,
        patch: Optional[Sequence[PatchOperation]] = None,
    ) -> Item:
        """See `Transaction.patch`."""
        return await self._client._run(self._state.patch(path, merge, patch))

    def create(self, parent_and_namespace: PathLike, value: Any, *, id: IdKind = "uuid") -> PendingCreate:
        """See `Transaction.create`."""
        return self._state.create(parent_and_namespace, value, id)

    def delete(self, path: PathLike) -> None:
        """See `Transaction.delete`."""
        self._state.write(path, _Delete())


def _position(entry: Any) -> KeyPath:
    """Where a listing shows an entry: an item listed under an alias is at the alias."""
    alias = getattr(entry, "alias", None)
    return alias if isinstance(alias, KeyPath) else entry.path
