"""Interactive transactions (`Client.transaction`, `AsyncClient.transaction`) against a real
`pathdb serve` (see conftest.py), their requests against scripted answers, the local patch
against the server's, and the key order the listing overlay relies on."""

from __future__ import annotations

import asyncio
import json
import random
import threading
import uuid
from typing import Any, Dict, List, Optional

import httpx
import pytest

from pathdb import (
    AsyncClient,
    AsyncTransaction,
    CheckList,
    Client,
    ConditionFailed,
    Desc,
    InvalidRequest,
    Item,
    KeyPath,
    Node,
    NotFound,
    PatchConflict,
    PatchOperation,
    PatchTestFailed,
    PathDBError,
    Transaction,
)

from .conftest import TOKEN, Server


def values(page_items: List[Any]) -> List[Any]:
    return [i.value if isinstance(i, Item) else "node" for i in page_items]


def test_reads_see_the_transactions_own_writes(client: Client, group: KeyPath) -> None:
    a, b, c, missing = (group.add("n", i) for i in (1, 2, 10, 5))
    client.put(a, {"n": 1})
    client.put(b, {"n": 2})
    client.put(c, {"n": 10})

    def fn(tx: Transaction) -> Dict[str, Any]:
        seen: Dict[str, Any] = {}
        first = tx.get(a)
        assert first is not None and first.version == 1
        tx.put(a, {"n": 100})
        after_put = tx.get(a)
        assert after_put is not None
        seen["put"] = (after_put.version, after_put.value)
        tx.delete(b)
        seen["deleted"] = tx.get(b)
        seen["missing"] = tx.get(missing)
        tx.put(missing, {"n": 5})
        fresh = tx.get(missing)
        assert fresh is not None
        seen["fresh"] = (fresh.version, fresh.value)
        patched = tx.patch(c, merge={"n": None, "m": 1})
        seen["merge"] = (patched.version, patched.value)
        patched = tx.patch(c, patch=[{"op": "increment", "path": "/m", "value": 2}])
        seen["patch"] = (patched.version, patched.value)
        # The listing: /n-1 replaced, /n-2 gone, /n-5 joined in key order (5 before 10).
        seen["list"] = values(list(tx.list(group.add("n"))))
        seen["reverse"] = values(tx.list_page(group.add("n"), reverse=True).items)
        seen["many"] = [i.value if i else None for i in tx.get_many([c, b, a])]
        return seen

    seen = client.transaction(fn)
    assert seen["put"] == (2, {"n": 100})
    assert seen["deleted"] is None and seen["missing"] is None
    assert seen["fresh"] == (1, {"n": 5})
    assert seen["merge"] == (2, {"m": 1})
    assert seen["patch"] == (2, {"m": 3})  # still one write: the version the commit makes
    assert seen["list"] == [{"n": 100}, {"n": 5}, {"m": 3}]
    assert seen["reverse"] == [{"m": 3}, {"n": 5}, {"n": 100}]
    assert seen["many"] == [{"m": 3}, None, {"n": 100}]
    listed = [(i.path, i.version, i.value) for i in client.list(group)]
    assert listed == [(a, 2, {"n": 100}), (missing, 1, {"n": 5}), (c, 2, {"m": 3})]


def test_pages_show_each_pending_write_once(client: Client, group: KeyPath) -> None:
    for i in range(0, 20, 2):
        client.put(group.add("n", i), i)

    def fn(tx: Transaction) -> List[Any]:
        for i in (1, 7, 13, 19, 21):
            tx.put(group.add("n", i), i)
        tx.delete(group.add("n", 8))
        shown: List[Any] = []
        token: Optional[str] = None
        while True:
            page = tx.list_page(group, page_size=3, page_token=token)
            shown += values(page.items)
            token = page.next_page_token
            if token is None:
                return shown

    assert client.transaction(fn) == [0, 1, 2, 4, 6, 7, 10, 12, 13, 14, 16, 18, 19, 21]
    assert [i.value for i in client.list(group)] == [0, 1, 2, 4, 6, 7, 10, 12, 13, 14, 16, 18, 19, 21]


def test_children_listings_show_nodes_and_respect_bounds(client: Client, group: KeyPath) -> None:
    client.put(group.add("f", 1), "one")
    client.put(group.add("f", 3).add("x", 1), "below")

    def fn(tx: Transaction) -> List[Any]:
        tx.put(group.add("f", 2).add("x", 1), "new below")
        tx.put(group.add("f", 4), "four")
        tx.put(group.add("f", 9), "out of bounds")
        tx.delete(group.add("f", 1))
        listed = tx.list(group, children=True, lt=group.add("f", 5))
        return [(str(e.path), "node" if isinstance(e, Node) else e.value) for e in listed]

    assert client.transaction(fn) == [
        (str(group.add("f", 2)), "node"),
        (str(group.add("f", 3)), "node"),
        (str(group.add("f", 4)), "four"),
    ]


def test_a_callback_that_raises_writes_nothing(client: Client, group: KeyPath) -> None:
    path = group.add("acct", 1)
    client.put(path, {"balance": 10})

    class Refused(Exception):
        pass

    def fn(tx: Transaction) -> None:
        item = tx.get(path)
        assert item is not None
        tx.put(path, {"balance": 0})
        tx.create(str(group.add("log")), {"refused": True})
        raise Refused()

    with pytest.raises(Refused):
        client.transaction(fn)
    got = client.get(path)
    assert got is not None and (got.version, got.value) == (1, {"balance": 10})
    assert [i.path for i in client.list(group)] == [path]


def test_a_read_changed_during_the_run_runs_it_again(server: Server, client: Client, group: KeyPath) -> None:
    counter = group.add("counter", 1)
    client.put(counter, {"n": 0})
    runs = 0

    with Client(server.url, token=TOKEN) as other:

        def fn(tx: Transaction) -> int:
            nonlocal runs
            runs += 1
            item = tx.get(counter)
            assert item is not None
            if runs == 1:
                other.put(counter, {"n": 41})  # another writer, between the read and the commit
            n = int(item.value["n"]) + 1
            tx.put(counter, {"n": n})
            return n

        assert client.transaction(fn) == 42
    assert runs == 2
    got = client.get(counter)
    assert got is not None and got.value == {"n": 42} and got.version == 3


def test_a_read_only_callback_checks_its_reads(server: Server, client: Client, group: KeyPath) -> None:
    a, b = group.add("x", 1), group.add("x", 2)
    client.put(a, 1)
    runs = 0
    with Client(server.url, token=TOKEN) as other:

        def fn(tx: Transaction) -> List[Any]:
            nonlocal runs
            runs += 1
            first = tx.get(a)
            if runs == 1:
                other.put(b, 2)  # b is read as absent next: the two reads do not hold together
                other.put(a, 10)
            second = tx.get(b)
            return [first.value if first else None, second.value if second else None]

        assert client.transaction(fn) == [10, 2]
    assert runs == 2


def test_a_listing_changed_in_its_range_runs_it_again(server: Server, client: Client, group: KeyPath) -> None:
    orders = group.add("order")
    client.put(group.add("order", 1), {"total": 5})
    client.put(group.add("profile", 1), {"name": "Ada"})

    def add_order(other_write: Any) -> List[int]:
        runs: List[int] = []

        def fn(tx: Transaction) -> bool:
            runs.append(1)
            listed = list(tx.list(orders))
            if len(runs) == 1:
                other_write()
            if len(listed) >= 5:
                return False
            tx.create(str(orders), {"total": 1})
            return True

        assert client.transaction(fn)
        return runs

    with Client(server.url, token=TOKEN) as other:
        # Outside the range: another namespace of the group. The transaction commits at once.
        assert len(add_order(lambda: other.put(group.add("profile", 1), {"name": "Ada L."}))) == 1
        # In the range: the listing changed after its first page, so it runs again.
        assert len(add_order(lambda: other.put(group.add("order", 99), {"total": 7}))) == 2
    assert len(list(client.list(orders))) == 4


def test_max_attempts_exhausted_raises_condition_failed(server: Server, client: Client, group: KeyPath) -> None:
    path = group.add("hot", 1)
    client.put(path, 0)
    runs = 0
    with Client(server.url, token=TOKEN) as other:

        def fn(tx: Transaction) -> None:
            nonlocal runs
            runs += 1
            item = tx.get(path)
            assert item is not None
            other.put(path, item.value + 1)  # always changes what was read
            tx.put(path, -1)

        with pytest.raises(ConditionFailed) as raised:
            client.transaction(fn, max_attempts=3)
    assert runs == 3
    assert raised.value.status == 409 and raised.value.code == "condition_failed"
    assert raised.value.index == 0
    got = client.get(path)
    assert got is not None and got.value == 3
    with pytest.raises(ValueError):
        client.transaction(lambda tx: None, max_attempts=0)


def test_concurrent_transfers_keep_the_sum(server: Server, group: KeyPath) -> None:
    accounts = [group.add("account", i) for i in range(6)]
    with Client(server.url, token=TOKEN) as c:
        for path in accounts:
            c.put(path, {"balance": 100})
    committed: List[int] = []
    errors: List[BaseException] = []
    lock = threading.Lock()

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        with Client(server.url, token=TOKEN) as c:
            for _ in range(15):
                src, dst = rng.sample(accounts, 2)
                amount = rng.randint(1, 60)

                def transfer(tx: Transaction) -> bool:
                    a, b = tx.get_many([src, dst])
                    assert a is not None and b is not None
                    if a.value["balance"] < amount:
                        return False
                    tx.put(src, {"balance": a.value["balance"] - amount})
                    tx.put(dst, {"balance": b.value["balance"] + amount})
                    return True

                try:
                    if c.transaction(transfer):
                        with lock:
                            committed.append(amount)
                except BaseException as e:  # recorded, so that the assertion shows it
                    errors.append(e)

    threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with Client(server.url, token=TOKEN) as c:
        balances = [i.value["balance"] for i in c.get_many(accounts) if i is not None]
    assert len(balances) == 6 and sum(balances) == 600 and min(balances) >= 0
    assert committed


def test_creates_and_reads_only_transactions(client: Client, group: KeyPath) -> None:
    def fn(tx: Transaction) -> Any:
        order = tx.create(str(group.add("order")), {"n": 1}, id="sequence")
        group_handle = tx.create("/tgroup", {"new": True})
        assert order.path is None
        return order, group_handle

    order, new_group = client.transaction(fn)
    assert order.path == group.add("order", 1) and order.item is not None
    assert order.item.value == {"n": 1}
    assert new_group.path is not None and new_group.path.elements[0].namespace == "tgroup"
    with pytest.raises(ValueError):
        client.transaction(lambda tx: tx.create(str(group.add("order", 1)), {}))
    assert client.transaction(lambda tx: 7) == 7  # neither read nor wrote: nothing sent


def test_patch_of_a_missing_item_and_misuse(client: Client, group: KeyPath) -> None:
    path = group.add("doc", 1)
    with pytest.raises(NotFound):
        client.transaction(lambda tx: tx.patch(path, merge={"a": 1}))
    client.put(path, {"a": 1})
    with pytest.raises(TypeError):
        client.transaction(lambda tx: tx.patch(path))
    with pytest.raises(PatchTestFailed):
        client.transaction(lambda tx: tx.patch(path, patch=[{"op": "test", "path": "/a", "value": 2}]))
    got = client.get(path)
    assert got is not None and got.version == 1
    client.put(group.add("doc", 2), {"a": 2})
    first = client.list_page(group, page_size=1)
    assert first.next_page_token is not None
    with pytest.raises(InvalidRequest):  # a next page of a listing this transaction did not start
        client.transaction(lambda tx: tx.list_page(group, page_size=1, page_token=first.next_page_token))
    leaked: List[Transaction] = []
    client.transaction(lambda tx: leaked.append(tx))
    with pytest.raises(RuntimeError):
        leaked[0].get(path)


def test_async_transactions(server: Server, group: KeyPath) -> None:
    async def main() -> None:
        async with AsyncClient(server.url, token=TOKEN) as c, AsyncClient(server.url, token=TOKEN) as other:
            path = group.add("async", 1)
            await c.put(path, {"n": 1})
            runs = 0

            async def bump(tx: AsyncTransaction) -> int:
                nonlocal runs
                runs += 1
                item = await tx.get(path)
                assert item is not None
                if runs == 1:
                    await other.put(path, {"n": 10})
                patched = await tx.patch(path, patch=[{"op": "increment", "path": "/n", "value": 1}])
                listed = [entry async for entry in tx.list(group)]
                assert values(listed) == [patched.value]
                page = await tx.list_page(group)
                assert values(page.items) == [patched.value]
                return int(patched.value["n"])

            assert await c.transaction(bump) == 11
            assert runs == 2

            async def refuse(tx: AsyncTransaction) -> None:
                tx.delete(path)
                raise KeyError("no")

            with pytest.raises(KeyError):
                await c.transaction(refuse)
            got = await c.get(path)
            assert got is not None and got.value == {"n": 11}

            async def add(tx: AsyncTransaction) -> Any:
                return tx.create(str(group.add("log")), {"at": 1})

            handle = await c.transaction(add)
            assert handle.path is not None and handle.path.parent == group

    asyncio.run(main())


# ------------------------------------------------------------------------------------------------
# The request a transaction sends, against scripted answers


def scripted(handler: Any, calls: List[httpx.Request]) -> httpx.MockTransport:
    def record(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        response: httpx.Response = handler(request)
        return response

    return httpx.MockTransport(record)


def wire_item(path: str, version: int, value: Any) -> Dict[str, Any]:
    return {"path": path, "version": version, "created_at": 0, "modified_at": 0, "expires_at": None, "value": value}


def test_the_commit_carries_every_read_as_a_condition() -> None:
    calls: List[httpx.Request] = []
    stored = {"/a-1/x-1": wire_item("/a-1/x-1", 3, 1), "/a-1/x-3": wire_item("/a-1/x-3", 7, 3), "/a-1/o-1": wire_item("/a-1/o-1", 2, "o")}

    def handler(request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path.startswith("/v1/items/"):
            item = stored.get("/" + path[len("/v1/items/") :])
            if item is None:
                return httpx.Response(404, json={"error": {"code": "not_found", "message": "no"}})
            return httpx.Response(200, json=item)
        if path == "/v1/get":
            asked = json.loads(request.content)["paths"]
            return httpx.Response(200, json={"items": [stored[p] for p in asked if p in stored]})
        if path.startswith("/v1/list/"):
            return httpx.Response(200, json={"items": [stored["/a-1/o-1"]], "next_page_token": None, "changes_token": "T1"})
        assert path == "/v1/transact"
        ops = json.loads(request.content)["ops"]
        results = [{"op": "put", "item": wire_item("/a-1/c-9", 1, {})}] + [{"op": "check"}] * (len(ops) - 1)
        return httpx.Response(200, json={"results": results})

    with Client("http://db", transport=scripted(handler, calls)) as c:

        def fn(tx: Transaction) -> None:
            tx.get("/a-1/x-3")  # read, not written: a check
            tx.get("/a-1/x-2")  # read as absent: a must_not_exist check
            tx.get_many(["/a-1/x-1", "/a-1/x-4"])
            tx.put("/a-1/x-1", "new")  # read at 3
            tx.put("/a-1/x-5", "blind")  # never read: unconditional
            tx.delete("/a-1/x-4")  # read as absent: only a check
            tx.put("/a-1/x-1", "newer")  # the last write wins, in its first place
            list(tx.list("/a-1/o", lte="/a-1/o-5"))
            tx.create("/a-1/c", {}, id="sequence")

        c.transaction(fn)
        assert c.transaction(lambda tx: None) is None  # nothing read or written: no request
    ops = json.loads(calls[-1].content)["ops"]
    assert [json.dumps(o, sort_keys=True) for o in ops] == [
        json.dumps(o, sort_keys=True)
        for o in [
            {"op": "create", "path": "/a-1/c", "id": "sequence", "value": {}},
            {"op": "put", "path": "/a-1/x-1", "value": "newer", "if_version": 3},
            {"op": "put", "path": "/a-1/x-5", "value": "blind"},
            {"op": "check", "path": "/a-1/x-4", "must_not_exist": True},
            {"op": "check", "path": "/a-1/x-2", "must_not_exist": True},
            {"op": "check", "path": "/a-1/x-3", "if_version": 7},
            {"op": "check_list", "prefix": "/a-1/o", "changes_token": "T1", "lte": "/a-1/o-5", "seen": {"/a-1/o-1": 2}},
        ]
    ]
    assert sum(1 for r in calls if r.url.path == "/v1/transact") == 1


def test_a_failed_condition_reruns_with_backoff_then_raises() -> None:
    calls: List[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/transact":
            return httpx.Response(409, json={"error": {"code": "condition_failed", "message": "operation 0: x", "index": 0}})
        return httpx.Response(200, json=wire_item("/a-1", 1, 0))

    runs = 0

    def fn(tx: Transaction) -> None:
        nonlocal runs
        runs += 1
        tx.get("/a-1")
        tx.put("/a-1", 1)

    with Client("http://db", transport=scripted(handler, calls)) as c:
        with pytest.raises(ConditionFailed) as raised:
            c.transaction(fn, max_attempts=4)
    assert runs == 4 and raised.value.index == 0
    assert [r.url.path for r in calls] == ["/v1/items/a-1", "/v1/transact"] * 4
    # Any other failure of the commit is raised at once.
    calls.clear()
    with Client("http://db", transport=scripted(lambda r: httpx.Response(400, json={"error": {"code": "invalid_request", "message": "too many"}}), calls)) as c:
        with pytest.raises(InvalidRequest):
            c.transaction(lambda tx: tx.put("/a-1", 1))
    assert len(calls) == 1
    assert CheckList("/a-1/o", "T").to_wire() == {"op": "check_list", "prefix": "/a-1/o", "changes_token": "T"}


# ------------------------------------------------------------------------------------------------
# The local patch is the server's


PATCHES: List[List[PatchOperation]] = [
    [{"op": "add", "path": "/tags/-", "value": "z"}, {"op": "add", "path": "/tags/0", "value": "first"}],
    [{"op": "remove", "path": "/meta/n"}, {"op": "replace", "path": "/title", "value": None}],
    [{"op": "move", "from": "/meta", "path": "/m"}, {"op": "copy", "from": "/tags", "path": "/t~1s"}],
    [{"op": "increment", "path": "/views", "value": 2}, {"op": "increment", "path": "/deep/er", "value": 0.5}],
    [{"op": "increment", "path": "/tags/0", "value": 1}],  # not a number: a conflict
    [{"op": "increment", "path": "/views", "value": 2**53}],  # past 2^53
    [{"op": "remove", "path": "/nothing"}],
    [{"op": "add", "path": "/tags/9", "value": 1}],
    [{"op": "test", "path": "/views", "value": 1}, {"op": "replace", "path": "", "value": [1]}],
    [{"op": "test", "path": "/views", "value": True}],
    [{"op": "test", "path": "/views", "value": 1.0}],
    [{"op": "move", "from": "/meta", "path": "/meta/inner"}],
    [{"op": "add", "path": "/tags/01", "value": 1}],
]


@pytest.mark.parametrize("operations", PATCHES, ids=[json.dumps(p) for p in PATCHES])
def test_the_local_patch_is_the_servers(client: Client, group: KeyPath, operations: List[PatchOperation]) -> None:
    start = {"title": "a", "tags": ["x", "y"], "meta": {"n": 1}, "views": 1}
    on_server = group.add("server", 1)
    client.put(on_server, start)
    expected: Any
    try:
        expected = client.patch(on_server, operations).value
    except PathDBError as e:
        expected = type(e)
    local = group.add("local", 1)
    client.put(local, start)
    got: Any
    try:
        got = client.transaction(lambda tx: tx.patch(local, patch=operations)).value
    except PathDBError as e:
        got = type(e)
    assert got == expected
    if isinstance(expected, type):
        assert expected in (PatchConflict, PatchTestFailed)
    else:
        stored = client.get(local)
        assert stored is not None and stored.value == expected


MERGES: List[Any] = [{"title": None, "meta": {"n": None, "k": [1]}}, [1, 2], None, {"a": {"b": {"c": None}}}]


@pytest.mark.parametrize("document", MERGES, ids=[json.dumps(m) for m in MERGES])
def test_the_local_merge_is_the_servers(client: Client, group: KeyPath, document: Any) -> None:
    start = {"title": "a", "meta": {"n": 1}}
    client.put(group.add("server", 1), start)
    client.put(group.add("local", 1), start)
    expected = client.merge(group.add("server", 1), document).value
    assert client.transaction(lambda tx: tx.patch(group.add("local", 1), merge=document)).value == expected


# ------------------------------------------------------------------------------------------------
# Key order


def test_key_order_is_the_servers(client: Client, group: KeyPath) -> None:
    ids: List[Any] = [
        0, 1, 2, 10, 255, 256, -1, -300, 2**64 - 1, -(2**64 - 1),
        Desc(5), Desc(-5), Desc(50), "a", "ab", "b", "10", Desc("a"), Desc("ab"),
        b"\x00", b"\x01\x02", b"\xff", Desc(b"\x00"), Desc(b"a"),
        uuid.UUID("4c9d36e5-6b19-4e6a-828c-226ed667458a"),
    ]  # fmt: skip
    paths = [group.add("k", i) for i in ids] + [group.add("k", 3).add("c", 1), group.add("j", 1), group.add("kk", 1)]
    for path in paths:
        client.put(path, str(path))
    listed = [i.path for i in client.list(group)]
    assert listed == sorted(paths)
    assert [i.path for i in client.list(group, reverse=True)] == sorted(paths, reverse=True)
    assert KeyPath.parse("/a-2") < KeyPath.parse("/a-10") <= KeyPath.parse("/a-10")
    assert KeyPath.parse("/a-1/b") < KeyPath.parse("/a-1/b-1")
