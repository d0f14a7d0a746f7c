"""Namespace definitions and `SchemaViolation`, against a real `pathdb serve` (see conftest.py).

Definitions apply to the whole database, so each test defines namespaces of its own names
(`ns_<random>`), and no other test writes into them."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any, Dict, List, TypedDict

import pytest

from pathdb import (
    AsyncClient,
    Client,
    ConditionFailed,
    Create,
    Forbidden,
    InvalidRequest,
    Item,
    KeyPath,
    NamespaceDefinition,
    PathDBError,
    Put,
    SchemaViolation,
    Transaction,
    Violation,
)
from pathdb._errors import error_for

from .conftest import ADMIN_TOKEN, TOKEN, Server

AGE: Dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
    "required": ["name"],
}


class Person(TypedDict, total=False):
    name: str
    age: int


def fresh() -> str:
    """A namespace no other test uses."""
    return "ns_" + uuid.uuid4().hex[:12]


def test_put_get_list_delete(admin: Client) -> None:
    ns = fresh()
    assert admin.get_namespace(ns) is None
    created = admin.put_namespace(ns, schema=AGE, history=3, description="people")
    assert isinstance(created, NamespaceDefinition)
    assert (created.namespace, created.version, created.schema) == (ns, 1, AGE)
    assert (created.history, created.description) == (3, "people")
    assert created.created_at == created.modified_at
    assert admin.get_namespace(ns) == created
    # A PUT replaces the whole definition: what it leaves out is gone.
    replaced = admin.put_namespace(ns, description="people, any shape")
    assert (replaced.version, replaced.schema, replaced.history) == (2, None, None)
    assert replaced.created_at == created.created_at and replaced.modified_at >= created.modified_at
    listed = [d for d in admin.list_namespaces() if d.namespace == ns]
    assert listed == [replaced]
    assert admin.delete_namespace(ns) is True
    assert admin.get_namespace(ns) is None
    assert admin.delete_namespace(ns) is False


def test_conditions(admin: Client) -> None:
    ns = fresh()
    first = admin.put_namespace(ns, schema=AGE, must_not_exist=True)
    with pytest.raises(ConditionFailed) as e:
        admin.put_namespace(ns, schema=True, must_not_exist=True)
    assert e.value.status == 412
    with pytest.raises(ConditionFailed):
        admin.put_namespace(ns, schema=True, if_version=first.version + 1)
    # From AGE to `true` (any value): a change no stored item or older client can break.
    second = admin.put_namespace(ns, schema=True, if_version=first.version)
    assert second.version == 2
    with pytest.raises(ConditionFailed):
        admin.delete_namespace(ns, if_version=1)
    assert admin.delete_namespace(ns, if_version=2)
    with pytest.raises(ValueError):
        admin.put_namespace(ns, must_not_exist=True, if_version=1)


def test_list_pages(admin: Client) -> None:
    names = sorted(fresh() for _ in range(3))
    for name in reversed(names):
        admin.put_namespace(name, description=name)
    page = admin.list_namespaces_page(page_size=1)
    assert len(page.namespaces) == 1 and page.next_page_token is not None
    every = [d.namespace for d in admin.list_namespaces(page_size=2)]
    assert every == sorted(every)  # name order, across pages
    assert [n for n in every if n in names] == names
    assert len(list(admin.list_namespaces(limit=2, page_size=1))) == 2
    for name in names:
        admin.delete_namespace(name)


def test_admin_scope(server: Server, client: Client) -> None:
    with pytest.raises(Forbidden) as e:
        client.put_namespace(fresh(), schema=AGE)  # a read-write token
    assert e.value.status == 403 and e.value.code == "forbidden"
    with pytest.raises(Forbidden):
        client.check_namespace(fresh(), schema=AGE)  # a dry run is a PUT too
    assert client.get_namespace(fresh()) is None  # reading needs only read


def test_invalid_schema(admin: Client) -> None:
    ns = fresh()
    with pytest.raises(InvalidRequest) as e:
        admin.put_namespace(ns, schema={"type": "frob"})
    assert (e.value.status, e.value.code) == (400, "invalid_schema")
    with pytest.raises(InvalidRequest) as e:
        admin.put_namespace(ns, schema={"$ref": "http://example.com/schema.json"})
    assert e.value.code == "invalid_schema"
    assert admin.get_namespace(ns) is None
    with pytest.raises(Exception):
        admin.put_namespace("Not-a-namespace")  # refused before sending


def test_schema_violation(admin: Client, client: Client, group: KeyPath) -> None:
    ns = fresh()
    admin.put_namespace(ns, schema=AGE)
    path = group.add(ns, 1)
    with pytest.raises(SchemaViolation) as e:
        client.put(path, {"name": "ann", "age": "old"})
    error = e.value
    assert isinstance(error, PathDBError)
    assert (error.status, error.code, error.path, error.index, error.line) == (
        422,
        "schema_violation",
        path,
        None,
        None,
    )
    assert error.violations == [
        Violation("/age", "/properties/age/type", error.violations[0].message)
    ]
    assert "integer" in error.violations[0].message
    assert client.get(path) is None  # nothing written
    item = client.put(path, Person(name="ann", age=3))
    assert item.value == {"name": "ann", "age": 3}
    # A patch's result is what is checked.
    with pytest.raises(SchemaViolation) as e:
        client.merge(path, {"name": None})
    assert [v.instance_path for v in e.value.violations] == [""]
    with pytest.raises(SchemaViolation):
        client.patch(path, [{"op": "replace", "path": "/age", "value": -1}])
    with pytest.raises(SchemaViolation):
        client.create(group, ns, {"age": 1})
    got = client.get(path)
    assert got is not None and got.version == 1


def test_schema_violation_in_a_transaction(admin: Client, client: Client, group: KeyPath) -> None:
    ns = fresh()
    admin.put_namespace(ns, schema=AGE)
    with pytest.raises(SchemaViolation) as e:
        client.transact(
            [
                Put(group.add("other", 1), {"any": "thing"}),
                Create(group, ns, {"name": "bo"}),
                Put(group.add(ns, 2), {"name": 7}),
            ]
        )
    assert e.value.index == 2 and e.value.path == group.add(ns, 2)
    assert [v.instance_path for v in e.value.violations] == ["/name"]
    assert client.get(group.add("other", 1)) is None  # none of the others either

    def write(tx: Transaction) -> None:
        tx.put(group.add(ns, 3), {"name": ["not", "a", "string"]})

    with pytest.raises(SchemaViolation) as e:
        client.transaction(write)
    assert e.value.index == 0


def test_check_and_violations(admin: Client, client: Client, group: KeyPath) -> None:
    ns = fresh()
    for n, value in enumerate([{"name": "a"}, {"age": 1}, {"name": "c", "age": -1}, {"name": "d"}]):
        client.put(group.add(ns, n), value)
    report = admin.check_namespace(ns, schema=AGE)
    assert (report.checked, report.violating) == (4, 2)
    assert [v.path for v in report.first] == [group.add(ns, 1), group.add(ns, 2)]
    assert report.first[0].violations[0].schema_path == "/required"
    assert admin.get_namespace(ns) is None  # a dry run stores nothing
    admin.put_namespace(ns, schema=AGE)
    violating = list(client.namespace_violations(ns, page_size=1))
    assert [(v.path, v.version) for v in violating] == [(group.add(ns, 1), 1), (group.add(ns, 2), 1)]
    assert violating[1].violations[0].instance_path == "/age"
    assert len(list(client.namespace_violations(ns, limit=1))) == 1
    page = client.namespace_violations_page(ns, page_size=1000)
    assert [v.path for v in page.items] == [v.path for v in violating]
    assert page.checked >= 4 and page.next_page_token is None


def test_typed_reads(client: Client, group: KeyPath) -> None:
    # `value_type` is for type checkers (see the README); at run time the items are the same.
    path = group.add(fresh(), 1)
    written: Item[Person] = client.put(path, Person(name="ann"))
    got = client.get(path, Person)
    assert got == written and got is not None and got.value["name"] == "ann"
    assert client.get_many([path], Person) == [written]
    assert [i.value for i in client.list(group, value_type=Person)] == [{"name": "ann"}]
    assert client.list_page(group, value_type=Person).items == [written]
    assert client.get_version(path, 1, Person) == written
    names: List[str] = [i.value["name"] for i in client.history(path, value_type=Person)]
    assert names == []  # written without history


def test_async_namespaces(server: Server, group: KeyPath) -> None:
    async def main() -> None:
        ns = fresh()
        async with AsyncClient(server.url, token=ADMIN_TOKEN) as admin, AsyncClient(
            server.url, token=TOKEN
        ) as c:
            await c.put(group.add(ns, 1), {"age": 1})
            report = await admin.check_namespace(ns, schema=AGE)
            assert (report.checked, report.violating) == (1, 1)
            created = await admin.put_namespace(ns, schema=AGE, must_not_exist=True)
            assert await admin.get_namespace(ns) == created
            assert ns in [d.namespace async for d in admin.list_namespaces(page_size=2)]
            assert (await admin.list_namespaces_page(page_size=1)).next_page_token is not None
            with pytest.raises(SchemaViolation) as e:
                await c.put(group.add(ns, 2), {"name": 1})
            assert e.value.path == group.add(ns, 2)
            assert [v.path async for v in c.namespace_violations(ns)] == [group.add(ns, 1)]
            page = await c.namespace_violations_page(ns)
            assert [v.version for v in page.items] == [1]
            with pytest.raises(ConditionFailed):
                await admin.delete_namespace(ns, if_version=5)
            assert await admin.delete_namespace(ns) is True
            assert await admin.delete_namespace(ns) is False
            assert await admin.get_namespace(ns) is None

    asyncio.run(main())


def test_error_for_schema_violation() -> None:
    detail: Dict[str, Any] = {
        "code": "schema_violation",
        "message": "line 3: does not fit",
        "path": "/a-1/b-2",
        "line": 3,
        "violations": [
            {"instance_path": "", "schema_path": "/type", "message": "1 is not of type object"},
            "not a violation",
        ],
    }
    error = error_for(422, "schema_violation", "line 3: does not fit", None, detail)
    assert isinstance(error, SchemaViolation)
    assert (error.line, error.index, error.path) == (3, None, KeyPath.parse("/a-1/b-2"))
    assert error.violations == [Violation("", "/type", "1 is not of type object")]
    assert str(error) == "schema_violation: line 3: does not fit"
    bare = error_for(422, "schema_violation", "no detail")
    assert isinstance(bare, SchemaViolation) and bare.violations == [] and bare.path is None
    # Other 422s stay what they were.
    assert type(error_for(422, "invalid_request", "x")) is InvalidRequest
