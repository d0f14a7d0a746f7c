"""Partial updates (`patch`, `merge`, `increment`) and their transaction operations against a
real `pathdb serve` (see conftest.py)."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any, List

import httpx
import pytest

from pathdb import (
    AsyncClient,
    Client,
    ConditionFailed,
    Conflict,
    Increment,
    InvalidRequest,
    Item,
    KeyPath,
    Merge,
    NotFound,
    Patch,
    PatchConflict,
    PatchOperation,
    PatchTestFailed,
    PathDBError,
    Put,
)

from .conftest import TOKEN, Server


def test_merge(client: Client, group: KeyPath) -> None:
    path = group.add("post", 1)
    client.put(path, {"title": "draft", "tags": {"a": 1, "b": 2}, "body": "..."})
    item = client.merge(path, {"title": "final", "tags": {"b": None, "c": 3}, "body": None})
    assert (item.path, item.version) == (path, 2)
    assert item.value == {"title": "final", "tags": {"a": 1, "c": 3}}
    assert client.get(path) == item
    # A document that is not an object replaces the value, None included.
    assert client.merge(path, [1, 2]).value == [1, 2]
    assert client.merge(path, None).value is None
    kept = client.merge(path, {"n": 1}, history=True, ttl_seconds=3600)
    assert kept.value == {"n": 1} and kept.expires_at is not None
    assert [r.version for r in client.history(path)] == [kept.version]


def test_json_patch(client: Client, group: KeyPath) -> None:
    path = group.add("doc", 1)
    client.put(path, {"title": "a", "tags": ["x"], "old": 1, "meta": {"n": 1}})
    operations: List[PatchOperation] = [
        {"op": "test", "path": "/title", "value": "a"},
        {"op": "replace", "path": "/title", "value": "b"},
        {"op": "add", "path": "/tags/-", "value": "y"},
        {"op": "remove", "path": "/old"},
        {"op": "move", "from": "/meta/n", "path": "/n"},
        {"op": "copy", "from": "/tags", "path": "/labels"},
        {"op": "increment", "path": "/n", "value": 41},
    ]
    item = client.patch(str(path), operations)
    assert item.version == 2
    assert item.value == {"title": "b", "tags": ["x", "y"], "meta": {}, "n": 42, "labels": ["x", "y"]}
    assert client.get(path) == item


def test_increment(client: Client, group: KeyPath) -> None:
    counter = group.add("counter", 1)
    # create is on by default: a missing counter starts at 0.
    first = client.increment(counter, "/views")
    assert (first.version, first.value) == (1, {"views": 1})
    assert first.created_at == first.modified_at
    assert client.increment(counter, "/views", 41).value == {"views": 42}
    assert client.increment(counter, "/views", -2).value == {"views": 40}
    assert client.increment(counter, "/likes", 0.5).value == {"views": 40, "likes": 0.5}
    with pytest.raises(NotFound) as missing:
        client.increment(group.add("counter", 2), "/views", create=False)
    assert (missing.value.status, missing.value.code) == (404, "not_found")
    assert client.get(group.add("counter", 2)) is None
    with pytest.raises(TypeError):
        client.increment(counter, "/views", True)

    client.merge(counter, {"name": "visits"})
    with pytest.raises(PatchConflict) as conflict:
        client.increment(counter, "/name")
    assert (conflict.value.status, conflict.value.code) == (409, "patch_conflict")
    client.put(counter, {"n": 2**53 - 1})
    with pytest.raises(PatchConflict):
        client.increment(counter, "/n")  # past the exact integer range
    got = client.get(counter)
    assert got is not None and got.value == {"n": 2**53 - 1}
    assert not issubclass(PatchConflict, Conflict)  # not a concurrent write: never retried


def test_failed_test_writes_nothing(client: Client, group: KeyPath) -> None:
    path = group.add("doc", 1)
    before = client.put(path, {"state": "open", "n": 1})
    with pytest.raises(PatchTestFailed) as failed:
        client.patch(
            path,
            [
                {"op": "increment", "path": "/n", "value": 1},
                {"op": "test", "path": "/state", "value": "closed"},
            ],
        )
    assert (failed.value.status, failed.value.code) == (409, "patch_test_failed")
    assert isinstance(failed.value, PathDBError) and not isinstance(failed.value, ConditionFailed)
    assert client.get(path) == before


def test_conditions_and_create(client: Client, group: KeyPath) -> None:
    path = group.add("doc", 1)
    with pytest.raises(NotFound):
        client.merge(path, {"a": 1})
    with pytest.raises(NotFound):
        client.patch(path, [{"op": "add", "path": "/a", "value": 1}])
    created = client.merge(path, {"a": 1}, create=True)  # applied to {}
    assert (created.path, created.version, created.value) == (path, 1, {"a": 1})
    assert created.created_at == created.modified_at
    with pytest.raises(ConditionFailed) as stale:
        client.merge(path, {"a": 2}, if_version=7)
    assert (stale.value.status, stale.value.code) == (412, "condition_failed")
    assert client.merge(path, {"a": 2}, if_version=1).version == 2
    with pytest.raises(ConditionFailed):
        client.increment(path, "/a", must_not_exist=True)
    other = group.add("doc", 2)
    assert client.increment(other, "/a", must_not_exist=True).value == {"a": 1}
    with pytest.raises(ConditionFailed):
        client.patch(group.add("doc", 3), [], if_version=1, create=True)
    with pytest.raises(ValueError):
        client.merge(path, {}, must_not_exist=True, if_version=1)
    got = client.get(path)
    assert got is not None and (got.version, got.value) == (2, {"a": 2})


def test_invalid_patches(client: Client, group: KeyPath) -> None:
    path = group.add("doc", 1)
    client.put(path, {"a": 1})
    bad: Any = [{"op": "add", "path": "/b", "value": 1}, {"op": "frobnicate", "path": "/a"}]
    with pytest.raises(InvalidRequest) as raised:
        client.patch(path, bad)
    assert (raised.value.status, raised.value.code) == (400, "invalid_patch")
    assert raised.value.message.startswith("operation 1: ")
    not_a_number: Any = [{"op": "increment", "path": "/a", "value": "1"}]
    with pytest.raises(InvalidRequest):
        client.patch(path, not_a_number)
    with pytest.raises(PatchConflict):
        client.patch(path, [{"op": "remove", "path": "/missing"}])
    got = client.get(path)
    assert got is not None and (got.version, got.value) == (1, {"a": 1})


def test_patch_in_transactions(client: Client, group: KeyPath) -> None:
    a, b, c = group.add("doc", 1), group.add("doc", 2), group.add("doc", 3)
    client.put(a, {"n": 1, "tags": ["x"]})
    results = client.transact(
        [
            Patch(a, [{"op": "add", "path": "/tags/-", "value": "y"}], if_version=1),
            Put(b, {"title": "new"}),
            Merge(b, {"draft": False}),  # applies to the value put just before
            Increment(b, "/views", 2),
            Increment(c, "/views", history=True),  # create is on by default
        ]
    )
    assert all(isinstance(r, Item) for r in results)
    assert results[0] is not None and results[0].value == {"n": 1, "tags": ["x", "y"]}
    last_b = results[3]
    assert last_b is not None and last_b.value == {"title": "new", "draft": False, "views": 2}
    got_b = client.get(b)
    assert got_b is not None and got_b.value == last_b.value and got_b.version == 1
    assert results[4] is not None and results[4].value == {"views": 1}
    assert [r.version for r in client.history(c)] == [1]
    assert Merge(c, None).to_wire() == {"op": "patch", "path": str(c), "merge": None}

    # All or nothing: a failed test, a misfit, a missing item or a condition writes nothing.
    failing: List[Any] = [
        (Patch(a, [{"op": "test", "path": "/n", "value": 2}]), PatchTestFailed, 409),
        (Increment(a, "/tags"), PatchConflict, 409),
        (Merge(group.add("doc", 9), {"x": 1}), NotFound, 404),
        (Merge(a, {"x": 1}, if_version=1), ConditionFailed, 409),
        (Patch(a, [{"op": "nope"}]), InvalidRequest, 400),  # type: ignore[list-item]
    ]
    for op, kind, status in failing:
        with pytest.raises(kind) as raised:
            client.transact([Put(group.add("doc", 4), "untouched"), op])
        assert raised.value.status == status
    assert client.get(group.add("doc", 4)) is None
    got_a = client.get(a)
    assert got_a is not None and got_a.version == 2
    created = client.transact([Merge(group.add("doc", 5), {"a": 1}, create=True, ttl_seconds=60)])
    assert created[0] is not None and created[0].value == {"a": 1}
    assert created[0].expires_at is not None
    with pytest.raises(ValueError):
        Patch(a, [], must_not_exist=True, if_version=1)


def test_concurrent_increments_all_count(server: Server, group: KeyPath) -> None:
    counter = group.add("counter", 1)
    n_threads, n_each = 4, 25
    barrier = threading.Barrier(n_threads)
    errors: List[BaseException] = []

    def worker() -> None:
        try:
            with Client(server.url, token=TOKEN) as c:
                barrier.wait()
                for _ in range(n_each):
                    c.increment(counter, "/n")
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with Client(server.url, token=TOKEN) as c:
        got = c.get(counter)
    assert got is not None and got.value == {"n": n_threads * n_each}
    assert got.version == n_threads * n_each


def test_async_patch_and_concurrent_increments(server: Server, group: KeyPath) -> None:
    async def main() -> None:
        async with AsyncClient(server.url, token=TOKEN) as c:
            path = group.add("async", 1)
            await c.put(path, {"a": {"b": 1}})
            merged = await c.merge(path, {"a": {"c": 2}})
            assert merged.value == {"a": {"b": 1, "c": 2}}
            patched = await c.patch(path, [{"op": "replace", "path": "/a/b", "value": 5}])
            assert patched.value == {"a": {"b": 5, "c": 2}}
            with pytest.raises(PatchTestFailed):
                await c.patch(path, [{"op": "test", "path": "/a/b", "value": 1}])
            with pytest.raises(NotFound):
                await c.merge(group.add("async", 2), {})
            assert (await c.merge(group.add("async", 2), {}, create=True)).value == {}

            counter = group.add("counter", 1)

            async def task() -> None:
                for _ in range(25):
                    await c.increment(counter, "/n", 2)

            await asyncio.gather(*(task() for _ in range(4)))
            got = await c.get(counter)
            assert got is not None and got.value == {"n": 200}

    asyncio.run(main())


def scripted(answers: List[httpx.Response], calls: List[httpx.Request]) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return answers.pop(0)

    return httpx.MockTransport(handler)


ITEM = {"path": "/a-1", "version": 4, "created_at": 0, "modified_at": 1, "expires_at": None, "value": {}}


def error(status: int, code: str) -> httpx.Response:
    return httpx.Response(status, json={"error": {"code": code, "message": f"{code}!"}})


def test_patch_requests_carry_media_types_and_options() -> None:
    calls: List[httpx.Request] = []
    answers = [httpx.Response(200, json=ITEM), httpx.Response(201, json=ITEM), httpx.Response(201, json=ITEM)]
    with Client("http://db", transport=scripted(answers, calls)) as c:
        c.patch(KeyPath().add("a", 1).add("s", "x/y"), [{"op": "remove", "path": "/x"}], if_version=3, history=True)
        c.merge("/a-1", {"k": None}, must_not_exist=True, create=True, ttl_seconds=5)
        c.increment("/a-1", "/n~1m", 7)
    patch, merge, increment = calls
    assert patch.method == "PATCH" and patch.url.raw_path == b"/v1/items/a-1/s-x%25%2Fy?history=true"
    assert patch.headers["content-type"] == "application/json-patch+json"
    assert patch.headers["if-match"] == '"3"'
    assert json.loads(patch.content) == [{"op": "remove", "path": "/x"}]
    assert merge.url.raw_path == b"/v1/items/a-1?ttl_seconds=5&create=true"
    assert merge.headers["content-type"] == "application/merge-patch+json"
    assert merge.headers["if-none-match"] == "*"
    assert json.loads(merge.content) == {"k": None}
    assert increment.url.raw_path == b"/v1/items/a-1?create=true"
    assert json.loads(increment.content) == [{"op": "increment", "path": "/n~1m", "value": 7}]


def test_patch_errors_map_and_only_conflicts_retry() -> None:
    calls: List[httpx.Request] = []
    answers = [
        error(409, "conflict"),
        httpx.Response(200, json=ITEM),
        error(409, "patch_conflict"),
        error(409, "patch_test_failed"),
        error(400, "invalid_patch"),
    ]
    with Client("http://db", backoff=0.001, transport=scripted(answers, calls)) as c:
        assert c.increment("/a-1", "/n").version == 4  # a concurrent write: retried
        assert len(calls) == 2
        with pytest.raises(PatchConflict):
            c.increment("/a-1", "/n")
        with pytest.raises(PatchTestFailed):
            c.patch("/a-1", [{"op": "test", "path": "/n", "value": 0}])
        with pytest.raises(InvalidRequest) as invalid:
            c.merge("/a-1", {})
        assert invalid.value.code == "invalid_patch"
    assert len(calls) == 5
