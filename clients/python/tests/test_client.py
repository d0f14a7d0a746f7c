"""Every client method and error class against a real `pathdb serve` (see conftest.py)."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import uuid
from datetime import datetime, timezone
from typing import Any, List, Optional

import httpx
import pytest

from pathdb import (
    AsyncClient,
    Check,
    Client,
    ConditionFailed,
    Conflict,
    Delete,
    Desc,
    DestinationNotEmpty,
    Forbidden,
    InsufficientStorage,
    InvalidRequest,
    Item,
    KeyPath,
    Node,
    NotFound,
    NotPathDB,
    OutcomeUnknown,
    PathDBError,
    Put,
    Unauthorized,
    Unavailable,
)

from .conftest import READ_TOKEN, TOKEN, Server


def test_put_get_delete(client: Client, group: KeyPath) -> None:
    path = group.add("post", 2)
    before = datetime.now(timezone.utc)
    item = client.put(path, {"title": "hello"})
    assert (item.path, item.version, item.value) == (path, 1, {"title": "hello"})
    assert item.created_at == item.modified_at and item.expires_at is None
    assert abs((item.created_at - before).total_seconds()) < 60
    got = client.get(path)
    assert got == item
    assert client.put(str(path), [1, 2]).version == 2
    deleted = client.delete(path)
    assert deleted is not None and deleted.version == 2 and deleted.value == [1, 2]
    assert client.get(path) is None
    assert client.delete(path) is None
    # Versions are never reused for a path: the delete took 3.
    assert client.put(path, None).version == 4


def test_put_options(client: Client, group: KeyPath) -> None:
    path = group.add("doc", "a")
    client.put(path, 1, must_not_exist=True)
    with pytest.raises(ConditionFailed) as raised:
        client.put(path, 2, must_not_exist=True)
    assert raised.value.code == "condition_failed" and raised.value.status == 412
    assert client.put(path, 2, if_version=1).version == 2
    with pytest.raises(ConditionFailed):
        client.put(path, 3, if_version=1)
    with pytest.raises(ConditionFailed):
        client.delete(path, if_version=1)
    assert client.delete(path, if_version=2) is not None
    expiring = client.put(group.add("doc", "ttl"), "x", ttl_seconds=3600)
    assert expiring.expires_at is not None
    assert 3500 < (expiring.expires_at - expiring.modified_at).total_seconds() <= 3600
    with pytest.raises(ValueError):
        client.put(path, 1, must_not_exist=True, if_version=1)


def test_history_and_versions(client: Client, group: KeyPath) -> None:
    path = group.add("page", 1)
    for n in range(3):
        client.put(path, {"n": n}, history=True)
    revisions = client.history(path)
    assert [r.version for r in revisions] == [3, 2, 1]
    assert [r.value for r in client.history(path, limit=2)] == [{"n": 2}, {"n": 1}]
    assert client.get_version(path, 2).value == {"n": 1}
    with pytest.raises(NotFound) as raised:
        client.get_version(path, 99)
    assert raised.value.status == 404 and raised.value.code == "not_found"


def test_get_many(client: Client, group: KeyPath) -> None:
    a, b, missing = group.add("x", 1), group.add("x", 2), group.add("x", 3)
    client.put(a, "a")
    client.put(b, "b")
    items = client.get_many([b, missing, str(a)])
    assert [i.value if i else None for i in items] == ["b", None, "a"]
    assert client.get_many([]) == []


ODD_IDS: List[Any] = [
    "a/b",
    "100%",
    "%2F",
    "!bang",
    "~tilde",
    "7",
    "-3",
    "caf\u00e9 & co?#",
    "\U0001f600",
    "..",
    b"\x00\xff/",
    uuid.UUID("4c9d36e5-6b19-4e6a-828c-226ed667458a"),
    2**64 - 1,
    -(2**64 - 1),
    Desc(5),
    Desc("a/b%"),
    Desc(b"\x01"),
]


@pytest.mark.parametrize("id", ODD_IDS, ids=[repr(i) for i in ODD_IDS])
def test_every_id_survives_the_url(client: Client, group: KeyPath, id: Any) -> None:
    path = group.add("k", id).add("child", 1)
    item = client.put(path, {"id": repr(id)})
    assert item.path == path
    got = client.get(path)
    assert got is not None and got.path == path
    [listed] = list(client.list(group.add("k", id)))
    assert listed.path == path
    assert [h.path for h in client.history(path)] in ([], [path])
    assert client.delete(path) is not None


def fill(client: Client, group: KeyPath, n: int) -> List[KeyPath]:
    paths = [group.add("n", i) for i in range(n)]
    for start in range(0, n, 100):
        client.transact([Put(p, i) for i, p in enumerate(paths[start : start + 100], start)])
    return paths


def test_paging_across_many_pages_in_both_directions(client: Client, group: KeyPath) -> None:
    paths = fill(client, group, 250)
    assert [i.path for i in client.list(group, page_size=7)] == paths
    assert [i.path for i in client.list(group, page_size=7, reverse=True)] == paths[::-1]
    assert [i.value for i in client.list(group, limit=120)] == list(range(120))
    assert [i.value for i in client.list(group, reverse=True, limit=3)] == [249, 248, 247]
    # By hand: every page token continues where its page ended.
    seen: List[KeyPath] = []
    token: Optional[str] = None
    n_pages = 0
    while True:
        page = client.list_page(group, page_size=40, page_token=token)
        seen += [i.path for i in page.items]
        n_pages += 1
        token = page.next_page_token
        if token is None:
            break
    assert seen == paths and n_pages >= 7
    first = client.list_page(group, reverse=True, page_size=10)
    assert first.next_page_token is not None
    second = client.list_page(group, reverse=True, page_size=10, page_token=first.next_page_token)
    assert [i.value for i in first.items + second.items] == list(range(249, 229, -1))


def test_list_bounds_and_children(client: Client, group: KeyPath) -> None:
    fill(client, group, 30)
    client.put(group.add("n", 3).add("c", 1), "deep")
    client.put(group.add("o", 1), "other")
    values = [i.value for i in client.list(group.add("n"), gte=group.add("n", 10), lt=group.add("n", 13))]
    assert values == [10, 11, 12]
    values = [i.value for i in client.list(group.add("n"), gt=group.add("n", 26), lte=group.add("n", 28), reverse=True)]
    assert values == [28, 27]
    children = [str(i.path) for i in client.list(group, children=True)]
    assert len(children) == 31 and str(group.add("n", 3).add("c", 1)) not in children
    assert [i.value for i in client.list(group.add("n", 3))] == [3, "deep"]


def race(server: Server, write: Any, n_racers: int = 8) -> List[str]:
    """Runs `write(client)` in `n_racers` threads at once; each outcome is "won", "lost"
    (ConditionFailed), "conflict" (a transaction met a concurrent write) or the exception."""
    barrier = threading.Barrier(n_racers)
    outcomes: List[str] = []
    lock = threading.Lock()

    def racer() -> None:
        with Client(server.url, token=TOKEN) as c:
            barrier.wait()
            try:
                write(c)
                result = "won"
            except ConditionFailed:
                result = "lost"
            except Conflict:
                result = "conflict"
            except Exception as e:  # recorded, so that the assertion shows it
                result = repr(e)
            with lock:
                outcomes.append(result)

    threads = [threading.Thread(target=racer) for _ in range(n_racers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sorted(outcomes)


ONE_WINNER = ["lost"] * 7 + ["won"]


def one_winner(outcomes: List[str]) -> bool:
    """One racer won; every other lost its condition, or (transactions) met the winner's write."""
    return outcomes.count("won") == 1 and set(outcomes) <= {"won", "lost", "conflict"}


def test_conditions_racing_have_one_winner(server: Server, group: KeyPath) -> None:
    path = group.add("race", 1)
    assert race(server, lambda c: c.put(path, "created", must_not_exist=True)) == ONE_WINNER
    assert race(server, lambda c: c.put(path, "updated", if_version=1)) == ONE_WINNER
    other = group.add("race", 2)
    check_then_create = [Check(path, if_version=2), Put(other, 1, must_not_exist=True)]
    assert one_winner(race(server, lambda c: c.transact(check_then_create)))
    assert one_winner(race(server, lambda c: c.transact([Put(path, "tx", if_version=2)])))
    got = client_get(server, path)
    assert got is not None and (got.version, got.value) == (3, "tx")


def test_racing_transactions_all_apply(server: Server, group: KeyPath) -> None:
    """Unconditional transactions on one path: the server plans a transaction that lost a race
    again, so each applies; none answers 409 `conflict` (which this client still maps to
    `Conflict` for older servers)."""
    path = group.add("busy", 1)
    for _ in range(3):
        assert race(server, lambda c: c.transact([Put(path, 1)])) == ["won"] * 8
    got = client_get(server, path)
    assert got is not None and got.version == 24


def client_get(server: Server, path: KeyPath) -> Optional[Item]:
    with Client(server.url, token=TOKEN) as c:
        return c.get(path)


def test_deletes_racing_have_one_winner(server: Server, group: KeyPath) -> None:
    path = group.add("race", 1)
    client_put = Client(server.url, token=TOKEN)
    client_put.put(path, 1)
    client_put.close()

    def delete(c: Client) -> None:
        if c.delete(path, if_version=1) is None:
            raise ConditionFailed("nothing deleted")

    assert race(server, delete) == ONE_WINNER


def test_transactions(client: Client, group: KeyPath) -> None:
    a, b, c = group.add("acct", 1), group.add("acct", 2), group.add("acct", 3)
    client.put(a, 100)
    client.put(c, "old")
    results = client.transact([Put(a, 90, if_version=1), Put(b, 10, must_not_exist=True), Delete(c)])
    assert isinstance(results[0], Item) and results[0].version == 2
    assert isinstance(results[1], Item) and results[1].value == 10
    assert isinstance(results[2], Item) and results[2].value == "old"
    assert client.transact([Check(a, if_version=2), Delete(group.add("acct", 9))]) == [None, None]
    with pytest.raises(ConditionFailed) as raised:
        client.transact([Put(a, 0), Check(b, must_not_exist=True)])
    assert raised.value.code == "condition_failed" and raised.value.status == 409
    got = client.get(a)
    assert got is not None and got.value == 90  # all or nothing
    with pytest.raises(ValueError):
        Check(a)
    with pytest.raises(ValueError):
        Check(a, if_version=1, must_exist=True)


def test_tokens(server: Server, group: KeyPath) -> None:
    path = group.add("secret", 1)
    with Client(server.url, token=TOKEN) as writer:
        writer.put(path, "x")
    with Client(server.url) as anonymous:
        with pytest.raises(Unauthorized) as raised:
            anonymous.get(path)
        assert raised.value.status == 401
    with Client(server.url, token="wrong") as wrong:
        with pytest.raises(Unauthorized):
            wrong.put(path, "y")
    with Client(server.url, token=READ_TOKEN) as reader:
        got = reader.get(path)
        assert got is not None and got.value == "x"
        with pytest.raises(Forbidden) as forbidden:
            reader.put(path, "y")
        assert forbidden.value.status == 403 and forbidden.value.code == "forbidden"
        with pytest.raises(Forbidden):
            reader.transact([Delete(path)])


def test_invalid_requests(client: Client, group: KeyPath) -> None:
    with pytest.raises(InvalidRequest) as raised:
        client.list_page(group, page_size=0)
    assert raised.value.status == 400 and raised.value.code == "invalid_request"
    with pytest.raises(InvalidRequest) as raised:
        client.list_page(group, page_token="not a token")
    assert raised.value.code == "invalid_page_token"
    with pytest.raises(InvalidRequest) as raised:
        client.put(group.add("big", 1), "x" * 500_000)
    assert raised.value.status == 413 and raised.value.code == "too_large"
    with pytest.raises(InvalidRequest):
        client.get_many([group.add("m", i) for i in range(101)])
    with pytest.raises(InvalidRequest) as raised:
        client.put(group.add("ttl", 0), 1, ttl_seconds=0)  # it would create a dead item
    assert raised.value.status == 400
    with pytest.raises(ValueError):
        client.put(group.add("nan", 1), float("nan"))


def test_unreachable_server_is_unavailable() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with Client(f"http://127.0.0.1:{port}") as c:
        with pytest.raises(Unavailable) as raised:
            c.get("/a-1")
        assert raised.value.status is None


def scripted(answers: List[httpx.Response], calls: List[httpx.Request]) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return answers.pop(0)

    return httpx.MockTransport(handler)


def error(status: int, code: str) -> httpx.Response:
    return httpx.Response(status, json={"error": {"code": code, "message": f"{code}!"}})


ITEM = {"path": "/a-1", "version": 4, "created_at": 0, "modified_at": 1, "expires_at": None, "value": 1}


def test_conflicts_and_503_are_retried_with_backoff() -> None:
    calls: List[httpx.Request] = []
    answers = [error(409, "conflict"), error(503, "unavailable"), httpx.Response(200, json=ITEM)]
    with Client("http://db", backoff=0.001, transport=scripted(answers, calls)) as c:
        assert c.put("/a-1", 1).version == 4
    assert len(calls) == 3
    assert calls[0].headers["content-type"] == "application/json"

    calls.clear()
    answers = [error(409, "conflict")] * 3
    with Client("http://db", retries=2, backoff=0.001, transport=scripted(answers, calls)) as c:
        with pytest.raises(Conflict) as raised:
            c.delete("/a-1")
    assert len(calls) == 3 and raised.value.code == "conflict" and raised.value.message == "conflict!"

    calls.clear()
    answers = [error(409, "conflict")]
    with Client("http://db", backoff=0.001, transport=scripted(answers, calls)) as c:
        with pytest.raises(Conflict):
            c.transact([Put("/a-1", 1)])
    assert len(calls) == 1  # a transaction is the caller's unit of work to retry

    calls.clear()
    answers = [error(503, "unavailable")] * 2
    with Client("http://db", retries=1, backoff=0.001, transport=scripted(answers, calls)) as c:
        with pytest.raises(Unavailable) as unavailable:
            c.get("/a-1")
    assert len(calls) == 2 and unavailable.value.status == 503

    # A write that may have been made is not retried (an increment would apply twice), and a
    # full disk is not retried either: each is raised at once, as its own kind.
    calls.clear()
    answers = [error(503, "outcome_unknown"), error(507, "insufficient_storage")]
    with Client("http://db", backoff=0.001, transport=scripted(answers, calls)) as c:
        with pytest.raises(OutcomeUnknown) as unknown:
            c.put("/a-1", 1)
        with pytest.raises(InsufficientStorage) as full:
            c.put("/a-1", 1)
    assert len(calls) == 2 and unknown.value.status == 503 and full.value.status == 507
    assert isinstance(unknown.value, Unavailable) and isinstance(full.value, Unavailable)

    answers = [
        error(412, "condition_failed"),
        error(500, "internal"),
        error(415, "unsupported_media_type"),
        error(418, "teapot"),
    ]
    with Client("http://db", transport=scripted(answers, calls)) as c:
        with pytest.raises(ConditionFailed):
            c.put("/a-1", 1, if_version=3)
        with pytest.raises(Unavailable) as boom:
            c.get("/a-1")
        assert (boom.value.status, boom.value.code) == (500, "internal")
        with pytest.raises(InvalidRequest) as media:
            c.put("/a-1", 1)
        assert (media.value.status, media.value.code) == (415, "unsupported_media_type")
        with pytest.raises(PathDBError) as other:
            c.get("/a-1")
        assert type(other.value) is PathDBError and other.value.status == 418
    assert issubclass(Unavailable, PathDBError) and issubclass(NotFound, PathDBError)


def html(status: int) -> httpx.Response:
    page = "<!DOCTYPE html>\n<html><body><h1>Welcome to nginx!</h1></body></html>"
    return httpx.Response(status, text=page, headers={"Content-Type": "text/html"})


def test_a_server_that_is_not_pathdb_is_named_as_such() -> None:
    """An error without PathDB's JSON error body, or a success that is not JSON, comes from
    another program: `NotPathDB` (an `Unavailable`), never "not found" or a parse error."""
    calls: List[httpx.Request] = []
    answers = [
        html(404),  # get: not "no item"
        html(200),  # get
        html(404),  # put
        html(200),  # list
        httpx.Response(500, text="boom"),  # not retried as PathDB's 503 would be
        httpx.Response(200, text="not json", headers={"Content-Type": "application/json"}),
    ]
    messages = []
    with Client("http://db:8080", transport=scripted(answers, calls)) as c:
        for call in (
            lambda: c.get("/a-1"),
            lambda: c.get("/a-1"),
            lambda: c.put("/a-1", 1),
            lambda: c.list_page("/a-1"),
            lambda: c.get("/a-1"),
            lambda: c.get("/a-1"),
        ):
            with pytest.raises(NotPathDB) as raised:
                call()
            assert str(raised.value).startswith("http://db:8080 is not a PathDB server (it answered HTTP ")
            assert isinstance(raised.value, Unavailable)
            messages.append(str(raised.value))
    assert "HTTP 404, text/html: '<!DOCTYPE html> <html><body><h1>Welcome to nginx!</h1></body..." in messages[0]
    assert "HTTP 500, no content type" in messages[4] or "HTTP 500, text/plain" in messages[4]
    assert len(calls) == 6

    async def main() -> None:
        transport = httpx.MockTransport(lambda r: html(404))
        async with AsyncClient("http://db:8080", transport=transport) as c:
            with pytest.raises(NotPathDB) as raised:
                await c.get("/a-1")
            assert "HTTP 404, text/html" in str(raised.value) and raised.value.status == 404

    asyncio.run(main())
    # PathDB's own 404 still means no item.
    with Client("http://db", transport=scripted([error(404, "not_found")], calls)) as c:
        assert c.get("/a-1") is None


def test_requests_carry_media_types_and_conditions() -> None:
    calls: List[httpx.Request] = []
    answers = [httpx.Response(200, json=ITEM), httpx.Response(201, json=ITEM), httpx.Response(200, json={"items": []})]
    with Client("http://db/", token="t", transport=scripted(answers, calls)) as c:
        c.put(KeyPath().add("a", 1).add("s", "x/y"), {"k": "\u00e9"}, if_version=3, history=True, ttl_seconds=5)
        c.put("/a-1", 1, must_not_exist=True)
        c.get_many(["/a-1"])
    put = calls[0]
    assert put.method == "PUT" and put.url.raw_path == b"/v1/items/a-1/s-x%25%2Fy?history=true&ttl_seconds=5"
    assert put.headers["if-match"] == '"3"' and put.headers["authorization"] == "Bearer t"
    assert json.loads(put.content) == {"k": "\u00e9"}
    assert calls[1].headers["if-none-match"] == "*"
    assert calls[2].headers["content-type"] == "application/json"


def test_async_client(server: Server, group: KeyPath) -> None:
    async def main() -> None:
        async with AsyncClient(server.url, token=TOKEN) as c:
            path = group.add("async", 1)
            item = await c.put(path, {"a": 1}, history=True)
            assert item.version == 1
            assert await c.get(path) == item
            with pytest.raises(ConditionFailed):
                await c.put(path, 2, must_not_exist=True)
            await c.put(path, 2, if_version=1, history=True)
            assert [i.version for i in await c.history(path)] == [2, 1]
            assert (await c.get_version(path, 1)).value == {"a": 1}
            results = await c.transact([Put(group.add("async", n), n) for n in range(2, 60)])
            assert len(results) == 58
            listed = [i.path async for i in c.list(group, page_size=9, reverse=True)]
            assert listed == [group.add("async", n) for n in range(59, 0, -1)]
            page = await c.list_page(group, page_size=5)
            assert len(page.items) == 5 and page.next_page_token
            assert [i.value for i in await c.get_many([path])] == [2]  # type: ignore[union-attr]
            deleted = await c.delete(path, if_version=2)
            assert deleted is not None and await c.get(path) is None
        async with AsyncClient(server.url) as anonymous:
            with pytest.raises(Unauthorized):
                await anonymous.get("/a-1")

    asyncio.run(main())


def test_children_show_nodes_for_folders(client: Client, group: KeyPath) -> None:
    client.put(group.add("folder", 1), {"name": "has an item"})
    client.put(group.add("folder", 1).add("file", 1), 1)
    client.put(group.add("folder", 2).add("file", 1), 2)
    client.put(group.add("folder", 10).add("sub", 1).add("file", 1), 3)
    entries = list(client.list(group, children=True))
    assert [str(e.path) for e in entries] == [
        str(group.add("folder", 1)),
        str(group.add("folder", 2)),
        str(group.add("folder", 10)),
    ]
    assert isinstance(entries[0], Item) and entries[0].value == {"name": "has an item"}
    assert entries[1] == Node(path=group.add("folder", 2)) and isinstance(entries[2], Node)
    page = client.list_page(group, children=True, reverse=True, page_size=1)
    assert page.items == [Node(path=group.add("folder", 10))] and page.next_page_token
    # A subtree listing is items only, typed as such.
    assert [i.value for i in client.list(group)] == [{"name": "has an item"}, 1, 2, 3]


def test_subtree_delete_move_and_copy(client: Client, group: KeyPath) -> None:
    docs = group.add("folder", 1)
    client.put(docs, {"name": "docs"})
    client.put(docs.add("file", 1), 1, history=True)
    client.put(docs.add("file", 1), 2, history=True)
    client.put(docs.add("sub", 1).add("file", 2), 3)
    client.put(group.add("folder", 10), {"name": "a sibling"})
    other = KeyPath().add("t", uuid.uuid4())
    assert client.move(docs, other.add("folder", 1)) == 3
    assert client.get(docs) is None and client.get(group.add("folder", 10)) is not None
    moved = client.get(other.add("folder", 1).add("file", 1))
    assert moved is not None and moved.value == 2 and moved.version == 2
    assert [i.version for i in client.history(other.add("folder", 1).add("file", 1))] == [2, 1]
    assert client.copy(other, group.add("copy", 1)) == 3
    assert [i.value for i in client.list(group.add("copy", 1))] == [{"name": "docs"}, 2, 3]
    with pytest.raises(DestinationNotEmpty) as caught:
        client.copy(other, group.add("copy", 1))
    assert caught.value.status == 409 and caught.value.code == "destination_not_empty"
    with pytest.raises(InvalidRequest):
        client.move(other, other.add("inside", 1))
    assert client.delete_subtree(group.add("copy", 1)) == 3
    with pytest.raises(NotFound):
        client.delete_subtree(group.add("copy", 1))


def test_async_subtree_operations(server: Server, group: KeyPath) -> None:
    async def main() -> None:
        async with AsyncClient(server.url, token=TOKEN) as client:
            await client.put(group.add("a", 1).add("b", 1), 1)
            assert await client.copy(group.add("a", 1), group.add("a", 2)) == 1
            assert await client.move(group.add("a", 2), group.add("a", 3)) == 1
            assert await client.delete_subtree(group) == 2

    asyncio.run(main())
