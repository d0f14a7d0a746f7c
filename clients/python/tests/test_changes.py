"""The change feed (`changes`, `watch`, a listing's `changes_token`, groups without one) and
creates with generated ids (`create`, `Create` in transactions), against a real `pathdb serve`
(see conftest.py), and the answers a real server cannot easily give (410) against scripted ones."""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
import uuid
from typing import Any, Callable, Dict, List, Optional

import httpx
import pytest

from pathdb import (
    AsyncClient,
    Change,
    Client,
    Create,
    Created,
    Delete,
    DeleteChange,
    InvalidKeyPath,
    InvalidRequest,
    Item,
    KeyPath,
    NotPathDB,
    PathDBError,
    Put,
    PutChange,
    TokenExpired,
)

from .conftest import TOKEN, Server


def apply(local: Dict[KeyPath, Item], change: Change) -> None:
    """A follower's rule (docs/changes.md): apply a change unless it is older than what is held."""
    held = local.get(change.path)
    if held is not None and change.version < held.version:
        return
    if isinstance(change, PutChange):
        local[change.path] = change.item
    else:
        local.pop(change.path, None)


def soon(server: Server, write: Callable[[Client], object], delay: float = 0.2) -> threading.Timer:
    """Runs `write` on a client of its own after `delay` seconds, in a thread."""

    def run() -> None:
        with Client(server.url, token=TOKEN) as c:
            write(c)

    timer = threading.Timer(delay, run)
    timer.start()
    return timer


def listing(client: Client, prefix: KeyPath) -> Dict[KeyPath, Item]:
    return {i.path: i for i in client.list(prefix)}


def test_a_follower_ends_equal_to_the_final_listing(server: Server, client: Client, group: KeyPath) -> None:
    for n in range(12):
        client.put(group.add("doc", n), {"n": n, "v": 0})
    # List in pages, keeping the first page's changes_token; writers start in the middle.
    first = client.list_page(group, page_size=5)
    assert first.changes_token is not None and first.next_page_token is not None
    local = {i.path: i for i in first.items}

    def writer(w: int) -> None:
        with Client(server.url, token=TOKEN) as c:
            for n in range(w, 12, 3):
                path = group.add("doc", n)
                if n % 4 == 0:
                    c.delete(path)
                else:
                    c.put(path, {"n": n, "v": w + 1}, history=n % 2 == 0)
                c.create(group, "new", {"by": w}, id="sequence")
            c.transact([Put(group.add("tx", w), w), Create(group.add("tx", w), "line", w, id="rand53")])

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(3)]
    for t in threads:
        t.start()
    token: Optional[str] = first.next_page_token
    while token is not None:  # the listing's later pages, while the writers write
        page = client.list_page(group, page_size=5, page_token=token)
        assert page.changes_token is None  # only a first page has one
        local.update((i.path, i) for i in page.items)
        token = page.next_page_token
    for t in threads:
        t.join()

    since = first.changes_token
    seen: List[Change] = []
    while True:
        feed = client.changes(group, since, limit=7)
        for change in feed.changes:
            apply(local, change)
        seen += feed.changes
        if not feed.changes:
            assert feed.next_token == since  # caught up: the position stays
            break
        since = feed.next_token
    assert local == listing(client, group)
    assert sum(isinstance(c, DeleteChange) for c in seen) == 3
    assert sum(isinstance(c, PutChange) and c.path.elements[-1].namespace == "new" for c in seen) == 12
    # A narrower prefix follows only its subtree, from the same token.
    narrow = client.changes(group.add("tx", 1), first.changes_token, limit=1000)
    assert [str(c.path) for c in narrow.changes][:1] == [str(group.add("tx", 1))]
    assert all(str(c.path).startswith(str(group.add("tx", 1))) for c in narrow.changes)


def test_changes_without_since_is_the_current_position(client: Client, group: KeyPath) -> None:
    client.put(group.add("a", 1), 1)
    now = client.changes(group)
    assert now.changes == [] and now.next_token
    assert client.changes(group, now.next_token).changes == []
    item = client.put(group.add("a", 1), 2)
    deleted = client.delete(group.add("a", 1))
    assert deleted is not None
    feed = client.changes(group, now.next_token)
    assert feed.changes == [PutChange(item), DeleteChange(item.path, item.version)]
    put = feed.changes[0]
    assert isinstance(put, PutChange) and (put.path, put.version) == (item.path, 2)


def test_a_long_poll_returns_when_a_write_commits(server: Server, client: Client, group: KeyPath) -> None:
    since = client.changes(group).next_token
    started = time.monotonic()
    timer = soon(server, lambda c: c.put(group.add("late", 1), "now"), 0.3)
    try:
        feed = client.changes(group, since, wait=20)
    finally:
        timer.join()
    took = time.monotonic() - started
    assert [c.path for c in feed.changes] == [group.add("late", 1)]
    assert 0.2 < took < 10, took
    # Nothing commits: the poll answers empty after its wait.
    started = time.monotonic()
    assert client.changes(group, feed.next_token, wait=1).changes == []
    assert 0.9 < time.monotonic() - started < 10


def test_watch_follows_and_stops_when_the_loop_breaks(server: Server, client: Client, group: KeyPath) -> None:
    start = client.changes(group).next_token
    client.transact([Put(group.add("w", n), n) for n in range(3)])
    watch = client.watch(group, since=start, wait=5)
    assert watch.token == start
    got = []
    for change in watch:
        got.append(change)
        if len(got) == 2:
            break
    # Stopped inside the transaction's page: resuming repeats rather than skips.
    assert watch.token == start
    got.append(next(watch))
    assert [c.path for c in got] == [group.add("w", n) for n in range(3)]
    assert watch.token == client.changes(group).next_token
    # It waits for what comes next.
    soon(server, lambda c: c.delete(group.add("w", 1)))
    assert next(watch) == DeleteChange(group.add("w", 1), 1)
    # Without `since`, from where iterating starts.
    fresh = client.watch(group, wait=5)
    assert fresh.token is None
    timer = soon(server, lambda c: c.put(group.add("w", 9), 9), 0.3)
    change = next(iter(fresh))
    timer.join()
    assert isinstance(change, PutChange) and change.item.value == 9


def test_invalid_and_foreign_change_tokens(client: Client, group: KeyPath) -> None:
    with pytest.raises(InvalidRequest) as raised:
        client.changes(group, "not a token")
    assert (raised.value.status, raised.value.code) == (400, "invalid_change_token")
    other = KeyPath().add("t", uuid.uuid4())
    foreign = client.changes(other).next_token
    with pytest.raises(InvalidRequest) as raised:
        client.changes(group, foreign)
    assert raised.value.code == "invalid_change_token"
    with pytest.raises(InvalidRequest):
        next(iter(client.watch(group, since=foreign)))
    with pytest.raises(InvalidRequest) as raised:
        client.changes(group, foreign, wait=61)
    assert raised.value.code == "invalid_request"
    with pytest.raises(ValueError):
        client.watch(group, wait=0)  # it would poll without a pause


def test_a_group_without_a_change_log(admin: Client, client: Client) -> None:
    # A namespace of its own: definitions apply to the whole database, and this one stays.
    ns = "session_" + uuid.uuid4().hex[:12]
    assert admin.put_namespace(ns, changes=False).changes is False
    session = KeyPath().add(ns, 1)
    client.put(session.add("cart", 1), {"items": 2})
    fetched = admin.get_namespace(ns)
    assert fetched is not None and fetched.changes is False
    with pytest.raises(InvalidRequest) as raised:
        client.changes(session)
    assert (raised.value.status, raised.value.code) == (400, "invalid_request")
    assert "keeps no change log" in raised.value.message
    assert client.list_page(session).changes_token is None
    # For good: a definition without it, or none, would leave a gap in the group's log.
    with pytest.raises(InvalidRequest, match="cannot be undone"):
        admin.put_namespace(ns)
    with pytest.raises(InvalidRequest, match="cannot be undone"):
        admin.delete_namespace(ns)


def test_sequence_ids_count_up_and_are_never_reused(client: Client, group: KeyPath) -> None:
    parent = group.add("x", 1)
    first = client.create(parent, "post", {"n": 1}, id="sequence")
    second = client.create(str(parent), "post", {"n": 2}, id="sequence", history=True)
    assert [first.path, second.path] == [parent.add("post", 1), parent.add("post", 2)]
    assert (first.version, first.value) == (1, {"n": 1})
    assert client.get(second.path) == second
    assert client.delete(second.path) is not None
    third = client.create(parent, "post", None, id="sequence")
    assert third.path == parent.add("post", 3)
    # A sequence of its own per parent and namespace.
    assert client.create(parent, "note", 1, id="sequence").path == parent.add("note", 1)
    assert client.create(group.add("x", 2), "post", 1, id="sequence").path == group.add("x", 2).add("post", 1)
    # Ids written by hand ahead of the sequence are skipped, not overwritten.
    client.put(parent.add("post", 4), "by hand")
    assert client.create(parent, "post", 5, id="sequence").path == parent.add("post", 5)
    expiring = client.create(parent, "post", "ttl", id="sequence", ttl_seconds=3600)
    assert expiring.expires_at is not None


def test_uuid_and_rand53_ids(client: Client, group: KeyPath) -> None:
    made = client.create(group, "u", {"k": 1})  # uuid by default
    last = made.path.elements[-1]
    assert made.path.parent == group and last.namespace == "u"
    assert isinstance(last.id, uuid.UUID) and last.id.version == 4
    assert re.fullmatch(r"/u-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", str(made.path)[len(str(group)) :])
    ids = [client.create(group, "r", n, id="rand53").path.elements[-1].id for n in range(5)]
    assert all(isinstance(i, int) and 1 <= i < 2**53 for i in ids) and len(set(ids)) == 5
    # Without a parent: a new group.
    new_group = client.create(None, "t", {"fresh": True}, id="uuid")
    assert len(new_group.path) == 1 and isinstance(new_group.path.elements[0].id, uuid.UUID)
    assert client.get(new_group.path) == new_group
    with pytest.raises(InvalidKeyPath):
        client.create(group, "not-a-namespace", 1)
    with pytest.raises(InvalidKeyPath):
        client.create(group.add("ns"), "post", 1)
    with pytest.raises(InvalidRequest):
        client.create(group, "post", 1, id="serial")  # type: ignore[call-overload]


def test_creates_in_transactions(client: Client, group: KeyPath) -> None:
    order, line, other, put = client.transact(
        [
            Create(group, "order", {"total": 5}, id="sequence"),
            Create(Created(0), "line", {"sku": "a"}, id="sequence"),
            Create(Created(0), "line", {"sku": "b"}, id="sequence"),
            Put(group.add("plain", 1), 1),
        ]
    )
    assert order is not None and line is not None and other is not None and put is not None
    assert order.path == group.add("order", 1)
    assert [line.path, other.path] == [order.path.add("line", 1), order.path.add("line", 2)]
    assert (line.value, put.value) == ({"sku": "a"}, 1)
    [new_group, child] = client.transact([Create(None, "t", 0), Create(Created(0), "c", 1, id="rand53")])
    assert new_group is not None and child is not None and child.path.parent == new_group.path
    assert Create(Created(3), "c", 1, history=True, ttl_seconds=9).to_wire() == {
        "op": "create",
        "path": "$3/c",
        "id": "uuid",
        "value": 1,
        "history": True,
        "ttl_seconds": 9,
    }
    with pytest.raises(ValueError):
        Create(Created(-1), "c", 1)
    with pytest.raises(InvalidRequest):  # `$N` must name an earlier create
        client.transact([Put(group.add("p", 1), 1), Create(Created(0), "c", 1)])
    with pytest.raises(InvalidRequest):
        client.transact([Delete(group.add("p", 1)), Create(Created(5), "c", 1)])


def test_async_changes_watch_and_create(server: Server, group: KeyPath) -> None:
    async def main() -> None:
        async with AsyncClient(server.url, token=TOKEN) as c:
            first = await c.list_page(group)
            assert first.items == [] and first.changes_token
            made = await c.create(group, "post", {"n": 1}, id="sequence")
            assert made.path == group.add("post", 1)
            feed = await c.changes(group, first.changes_token)
            assert feed.changes == [PutChange(made)]

            async def later() -> Item:
                await asyncio.sleep(0.2)
                return await c.create(group, "post", {"n": 2}, id="sequence")

            writer = asyncio.ensure_future(later())
            got = await c.changes(group, feed.next_token, wait=20)
            assert got.changes == [PutChange(await writer)]

            watch = c.watch(group, since=first.changes_token, wait=5)
            seen = []
            async for change in watch:
                seen.append(change.path)
                if len(seen) == 2:
                    break
            assert seen == [group.add("post", 1), group.add("post", 2)]
            assert watch.token == got.next_token
            with pytest.raises(InvalidRequest):
                await c.changes(group, "forged")

    asyncio.run(main())


# --- against scripted answers ---------------------------------------------------------------


def scripted(answers: List[httpx.Response], calls: List[httpx.Request]) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return answers.pop(0)

    return httpx.MockTransport(handler)


def expired() -> httpx.Response:
    return httpx.Response(
        410, json={"error": {"code": "token_expired", "message": "the changes after this token are no longer kept"}}
    )


ITEM = {"path": "/a-1/b-2", "version": 3, "created_at": 0, "modified_at": 1, "expires_at": None, "value": {"x": 1}}


def page(changes: List[Any], next_token: str) -> httpx.Response:
    return httpx.Response(200, json={"changes": changes, "next_token": next_token})


def test_an_expired_token_raises_token_expired() -> None:
    calls: List[httpx.Request] = []
    with Client("http://db", transport=scripted([expired(), expired()], calls)) as c:
        with pytest.raises(TokenExpired) as raised:
            c.changes("/a-1", "old", wait=5)
        assert (raised.value.status, raised.value.code) == (410, "token_expired")
        assert isinstance(raised.value, PathDBError)
        with pytest.raises(TokenExpired):
            next(iter(c.watch("/a-1", since="old")))
    assert calls[0].url.params["since"] == "old" and len(calls) == 2

    async def main() -> None:
        async with AsyncClient("http://db", transport=httpx.MockTransport(lambda r: expired())) as c:
            with pytest.raises(TokenExpired):
                await c.changes("/a-1", "old")
            with pytest.raises(TokenExpired):
                await c.watch("/a-1", since="old").__anext__()

    asyncio.run(main())
    # A 410 without PathDB's error body is another server's.
    with Client("http://db", transport=httpx.MockTransport(lambda r: httpx.Response(410, text="gone"))) as c:
        with pytest.raises(NotPathDB):
            c.changes("/a-1", "old")


def test_change_requests_and_answers() -> None:
    calls: List[httpx.Request] = []
    answers = [
        page([{"op": "put", "item": ITEM}, {"op": "delete", "path": "/a-1/c-%7", "version": 9}], "t2"),
        page([], "t3"),
        httpx.Response(201, json=ITEM),
        httpx.Response(200, json={"items": [ITEM], "next_page_token": None, "changes_token": "c1"}),
    ]
    with Client("http://db", timeout=7, transport=scripted(answers, calls)) as c:
        feed = c.changes(KeyPath.parse("/a-1/s-x%/y"), "t1", limit=50, wait=20)
        assert feed.next_token == "t2"
        put, gone = feed.changes
        assert isinstance(put, PutChange) and put.item.value == {"x": 1} and put.version == 3
        assert gone == DeleteChange(KeyPath().add("a", 1).add("c", "7"), 9)
        assert c.changes("/a-1").changes == []
        c.create(KeyPath().add("a", 1), "b", {"x": 1}, id="sequence", history=True, ttl_seconds=5)
        assert c.list_page("/a-1").changes_token == "c1"
    poll = calls[0]
    assert poll.url.raw_path == b"/v1/changes/a-1/s-x%25%2Fy?since=t1&limit=50&wait=20"
    # A long poll's read timeout covers the wait; other requests keep the client's.
    assert poll.extensions["timeout"]["read"] == 27
    assert calls[1].url.raw_path == b"/v1/changes/a-1" and calls[1].extensions["timeout"]["read"] == 7
    create = calls[2]
    assert create.method == "POST" and create.headers["content-type"] == "application/json"
    assert create.url.raw_path == b"/v1/items/a-1/b?id=sequence&history=true&ttl_seconds=5"
    assert json.loads(create.content) == {"x": 1}


def test_watch_resumes_from_its_token() -> None:
    put = {"op": "put", "item": ITEM}
    calls: List[httpx.Request] = []
    answers = [page([put, put, put], "t2"), page([], "t2"), page([put], "t3")]
    with Client("http://db", transport=scripted(answers, calls)) as c:
        watch = c.watch("/a-1", since="t1", wait=3, limit=10)
        it = iter(watch)
        next(it)
        next(it)
        assert watch.token == "t1"  # inside a page: where that page started
        next(it)
        assert watch.token == "t2"
        next(it)  # an empty poll, then one more
        assert watch.token == "t3"
    assert [r.url.params["since"] for r in calls] == ["t1", "t2", "t2"]
    assert calls[0].url.params["wait"] == "3" and calls[0].url.params["limit"] == "10"


EMPTYISH: List[Any] = [None, [], {}, "", 0, False, {"a": None}]


def test_null_and_empty_values_reach_every_reader(client: Client, group: KeyPath) -> None:
    """`null` and the other values that look like "nothing" are values: through put, get,
    history, a transaction, a create and the change feed (issue 18: a null put used to stop its
    group's feed)."""
    start = client.changes(group).next_token
    written: List[Any] = []
    for i, value in enumerate(EMPTYISH):
        path = group.add("a", i)
        item = client.put(path, value, history=True)
        assert item.value == value and type(item.value) is type(value)
        got = client.get(path)
        assert got is not None and got.value == value and type(got.value) is type(value)
        assert client.history(path)[0].value == value
        results = client.transact([Put(group.add("t", i), value)])
        assert results[0] is not None and results[0].value == value
        created = client.create(group, "c", value, id="sequence")
        assert created.value == value
        written += [value, value, value]
    page = client.changes(group, start, limit=1000)
    values = [c.item.value for c in page.changes if isinstance(c, PutChange)]
    assert values == written
    assert [type(v) for v in values] == [type(v) for v in written]
