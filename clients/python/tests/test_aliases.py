"""Alias paths (docs/aliases.md) against a real `pathdb serve` (see conftest.py), and their errors.

Definitions and alias paths apply to the whole database, so each test uses namespaces of its own
names: `ns_<random>` for its items, and others for the elements of its alias paths."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any, Dict, List

import httpx
import pytest

from pathdb import (
    AliasBuild,
    AliasBuilding,
    AliasConflict,
    AliasInvalid,
    AliasTaken,
    AsyncClient,
    Client,
    DeleteChange,
    InvalidRequest,
    KeyPath,
    NotFound,
    PathDBError,
    PathIsAlias,
    Put,
    PutChange,
    Unavailable,
)
from pathdb._errors import error_for

from .conftest import ADMIN_TOKEN, TOKEN, Server

# Builds read the whole database, which the other tests fill: time enough for a slow machine.
BUILD_SECONDS = 60


def fresh(prefix: str = "ns_") -> str:
    """A namespace no other test uses."""
    return prefix + uuid.uuid4().hex[:12]


def test_reads_lists_and_writes_through_aliases(
    admin: Client, client: Client, group: KeyPath
) -> None:
    ns, email, status = fresh(), fresh("email_"), fresh("status_")
    by_email, by_status = f"/{email}-{{email}}", f"/{status}-{{status}}/{ns}-{{@{ns}}}"
    defined = admin.put_namespace(ns, aliases=[by_email, {"path": by_status}])
    assert defined.templates == [by_email, by_status]
    assert [a.path for a in defined.aliases] == [by_email, by_status]
    ready = admin.wait_for_aliases(ns, timeout=BUILD_SECONDS)
    assert [(a.path, a.state, a.conflicts) for a in ready.aliases] == [
        (by_email, "ready", []),
        (by_status, "ready", []),
    ]
    assert all(isinstance(a, AliasBuild) for a in ready.aliases)
    ann = client.put(group.add(ns, 1), {"email": "ann@example.org", "status": "open"})
    client.put(group.add(ns, 2), {"email": "bo@example.org", "status": "open"})
    client.put(group.add(ns, 3), {"email": "cy@example.org", "status": "shipped"})

    # A get through an alias answers the item: its own path, and the alias read.
    alias = KeyPath().add(email, "ann@example.org")
    got = client.get(alias)
    assert got is not None
    assert (got.path, got.alias, got.version, got.value) == (ann.path, alias, 1, ann.value)
    assert client.get(ann.path) == ann and ann.alias is None
    assert client.get(KeyPath().add(email, "nobody@example.org")) is None

    # A listing of an alias prefix: the items in alias order, each with its alias.
    open_orders = KeyPath().add(status, "open")
    first = client.list_page(open_orders)
    assert [(i.path, i.alias) for i in first.items] == [
        (group.add(ns, 1), open_orders.add(ns, 1)),
        (group.add(ns, 2), open_orders.add(ns, 2)),
    ]
    assert [i.path for i in client.list(open_orders, reverse=True)] == [
        group.add(ns, 2),
        group.add(ns, 1),
    ]

    # get_many answers every path asked, an alias as well.
    many = client.get_many([alias, ann.path, KeyPath().add(email, "nobody@example.org")])
    assert [None if i is None else (i.path, i.alias) for i in many] == [
        (ann.path, alias),
        (ann.path, None),
        None,
    ]

    # A patch and a delete through an alias act on the item; the feed of an alias prefix sees
    # items leave it.
    patched = client.merge(alias, {"status": "shipped"})
    assert (patched.path, patched.version, patched.alias) == (ann.path, 2, None)
    deleted = client.delete(KeyPath().add(email, "bo@example.org"))
    assert deleted is not None and deleted.path == group.add(ns, 2)
    assert client.get(group.add(ns, 2)) is None
    assert first.changes_token is not None
    changes = client.changes(open_orders, first.changes_token).changes
    assert changes == [
        DeleteChange(group.add(ns, 1), 1, open_orders.add(ns, 1)),
        DeleteChange(group.add(ns, 2), 1, open_orders.add(ns, 2)),
    ]
    client.put(group.add(ns, 4), {"status": "open"})
    fed = client.changes(open_orders, first.changes_token).changes[-1]
    assert isinstance(fed, PutChange)
    assert (fed.path, fed.item.alias) == (group.add(ns, 4), open_orders.add(ns, 4))


def test_alias_errors(admin: Client, client: Client, group: KeyPath) -> None:
    ns, email = fresh(), fresh("email_")
    admin.put_namespace(ns, aliases=[f"/{email}-{{email}}"])
    admin.wait_for_aliases(ns, timeout=BUILD_SECONDS)
    ann = client.put(group.add(ns, 1), {"email": "ann@example.org"})
    alias = KeyPath().add(email, "ann@example.org")

    with pytest.raises(AliasTaken) as taken:
        client.put(group.add(ns, 2), {"email": "ann@example.org"})
    error = taken.value
    assert isinstance(error, PathDBError)
    assert (error.status, error.code, error.alias, error.holder, error.index) == (
        409,
        "alias_taken",
        alias,
        ann.path,
        None,
    )
    assert client.get(group.add(ns, 2)) is None  # nothing written
    with pytest.raises(AliasTaken) as taken:
        client.transact(
            [Put(group.add("other", 1), {}), Put(group.add(ns, 3), {"email": "ann@example.org"})]
        )
    assert (taken.value.index, taken.value.holder) == (1, ann.path)
    assert client.get(group.add("other", 1)) is None  # none of the others either

    with pytest.raises(PathIsAlias) as is_alias:
        client.put(alias, {"email": "ann@example.org"})
    assert (is_alias.value.status, is_alias.value.code) == (409, "path_is_alias")
    assert (is_alias.value.path, is_alias.value.item) == (alias, ann.path)

    with pytest.raises(AliasInvalid) as invalid:
        client.put(group.add(ns, 4), {"email": True})
    assert (invalid.value.status, invalid.value.code) == (422, "alias_invalid")
    assert (invalid.value.path, invalid.value.member, invalid.value.index) == (
        group.add(ns, 4),
        "email",
        None,
    )
    with pytest.raises(AliasInvalid) as invalid:
        client.transact([Put(group.add(ns, 5), {"email": 1.5})])
    assert invalid.value.index == 0
    assert client.get(group.add(ns, 4)) is None and client.get(group.add(ns, 5)) is None

    # Invalid templates: refused by the dry run as by the PUT.
    with pytest.raises(InvalidRequest) as refused:
        admin.check_namespace(fresh(), aliases=["/email-fixed"])
    assert (refused.value.status, refused.value.code) == (400, "invalid_request")
    with pytest.raises(InvalidRequest):
        admin.put_namespace(fresh(), aliases=["email-{email}"])
    with pytest.raises(TypeError):
        admin.put_namespace(fresh(), aliases=[{"template": "/e-{email}"}])


def test_a_build_in_conflict_and_its_retry(admin: Client, client: Client, group: KeyPath) -> None:
    ns, email = fresh(), fresh("email_")
    template = f"/{email}-{{email}}"
    client.put(group.add(ns, 1), {"email": "same@example.org"})
    client.put(group.add(ns, 2), {"email": "same@example.org"})
    client.put(group.add(ns, 3), {"email": "other@example.org"})
    admin.put_namespace(ns, aliases=[template])
    with pytest.raises(AliasBuilding) as stopped:
        admin.wait_for_aliases(ns, timeout=BUILD_SECONDS, interval=0.1)
    assert (stopped.value.state, stopped.value.template, stopped.value.status) == (
        "conflict",
        template,
        None,
    )
    assert "same@example.org" in str(stopped.value)
    definition = admin.get_namespace(ns)
    assert definition is not None
    [build] = definition.aliases
    assert build.state == "conflict"
    assert build.conflicts == [
        AliasConflict(
            KeyPath().add(email, "same@example.org"), [group.add(ns, 1), group.add(ns, 2)]
        )
    ]

    # A read through the template is answered 503 alias_building, raised at once.
    with pytest.raises(AliasBuilding) as reading:
        client.get(KeyPath().add(email, "other@example.org"))
    assert isinstance(reading.value, Unavailable)
    assert (
        reading.value.status,
        reading.value.code,
        reading.value.template,
        reading.value.state,
    ) == (
        503,
        "alias_building",
        template,
        "conflict",
    )

    client.merge(group.add(ns, 2), {"email": "two@example.org"})
    retried = admin.retry_alias_build(ns, template)
    assert retried.namespace == ns and retried.aliases[0].state in ("building", "ready")
    ready = admin.wait_for_aliases(ns, timeout=BUILD_SECONDS, interval=0.1)
    assert [(a.path, a.state) for a in ready.aliases] == [(template, "ready")]
    found = client.get(KeyPath().add(email, "same@example.org"))
    assert found is not None and found.path == group.add(ns, 1)

    # A build that is not in conflict is not retried.
    with pytest.raises(InvalidRequest) as not_in_conflict:
        admin.retry_alias_build(ns, template)
    assert (not_in_conflict.value.status, not_in_conflict.value.code) == (400, "invalid_request")
    with pytest.raises(NotFound):
        admin.retry_alias_build(fresh(), template)
    with pytest.raises(NotFound):
        admin.wait_for_aliases(fresh())
    with pytest.raises(ValueError):
        admin.wait_for_aliases(ns, interval=0)

    # A template removed is gone for reads at once; its aliases are deleted after.
    removed = admin.put_namespace(ns)
    assert removed.templates == []
    assert [a.state for a in removed.aliases] in ([], ["removing"])
    assert admin.wait_for_aliases(ns).templates == []
    assert client.get(KeyPath().add(email, "same@example.org")) is None


def test_async_aliases(server: Server, group: KeyPath) -> None:
    async def main() -> None:
        ns, email = fresh(), fresh("email_")
        template = f"/{email}-{{email}}"
        async with AsyncClient(server.url, token=ADMIN_TOKEN) as admin, AsyncClient(
            server.url, token=TOKEN
        ) as c:
            await c.put(group.add(ns, 1), {"email": "same@example.org"})
            await c.put(group.add(ns, 2), {"email": "same@example.org"})
            defined = await admin.put_namespace(ns, aliases=[template], must_not_exist=True)
            assert defined.templates == [template]
            with pytest.raises(AliasBuilding) as stopped:
                await admin.wait_for_aliases(ns, timeout=BUILD_SECONDS, interval=0.1)
            assert stopped.value.state == "conflict"
            await c.delete(group.add(ns, 2))
            await admin.retry_alias_build(ns, template)
            ready = await admin.wait_for_aliases(ns, timeout=BUILD_SECONDS, interval=0.1)
            assert ready.aliases[0].state == "ready"
            got = await c.get(KeyPath().add(email, "same@example.org"))
            assert got is not None and (got.path, got.alias) == (
                group.add(ns, 1),
                KeyPath().add(email, "same@example.org"),
            )
            with pytest.raises(InvalidRequest):
                await admin.retry_alias_build(ns, template)
            with pytest.raises(InvalidRequest):
                await admin.check_namespace(ns, aliases=[f"/{email}-x"])
            with pytest.raises(AliasTaken):
                await c.put(group.add(ns, 3), {"email": "same@example.org"})

    asyncio.run(main())


def scripted(answers: List[httpx.Response], calls: List[httpx.Request]) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return answers.pop(0)

    return httpx.MockTransport(handler)


def test_alias_building_is_not_retried_and_definitions_go_on_the_wire() -> None:
    building = {
        "code": "alias_building",
        "message": "alias /e-{email} of namespace u is building: 3 items checked so far",
        "template": "/e-{email}",
        "state": "building",
        "checked": 3,
    }
    definition = {
        "namespace": "u",
        "version": 1,
        "created_at": 0,
        "modified_at": 0,
        "schema": None,
        "history": None,
        "description": None,
        "aliases": [{"path": "/e-{email}", "state": "building", "checked": 3, "written": 2}],
    }
    calls: List[httpx.Request] = []
    answers = [
        httpx.Response(503, json={"error": building}, headers={"Retry-After": "1"}),
        httpx.Response(200, json=definition),
        httpx.Response(200, json=definition),
    ]
    with Client("http://db", backoff=0.001, transport=scripted(answers, calls)) as c:
        with pytest.raises(AliasBuilding) as raised:
            c.get("/e-a")
        assert (raised.value.template, raised.value.state, raised.value.checked) == (
            "/e-{email}",
            "building",
            3,
        )
        stored = c.put_namespace("u", aliases=["/e-{email}", {"path": "/f-{@u}"}])
        assert stored.aliases == [AliasBuild("/e-{email}", "building", 3, 2)]
        with pytest.raises(AliasBuilding) as waited:
            c.wait_for_aliases("u", timeout=0)
        assert (waited.value.state, waited.value.status, waited.value.checked) == (
            "building",
            None,
            3,
        )
    assert len(calls) == 3  # the 503 was not retried
    assert calls[1].content == b'{"aliases":[{"path":"/e-{email}"},{"path":"/f-{@u}"}]}'
    calls.clear()
    answers = [httpx.Response(200, json=definition)] * 2
    with Client("http://db", transport=scripted(answers, calls)) as c:
        c.put_namespace("u", description="no aliases", aliases=[])
        c.retry_alias_build("u", "/e-{email}")
    assert calls[0].content == b'{"description":"no aliases"}'  # an empty list is left out
    assert (calls[1].method, calls[1].url.path) == ("POST", "/v1/namespaces/u/aliases/retry")
    assert calls[1].content == b'{"path":"/e-{email}"}'


def test_error_for_alias_errors() -> None:
    def error(status: int, code: str, index: Any = None, **members: Any) -> PathDBError:
        detail: Dict[str, Any] = {"code": code, "message": f"{code}!", **members}
        return error_for(status, code, f"{code}!", index, detail)

    taken = error(409, "alias_taken", 2, alias="/email-a@x.org", holder="/user-1")
    assert isinstance(taken, AliasTaken)
    assert (taken.alias, taken.holder, taken.index, taken.status) == (
        KeyPath.parse("/email-a@x.org"),
        KeyPath.parse("/user-1"),
        2,
        409,
    )
    assert str(taken) == "alias_taken: alias_taken!"
    is_alias = error(409, "path_is_alias", path="/email-a@x.org", item="/user-1")
    assert isinstance(is_alias, PathIsAlias)
    assert (is_alias.path, is_alias.item) == (
        KeyPath.parse("/email-a@x.org"),
        KeyPath.parse("/user-1"),
    )
    invalid = error(422, "alias_invalid", path="/user-4", member="address.city")
    assert isinstance(invalid, AliasInvalid) and not isinstance(invalid, InvalidRequest)
    assert (invalid.path, invalid.member, invalid.status) == (
        KeyPath.parse("/user-4"),
        "address.city",
        422,
    )
    building = error(503, "alias_building", template="/email-{email}", state="conflict", checked=3)
    assert isinstance(building, AliasBuilding) and isinstance(building, Unavailable)
    assert (building.template, building.state, building.checked) == (
        "/email-{email}",
        "conflict",
        3,
    )
    # Members missing or not what they should be: None, the kind stays.
    bare = error(409, "alias_taken", alias="not a path", holder=7)
    assert isinstance(bare, AliasTaken) and (bare.alias, bare.holder) == (None, None)
    odd = error(503, "alias_building", checked=True, state=1)
    assert isinstance(odd, AliasBuilding) and (odd.template, odd.state, odd.checked) == (
        None,
        None,
        None,
    )
    assert isinstance(error_for(422, "alias_invalid", "no detail"), AliasInvalid)


def test_a_transaction_lists_an_alias_prefix(
    admin: Client, client: Client, group: KeyPath
) -> None:
    """A listing of an alias prefix in a transaction is checked at commit like any other: the
    commit goes through when nothing under the alias prefix changed, and runs again when an
    item entered it meanwhile."""
    ns, status = fresh(), fresh("status_")
    admin.put_namespace(ns, aliases=[f"/{status}-{{status}}/{ns}-{{@{ns}}}"])
    admin.wait_for_aliases(ns, timeout=BUILD_SECONDS)
    client.put(group.add(ns, 1), {"status": "open"})
    open_orders = KeyPath().add(status, "open")
    runs: List[int] = []

    def close_all(tx: Any) -> int:
        listed = list(tx.list(open_orders))
        runs.append(len(listed))
        if len(runs) == 1:
            # Another writer adds an open order after the listing: the commit must see it.
            client.put(group.add(ns, 2), {"status": "open"})
        for item in listed:
            tx.put(item.path, {"status": "closed"})
        return len(listed)

    assert client.transaction(close_all) == 2
    assert runs == [1, 2]
    assert list(client.list(open_orders)) == []
