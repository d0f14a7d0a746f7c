"""Filters, projections, counts and filtered change feeds (docs/filters.md), one name one shape
(`list` iterates, `list_page` reads a page, on `Client`, `AsyncClient` and the transactions),
and a `KeyPath` equal to its text.

The first part runs against scripted answers (the requests sent and how the answers read); the
tests marked `needs_filters` run against a real `pathdb serve` (see conftest.py) and need a server
with filters (`GET /v1/list?filter=...`)."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Callable, Dict, List, Optional

import httpx
import pytest

from pathdb import (
    AsyncClient,
    AsyncTransaction,
    CheckList,
    Client,
    DeleteChange,
    InvalidFilter,
    InvalidRequest,
    Item,
    KeyPath,
    PathDBError,
    PathLike,
    PutChange,
    Transaction,
    TransactionListing,
)

from .conftest import TOKEN, Server

Handler = Callable[[httpx.Request], httpx.Response]


def recording(handler: Handler, calls: List[httpx.Request]) -> httpx.MockTransport:
    def record(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return handler(request)

    return httpx.MockTransport(record)


def wire_item(path: str, version: int = 1, value: Any = None) -> Dict[str, Any]:
    return {"path": path, "version": version, "created_at": 0, "modified_at": 0, "expires_at": None, "value": value}


def params(request: httpx.Request) -> Dict[str, str]:
    return dict(request.url.params)


def invalid_filter(position: Optional[int] = 7) -> httpx.Response:
    error: Dict[str, Any] = {"code": "invalid_filter", "message": "undeclared reference to 'valu'"}
    if position is not None:
        error["position"] = position
    return httpx.Response(400, json={"error": error})


# A listing of /a-1 in pages: a filtered page may be empty and still have a next page.
PAGES: Dict[Optional[str], Dict[str, Any]] = {
    None: {"items": [wire_item("/a-1/x-1", 1, 1)], "next_page_token": "p2", "changes_token": "C", "scanned": 3},
    "p2": {"items": [], "next_page_token": "p3", "scanned": 3},
    "p3": {"items": [], "next_page_token": "p4", "scanned": 3},
    "p4": {"items": [wire_item("/a-1/x-9", 2, 9)], "scanned": 2},
}


def paged(request: httpx.Request) -> httpx.Response:
    assert request.url.path.startswith("/v1/list/")
    if request.url.params.get("count") == "true":
        counts = {None: (4, "c2"), "c2": (0, "c3"), "c3": (5, None)}
        count, token = counts[request.url.params.get("page_token")]
        body: Dict[str, Any] = {"count": count, "scanned": 10}
        if token is not None:
            body["next_page_token"] = token
        return httpx.Response(200, json=body)
    return httpx.Response(200, json=PAGES[request.url.params.get("page_token")])


# ------------------------------------------------------------------------------------------------
# Requests and answers (scripted)


def test_list_sends_the_filter_and_follows_empty_pages() -> None:
    calls: List[httpx.Request] = []
    expr = 'value.status == "open" && value.total > 100'
    with Client("http://db", transport=recording(paged, calls)) as c:
        items = list(c.list("/a-1", filter=expr, fields=["title", "author.name"], max_scan=3, page_size=50))
    assert [i.value for i in items] == [1, 9]
    assert len(calls) == 4  # through both empty pages to the end
    first = params(calls[0])
    assert first == {"filter": expr, "fields": "title,author.name", "max_scan": "3", "limit": "50"}
    assert [params(c).get("page_token") for c in calls] == [None, "p2", "p3", "p4"]
    assert all(params(c)["filter"] == expr and params(c)["max_scan"] == "3" for c in calls)
    # The filter is sent as is, percent-encoded in the query.
    assert b"filter=value.status+%3D%3D+%22open%22+%26%26+value.total+%3E+100" in calls[0].url.query


def test_list_page_has_scanned_and_the_limit_spans_empty_pages() -> None:
    calls: List[httpx.Request] = []
    with Client("http://db", transport=recording(paged, calls)) as c:
        page = c.list_page("/a-1", filter="true", fields="title")
        assert (page.scanned, page.next_page_token, page.changes_token) == (3, "p2", "C")
        assert params(calls[0]) == {"filter": "true", "fields": "title"}
        empty = c.list_page("/a-1", filter="true", page_token="p2")
        assert (empty.items, empty.scanned, empty.next_page_token) == ([], 3, "p3")
        calls.clear()
        # `limit` counts items, not pages: the empty pages do not use it up.
        assert [i.value for i in c.list("/a-1", filter="true", limit=2)] == [1, 9]
        assert [params(r)["limit"] for r in calls] == ["2", "1", "1", "1"]
    # A server from before filters says nothing of `scanned`.
    with Client("http://db", transport=httpx.MockTransport(lambda r: httpx.Response(200, json={"items": []}))) as c:
        assert c.list_page("/a-1").scanned is None


def test_count_follows_pages_and_sums() -> None:
    calls: List[httpx.Request] = []
    with Client("http://db", transport=recording(paged, calls)) as c:
        assert c.count("/a-1", filter="value.n > 1", max_scan=10, gte="/a-1/x-1") == 9
    assert [params(r) for r in calls] == [
        {"count": "true", "filter": "value.n > 1", "max_scan": "10", "gte": "/a-1/x-1"},
        {"count": "true", "filter": "value.n > 1", "max_scan": "10", "gte": "/a-1/x-1", "page_token": "c2"},
        {"count": "true", "filter": "value.n > 1", "max_scan": "10", "gte": "/a-1/x-1", "page_token": "c3"},
    ]
    assert all(r.url.path == "/v1/list/a-1" for r in calls)
    calls.clear()
    with Client("http://db", transport=recording(paged, calls)) as c:
        assert c.count(KeyPath.parse("/a-1/x"), children=True) == 9
    assert params(calls[0]) == {"count": "true", "children": "true"}

    async def main() -> None:
        async with AsyncClient("http://db", transport=httpx.MockTransport(paged)) as c:
            assert await c.count("/a-1", filter="true") == 9
            assert [i.value async for i in c.list("/a-1", filter="true", max_scan=3)] == [1, 9]
            page = await c.list_page("/a-1", filter="true", page_token="p3")
            assert page.items == [] and page.next_page_token == "p4"

    asyncio.run(main())


def test_get_and_get_many_send_fields_and_filter() -> None:
    calls: List[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/get":
            # Items the filter does not match are left out, like missing ones.
            return httpx.Response(200, json={"items": [wire_item("/a-1/x-2", 1, {"title": "b"})]})
        return httpx.Response(200, json=wire_item("/a-1/x-1", 3, {"title": "a"}), headers={"ETag": '"3"'})

    with Client("http://db", transport=recording(handler, calls)) as c:
        got = c.get("/a-1/x-1", fields=["title"])
        assert got is not None and got.value == {"title": "a"} and got.version == 3
        c.get("/a-1/x-1", fields="title,author.name")
        c.get("/a-1/x-1")
        many = c.get_many(["/a-1/x-1", "/a-1/x-2", "/a-1/x-3"], filter="value.title == 'b'", fields=["title"])
        assert [i.value if i else None for i in many] == [None, {"title": "b"}, None]
        c.get_many(["/a-1/x-1"])
    assert [params(r) for r in calls] == [
        {"fields": "title"},
        {"fields": "title,author.name"},
        {},
        {"filter": "value.title == 'b'", "fields": "title"},
        {},
    ]
    assert calls[3].method == "POST" and json.loads(calls[3].content) == {"paths": ["/a-1/x-1", "/a-1/x-2", "/a-1/x-3"]}
    with Client("http://db", transport=recording(handler, calls)) as c:
        with pytest.raises(ValueError):
            c.get("/a-1/x-1", fields=["title", ""])
        with pytest.raises(ValueError):
            c.get("/a-1/x-1", fields=[])
        with pytest.raises(TypeError):
            c.list_page("/a-1", filter=1)  # type: ignore[call-overload]

    async def main() -> None:
        async with AsyncClient("http://db", transport=recording(handler, calls)) as c:
            calls.clear()
            got = await c.get("/a-1/x-1", fields=["title"])
            assert got is not None and got.value == {"title": "a"}
            many = await c.get_many(["/a-1/x-2"], filter="true", fields="title")
            assert many[0] is not None and many[0].value == {"title": "b"}
        assert [params(r) for r in calls] == [{"fields": "title"}, {"filter": "true", "fields": "title"}]

    asyncio.run(main())


def test_filtered_changes_and_watch() -> None:
    calls: List[httpx.Request] = []
    feed = {
        "changes": [
            {"op": "put", "item": wire_item("/a-1/x-1", 2, {"status": "open"})},
            {"op": "delete", "path": "/a-1/x-2", "version": 5, "left": True},
            {"op": "delete", "path": "/a-1/x-3", "version": 1},
        ],
        "next_token": "N2",
    }

    def handler(request: httpx.Request) -> httpx.Response:
        if "since" not in request.url.params:
            return httpx.Response(200, json={"changes": [], "next_token": "N1"})
        return httpx.Response(200, json=feed)

    expr = 'value.status == "open"'
    with Client("http://db", transport=recording(handler, calls)) as c:
        page = c.changes("/a-1", "N0", filter=expr, wait=5)
        put, left, deleted = page.changes
        assert isinstance(put, PutChange) and put.item.value == {"status": "open"}
        assert isinstance(left, DeleteChange) and left.left and left.version == 5
        assert isinstance(deleted, DeleteChange) and not deleted.left
        assert left == DeleteChange(KeyPath.parse("/a-1/x-2"), 5, None, left=True)
        watch = c.watch("/a-1", filter=expr, wait=5)
        got = [next(watch) for _ in range(3)]
        assert [type(g).__name__ for g in got] == ["PutChange", "DeleteChange", "DeleteChange"]
        assert watch.token == "N2"
    assert params(calls[0]) == {"filter": expr, "since": "N0", "wait": "5"}
    # The watch's first request (its start) and its long poll both carry the filter.
    assert params(calls[1]) == {"filter": expr}
    assert params(calls[2]) == {"filter": expr, "since": "N1", "wait": "5"}

    async def main() -> None:
        async with AsyncClient("http://db", transport=recording(handler, calls)) as c:
            calls.clear()
            page = await c.changes("/a-1", "N0", filter=expr)
            assert isinstance(page.changes[1], DeleteChange) and page.changes[1].left
            watch = c.watch("/a-1", since="N0", filter=expr)
            change = await watch.__anext__()
            assert isinstance(change, PutChange)
        assert params(calls[0]) == {"filter": expr, "since": "N0"}
        assert params(calls[1])["filter"] == expr

    asyncio.run(main())


def test_an_invalid_filter_is_invalid_filter_with_its_position() -> None:
    with Client("http://db", transport=httpx.MockTransport(lambda r: invalid_filter(7))) as c:
        for call in (
            lambda: c.list_page("/a-1", filter="valu.x == 1"),
            lambda: list(c.list("/a-1", filter="valu.x == 1")),
            lambda: c.count("/a-1", filter="valu.x == 1"),
            lambda: c.get_many(["/a-1"], filter="valu.x == 1"),
            lambda: c.changes("/a-1", filter="valu.x == 1"),
            lambda: c.transaction(lambda tx: list(tx.list("/a-1", filter="valu.x == 1"))),
        ):
            with pytest.raises(InvalidFilter) as raised:
                call()
            e = raised.value
            assert isinstance(e, InvalidRequest) and isinstance(e, PathDBError)
            assert (e.status, e.code, e.position) == (400, "invalid_filter", 7)
            assert e.message == "undeclared reference to 'valu'"
    with Client("http://db", transport=httpx.MockTransport(lambda r: invalid_filter(None))) as c:
        with pytest.raises(InvalidFilter) as raised:
            c.list_page("/a-1", filter="(")
        assert raised.value.position is None

    async def main() -> None:
        async with AsyncClient("http://db", transport=httpx.MockTransport(lambda r: invalid_filter(0))) as c:
            with pytest.raises(InvalidFilter) as raised:
                await c.count("/a-1", filter=" ")
            assert raised.value.position == 0

    asyncio.run(main())


# ------------------------------------------------------------------------------------------------
# Transactions (scripted)


class Scripted:
    """A server for a transaction: listings of `PAGES`, a stored item, and the commit recorded."""

    def __init__(self) -> None:
        self.calls: List[httpx.Request] = []
        self.ops: List[Dict[str, Any]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.calls.append(request)
        path = request.url.path
        if path == "/v1/transact":
            self.ops = json.loads(request.content)["ops"]
            return httpx.Response(200, json={"results": [{"op": "check"}] * len(self.ops)})
        if path == "/v1/get":
            asked = json.loads(request.content)["paths"]
            return httpx.Response(200, json={"items": [wire_item(p, 1, 0) for p in asked if p == "/a-1/x-1"]})
        if path.startswith("/v1/items/"):
            return httpx.Response(200, json=wire_item("/" + path[len("/v1/items/") :], 4, 0))
        return paged(request)


def test_tx_list_iterates_and_sends_the_filter_in_its_check() -> None:
    server = Scripted()
    expr = 'value.status == "open"'
    with Client("http://db", transport=httpx.MockTransport(server)) as c:

        def fn(tx: Transaction) -> List[Any]:
            listed = tx.list("/a-1", filter=expr, max_scan=3)
            assert isinstance(listed, TransactionListing)
            return [i.value for i in listed]

        assert c.transaction(fn) == [1, 9]
    lists = [r for r in server.calls if r.url.path.startswith("/v1/list/")]
    assert [params(r).get("page_token") for r in lists] == [None, "p2", "p3", "p4"]
    assert all(params(r)["filter"] == expr and params(r)["max_scan"] == "3" for r in lists)
    assert server.ops == [
        {
            "op": "check_list",
            "prefix": "/a-1",
            "changes_token": "C",
            "seen": {"/a-1/x-1": 1, "/a-1/x-9": 2},
            "filter": expr,
        }
    ]
    # One range with two filters is two listings, each checked with its own.
    server = Scripted()
    with Client("http://db", transport=httpx.MockTransport(server)) as c:

        def two(tx: Transaction) -> None:
            tx.list_page("/a-1", filter="true")
            tx.list_page("/a-1", filter="false")
            tx.list_page("/a-1")

        c.transaction(two)
    assert [(o["op"], o.get("filter")) for o in server.ops] == [
        ("check_list", "true"),
        ("check_list", "false"),
        ("check_list", None),
    ]
    assert CheckList("/a-1", "T", filter="true").to_wire() == {
        "op": "check_list",
        "prefix": "/a-1",
        "changes_token": "T",
        "filter": "true",
    }


def test_tx_list_page_reads_one_page_and_limit_stops_early() -> None:
    server = Scripted()
    with Client("http://db", transport=httpx.MockTransport(server)) as c:

        def fn(tx: Transaction) -> Any:
            first = tx.list_page("/a-1", filter="true", page_size=1)
            second = tx.list_page("/a-1", filter="true", page_size=1, page_token=first.next_page_token)
            limited = [i.value for i in tx.list("/a-1", limit=1)]
            return first.scanned, second.items, second.next_page_token, limited

        assert c.transaction(fn) == (3, [], "p3", [1])
    assert sum(1 for r in server.calls if r.url.path.startswith("/v1/list/")) == 3


def test_the_old_page_shape_of_tx_list_still_works_with_a_warning() -> None:
    server = Scripted()
    with Client("http://db", transport=httpx.MockTransport(server)) as c:

        def fn(tx: Transaction) -> Any:
            listed = tx.list("/a-1")
            with pytest.warns(DeprecationWarning, match="list_page"):
                items = listed.items
            with pytest.warns(DeprecationWarning):
                token = listed.next_page_token
            with pytest.warns(DeprecationWarning):
                changes = listed.changes_token
            # Iterating after reading the first page starts from that page, not past it.
            again = [i.value for i in listed]
            with pytest.warns(DeprecationWarning, match="page_token"):
                paged = tx.list("/a-1", page_token=token)
            with pytest.warns(DeprecationWarning):
                assert paged.items == []
            return [i.value for i in items], token, changes, again

        assert c.transaction(fn) == ([1], "p2", "C", [1, 9])

    async def main() -> None:
        async with AsyncClient("http://db", transport=httpx.MockTransport(Scripted())) as c:

            async def fn(tx: AsyncTransaction) -> Any:
                with pytest.warns(DeprecationWarning, match="list_page"):
                    page = await tx.list("/a-1")
                listed = [i.value async for i in tx.list("/a-1", filter="true")]
                one = await tx.list_page("/a-1", page_token=page.next_page_token)
                return [i.value for i in page.items], page.next_page_token, listed, one.next_page_token

            assert await c.transaction(fn) == ([1], "p2", [1, 9], "p3")

    asyncio.run(main())


def test_a_filtered_listing_refuses_what_the_transaction_put_in_its_range() -> None:
    server = Scripted()
    with Client("http://db", transport=httpx.MockTransport(server)) as c:

        def put_then_list(tx: Transaction) -> None:
            tx.put("/a-1/x-5", {"status": "open"})
            list(tx.list("/a-1", filter="true"))

        with pytest.raises(InvalidRequest, match="cannot tell whether a value put here matches"):
            c.transaction(put_then_list)
        assert not any(r.url.path == "/v1/transact" for r in server.calls)

        def delete_then_list(tx: Transaction) -> List[str]:
            tx.delete("/a-1/x-1")  # a delete leaves the listing, whatever the filter
            tx.put("/b-1/x-1", 1)  # outside the range
            return [str(i.path) for i in tx.list("/a-1", filter="true")]

        assert c.transaction(delete_then_list) == ["/a-1/x-9"]

        def list_then_put(tx: Transaction) -> int:
            n = sum(1 for _ in tx.list("/a-1", filter="true"))
            tx.put("/a-1/x-5", {"status": "open"})  # after the listing: fine
            return n

        assert c.transaction(list_then_put) == 2
        assert [o["op"] for o in server.ops] == ["put", "check_list"]

        def unfiltered(tx: Transaction) -> List[str]:
            tx.put("/a-1/x-5", 5)
            return [str(i.path) for i in tx.list("/a-1")]  # without a filter, shown in order

        assert c.transaction(unfiltered) == ["/a-1/x-1", "/a-1/x-5", "/a-1/x-9"]


# ------------------------------------------------------------------------------------------------
# A KeyPath equals its text


def test_a_keypath_equals_its_canonical_text_and_hashes_alike() -> None:
    path = KeyPath.parse("/ward-1/doc-0")
    assert path == "/ward-1/doc-0" and "/ward-1/doc-0" == path
    assert not (path != "/ward-1/doc-0")
    assert hash(path) == hash("/ward-1/doc-0")
    assert path in {"/ward-1/doc-0"} and "/ward-1/doc-0" in {path}
    by_text: Dict[PathLike, int] = {path: 1}  # a dict of KeyPath keys, typed to take text too
    assert by_text["/ward-1/doc-0"] == 1
    assert "/ward-1/doc-0" in [path]
    # Only the canonical spelling of the same typed path.
    assert KeyPath().add("tag", "7") == "/tag-%7" and KeyPath().add("tag", "7") != "/tag-7"
    assert KeyPath().add("tag", 7) == "/tag-7" and KeyPath().add("tag", 7) != "/tag-%7"
    assert KeyPath.parse("/a-%b") == "/a-b" and KeyPath.parse("/a-b") != "/a-%b"
    assert path != "/ward-1/doc-00" and path != "not a path" and path != ""
    assert path != 1 and path != None  # noqa: E711
    # Paths still compare with paths by their typed elements.
    assert path == KeyPath().add("ward", 1).add("doc", 0) and hash(path) == hash(KeyPath().add("ward", 1).add("doc", 0))
    assert KeyPath().add("a", 1) != KeyPath().add("a", "1")
    with pytest.raises(TypeError):
        path < "/ward-1/doc-1"  # type: ignore[operator]  # noqa: B015  (order is for paths)


def test_item_paths_compare_with_text(client: Client, group: KeyPath) -> None:
    """The trap: `item.path != "/ward-1/doc-0"` was always true. (Any server.)"""
    client.put(group.add("doc", 0), {"n": 0})
    client.put(group.add("doc", 1), {"n": 1})
    text = f"{group}/doc-0"
    found = [i for i in client.list(group) if i.path == text]
    assert len(found) == 1 and found[0].value == {"n": 0}
    by_path: Dict[PathLike, Item[Any]] = {i.path: i for i in client.list(group)}
    assert by_path[text].value == {"n": 0}

    def fn(tx: Transaction) -> List[Any]:
        return [i.value for i in tx.list(group) if i.path != text]

    assert client.transaction(fn) == [{"n": 1}]


# ------------------------------------------------------------------------------------------------
# Against a server with filters


needs_filters = pytest.mark.needs_filters


def orders(client: Client, group: KeyPath) -> None:
    for i, (status, total) in enumerate(
        [("open", 50), ("open", 150), ("closed", 500), ("open", 300), ("closed", 20)], start=1
    ):
        client.put(group.add("order", i), {"status": status, "total": total, "title": f"t{i}", "author": {"name": f"a{i}", "age": i}})


OPEN_AND_BIG = 'value.status == "open" && value.total > 100'


@needs_filters
def test_filtered_listing(client: Client, group: KeyPath) -> None:
    orders(client, group)
    client.put(group.add("note", 1), {"status": "open"})  # no total: an error is no match
    listed = list(client.list(group, filter=OPEN_AND_BIG))
    assert [i.path for i in listed] == [group.add("order", 2), group.add("order", 4)]
    assert [i.value["total"] for i in client.list(group, filter=OPEN_AND_BIG, reverse=True)] == [300, 150]
    # `fields` projects the value; the version stays the item's.
    projected = list(client.list(group.add("order"), fields=["title", "author.name"], filter="value.total >= 300"))
    assert [i.value for i in projected] == [{"title": "t3", "author": {"name": "a3"}}, {"title": "t4", "author": {"name": "a4"}}]
    # The other names: path, ids, version, created_at, modified_at.
    assert [i.path for i in client.list(group, filter="ids.order == 5")] == [group.add("order", 5)]
    assert len(list(client.list(group, filter=f'path.startsWith("{group}/order")'))) == 5
    client.put(group.add("order", 1), {"status": "open", "total": 51})
    assert [i.path for i in client.list(group, filter="version == 2u")] == [group.add("order", 1)]
    assert len(list(client.list(group, filter="created_at > 0 && modified_at >= created_at"))) == 6
    page = client.list_page(group, filter=OPEN_AND_BIG)
    assert page.scanned == 6 and page.next_page_token is None and len(page.items) == 2


@needs_filters
def test_filtered_pages_may_be_empty_and_iterators_follow_them(client: Client, group: KeyPath) -> None:
    for i in range(1, 31):
        client.put(group.add("n", i), {"n": i})
    expr = "value.n % 10 == 0"
    first = client.list_page(group, filter=expr, max_scan=3)
    assert first.items == [] and first.scanned == 3 and first.next_page_token is not None
    assert [i.value["n"] for i in client.list(group, filter=expr, max_scan=3)] == [10, 20, 30]
    assert [i.value["n"] for i in client.list(group, filter=expr, max_scan=3, limit=2)] == [10, 20]
    assert client.count(group, filter=expr) == 3
    assert client.count(group, filter=expr, max_scan=4) == 3  # 8 requests, added up
    assert client.count(group) == 30
    assert client.count(group, filter="value.n > 25", gt=group.add("n", 27)) == 3

    async def main() -> None:
        async with AsyncClient(client.url, token=TOKEN) as c:
            assert [i.value["n"] async for i in c.list(group, filter=expr, max_scan=7)] == [10, 20, 30]
            assert await c.count(group, filter=expr, max_scan=5) == 3

    asyncio.run(main())


@needs_filters
def test_get_fields_and_get_many_filter(client: Client, group: KeyPath) -> None:
    orders(client, group)
    got = client.get(group.add("order", 2), fields=["title", "author.name", "missing"])
    full = client.get(group.add("order", 2))
    assert got is not None and full is not None
    assert got.value == {"title": "t2", "author": {"name": "a2"}} and got.version == full.version
    paths = [group.add("order", i) for i in (1, 2, 3, 9)]
    many = client.get_many(paths, filter=OPEN_AND_BIG, fields="total")
    assert [i.value if i else None for i in many] == [None, {"total": 150}, None, None]


@needs_filters
def test_invalid_filters_name_their_position(client: Client, group: KeyPath) -> None:
    with pytest.raises(InvalidFilter) as raised:
        client.list_page(group, filter="value.total > ")
    assert raised.value.code == "invalid_filter" and raised.value.status == 400
    assert isinstance(raised.value.position, int) and raised.value.position >= 0
    with pytest.raises(InvalidFilter) as unknown:
        list(client.list(group, filter='valu.status == "open"'))
    assert unknown.value.position == 0
    with pytest.raises(InvalidFilter):
        client.count(group, filter="")
    with pytest.raises(InvalidFilter):
        client.get_many([group.add("x", 1)], filter="(")
    with pytest.raises(InvalidFilter):
        client.changes(group, filter="1 +")


@needs_filters
def test_filtered_change_feed(client: Client, group: KeyPath) -> None:
    expr = 'value.status == "open"'
    a, b, c = (group.add("order", i) for i in (1, 2, 3))
    client.put(a, {"status": "open"})
    client.put(b, {"status": "closed"})
    start = client.changes(group).next_token
    client.put(b, {"status": "closed", "n": 1})  # matches neither before nor after: left out
    client.put(c, {"status": "open"})  # enters
    client.put(a, {"status": "open", "n": 1})  # changes while matching
    client.put(a, {"status": "closed"})  # leaves
    client.delete(c)  # deleted while matching
    page = client.changes(group, start, filter=expr)
    shape = [(type(ch).__name__, ch.path, ch.version) for ch in page.changes]
    assert shape == [("PutChange", c, 1), ("PutChange", a, 2), ("DeleteChange", a, 3), ("DeleteChange", c, 1)]
    puts = [ch for ch in page.changes if isinstance(ch, PutChange)]
    assert [p.item.value for p in puts] == [{"status": "open"}, {"status": "open", "n": 1}]
    left = page.changes[2]
    assert isinstance(left, DeleteChange) and left.left  # it left the result; not deleted
    assert client.get(a) is not None
    watched = []
    for change in client.watch(group, since=start, filter=expr, wait=1):
        watched.append(change)
        if len(watched) == 4:
            break
    assert [(w.path, w.version) for w in watched] == [(c, 1), (a, 2), (a, 3), (c, 1)]


@needs_filters
def test_a_filtered_listing_check_fails_only_when_the_result_changed(server: Server, client: Client, group: KeyPath) -> None:
    orders(client, group)
    expr = 'value.status == "open"'

    def run(other_write: Callable[[Client], Any]) -> int:
        runs: List[int] = []
        with Client(server.url, token=TOKEN) as other:

            def fn(tx: Transaction) -> int:
                runs.append(1)
                open_orders = list(tx.list(group.add("order"), filter=expr))
                if len(runs) == 1:
                    other_write(other)
                tx.put(group.add("summary", 1), {"open": len(open_orders)})
                return len(open_orders)

            client.transaction(fn)
        return len(runs)

    # A closed order changes and stays closed: not in the filtered result, the commit holds.
    assert run(lambda o: o.put(group.add("order", 3), {"status": "closed", "total": 1})) == 1
    # A closed order opens: it enters the result, the callback runs again.
    assert run(lambda o: o.put(group.add("order", 5), {"status": "open", "total": 1})) == 2
    summary = client.get(group.add("summary", 1))
    assert summary is not None and summary.value == {"open": 4}

    async def main() -> None:
        async with AsyncClient(server.url, token=TOKEN) as c:

            async def fn(tx: AsyncTransaction) -> List[Any]:
                page = await tx.list_page(group.add("order"), filter='value.status == "closed"')
                return [i.path async for i in tx.list(group.add("order"), filter='value.status == "closed"')] + [
                    len(page.items)
                ]

            assert await c.transaction(fn) == [group.add("order", 3), 1]

    asyncio.run(main())
