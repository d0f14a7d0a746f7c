"""Schema versions (docs/migrations.md): `schema_versions=` sends `Schema-Version` on every
request, items say their `schema_version`, the errors of migrations (`UnknownSchemaVersion`,
`MigrationFailed`, `IncompatibleSchema`), and a client of version 1 beside one of version 2
against a real `pathdb serve` (see conftest.py), on a namespace of its own."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any, Dict, List

import httpx
import pytest

from pathdb import (
    AsyncClient,
    Client,
    IncompatibleSchema,
    InvalidRequest,
    KeyPath,
    MigrationFailed,
    NamespaceDefinition,
    PathDBError,
    Put,
    Rewrite,
    SchemaCheck,
    SchemaViolation,
    UnknownSchemaVersion,
)
from pathdb._errors import error_for

from .conftest import TOKEN, Server


def item(path: str, value: Any, schema_version: Any = None) -> Dict[str, Any]:
    out = {"path": path, "version": 1, "created_at": 0, "modified_at": 0, "value": value}
    if schema_version is not None:
        out["schema_version"] = schema_version
    return out


def recording(sent: List[httpx.Request]) -> httpx.MockTransport:
    """A server that records each request and answers as the routes the tests call do."""

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        route = request.url.path
        if route.startswith("/v1/list/"):
            return httpx.Response(200, json={"items": [item("/user-1", {"name": "a"}, 1)]})
        if route == "/v1/transact":
            results = [{"op": "put", "item": item("/user-2", {})}]
            return httpx.Response(200, json={"results": results})
        return httpx.Response(200, json=item("/user-1", {"name": "a"}, 1))

    return httpx.MockTransport(answer)


def test_schema_versions_go_with_every_request() -> None:
    sent: List[httpx.Request] = []
    versions = {"user": 1, "order_2": 3}
    with Client("http://db", schema_versions=versions, transport=recording(sent)) as c:
        assert c.schema_versions == versions
        got = c.get("/user-1")
        assert got is not None and got.schema_version == 1
        c.put("/user-1", {"name": "a"})
        c.merge("/user-1", {"name": "b"})
        assert [i.schema_version for i in c.list("/user-1")] == [1]
        c.transact([Put("/user-2", {})])
    assert len(sent) == 5
    assert {r.headers.get("Schema-Version") for r in sent} == {"user=1, order_2=3"}
    # The client keeps its own copy: changing the mapping later changes nothing.
    versions["user"] = 2
    sent.clear()
    with Client("http://db", transport=recording(sent)) as c:
        assert c.schema_versions == {}
        got = c.get("/user-1")
        assert got is not None
        c.put("/user-1", {})
    assert [r.headers.get("Schema-Version") for r in sent] == [None, None]

    async def run() -> None:
        async with AsyncClient(
            "http://db", schema_versions={"user": 1}, transport=recording(sent)
        ) as c:
            await c.get("/user-1")
            await c.put("/user-1", {"name": "a"})

    sent.clear()
    asyncio.run(run())
    assert [r.headers.get("Schema-Version") for r in sent] == ["user=1", "user=1"]


def test_schema_versions_are_checked() -> None:
    for bad in [{"user-x": 1}, {"": 1}, {"user": 0}, {"user": True}, {"user": "1"}]:
        with pytest.raises(ValueError, match="schema_versions"):
            Client("http://db", schema_versions=bad)  # type: ignore[arg-type]
    with Client("http://db", schema_versions={}) as c:
        assert "Schema-Version" not in c._headers


def test_error_codes_of_migrations() -> None:
    unknown = error_for(400, "unknown_schema_version", "user has no version 7")
    assert isinstance(unknown, UnknownSchemaVersion) and isinstance(unknown, InvalidRequest)
    failed = error_for(422, "migration_failed", "cannot", detail={"path": "/user-9"})
    assert isinstance(failed, MigrationFailed) and isinstance(failed, InvalidRequest)
    assert (failed.status, failed.code) == (422, "migration_failed")
    assert failed.path == KeyPath.parse("/user-9")
    assert error_for(422, "migration_failed", "cannot").path is None  # type: ignore[attr-defined]
    problems = ["/plan is required, and has no default", 3]
    incompatible = error_for(409, "incompatible_schema", "no", detail={"problems": problems})
    assert isinstance(incompatible, IncompatibleSchema)
    assert not isinstance(incompatible, InvalidRequest)
    assert incompatible.problems == ["/plan is required, and has no default"]
    assert (incompatible.status, incompatible.code) == (409, "incompatible_schema")


V1: Dict[str, Any] = {
    "type": "object",
    "required": ["name"],
    "properties": {"name": {"type": "string"}, "status": {"enum": ["new", "shipped"]}},
    "additionalProperties": False,
}
V2: Dict[str, Any] = {
    "type": "object",
    "required": ["full_name", "tier"],
    "properties": {
        "full_name": {"type": "string"},
        "tier": {"type": "string"},
        "status": {"enum": ["new", "sent"]},
    },
    "additionalProperties": False,
}
STEPS = [
    {"op": "rename", "from": "/name", "to": "/full_name"},
    {"op": "add", "path": "/tier", "default": "free"},
    {"op": "rename_value", "path": "/status", "from": "shipped", "to": "sent"},
]


def test_a_version_1_client_beside_a_version_2_one(server: Server, admin: Client) -> None:
    ns = "ns_" + uuid.uuid4().hex[:12]
    admin.put_namespace(ns, schema=V1)
    group = KeyPath().add("t", uuid.uuid4())
    with Client(server.url, TOKEN, schema_versions={ns: 1}) as old:
        first = group.add(ns, 1)
        written = old.put(first, {"name": "Ada", "status": "shipped"})
        assert written.schema_version == 1
        assert admin.put_namespace(ns, schema=V2, migrate=STEPS).version == 2
        with Client(server.url, TOKEN) as new:
            got = new.get(first)
            assert got is not None and got.schema_version == 2
            assert got.value == {"full_name": "Ada", "tier": "free", "status": "sent"}
            # The old client goes on, unchanged: it reads and writes version 1's shape.
            again = old.get(first)
            assert again is not None and again.schema_version == 1
            assert again.value == {"name": "Ada", "status": "shipped"}
            second = group.add(ns, 2)
            assert old.put(second, {"name": "Bob"}).value == {"name": "Bob"}
            old.merge(second, {"status": "shipped"})
            stored = new.get(second)
            assert stored is not None
            assert stored.value == {"full_name": "Bob", "tier": "free", "status": "sent"}
            new.merge(second, {"full_name": "Bobby"})
            assert [i.value["name"] for i in old.list(group)] == ["Ada", "Bobby"]
            assert [i.value["full_name"] for i in new.list(group)] == ["Ada", "Bobby"]
            # A version-1 write with both the old and the new name cannot be brought forward.
            with pytest.raises(MigrationFailed) as failed:
                old.put(group.add(ns, 3), {"name": "a", "full_name": "b"})
            assert failed.value.path == group.add(ns, 3)
            assert new.get(group.add(ns, 3)) is None
    # A version the namespace does not have.
    with Client(server.url, TOKEN, schema_versions={ns: 7}) as lost:
        with pytest.raises(UnknownSchemaVersion) as unknown:
            lost.get(first)
        assert (unknown.value.status, unknown.value.code) == (400, "unknown_schema_version")
    # A version 3 that breaks version 2's clients, not forced: refused, each problem named.
    v3 = dict(V2, required=["full_name", "tier", "plan"])
    v3["properties"] = dict(V2["properties"], plan={"type": "string"})
    with pytest.raises(IncompatibleSchema) as incompatible:
        admin.put_namespace(ns, schema=v3)
    problems = incompatible.value.problems
    assert problems and all(isinstance(p, str) for p in problems)
    assert any("/plan" in p for p in problems)
    assert isinstance(incompatible.value, PathDBError)


def definition(**members: Any) -> Dict[str, Any]:
    """A definition as the server answers it, with `members` added."""
    out: Dict[str, Any] = {
        "namespace": "user",
        "version": 2,
        "created_at": 0,
        "modified_at": 0,
        "schema": None,
        "history": None,
        "description": None,
        "aliases": [],
    }
    out.update(members)
    return out


def test_put_namespace_sends_migrate_formats_changes_and_force() -> None:
    sent: List[httpx.Request] = []
    wire = definition(
        migrate=STEPS,
        formats="assert",
        changes=False,
        rewrite={"to": 2, "checked": 5, "rewritten": 4, "done": False},
    )

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        if request.url.params.get("dry_run") == "true":
            return httpx.Response(
                200, json={"checked": 1, "violating": 0, "first": [], "problems": ["/plan ..."]}
            )
        return httpx.Response(200, json=wire)

    steps = [dict(step) for step in STEPS]
    with Client("http://db", transport=httpx.MockTransport(answer)) as c:
        got = c.put_namespace(
            "user", schema=V2, migrate=steps, formats="assert", changes=False, force=True
        )
        c.put_namespace("user", schema=V2)
        c.put_namespace("user", schema=V2, migrate=[], force=False)  # no steps: left out
        check = c.check_namespace("user", schema=V2, migrate=steps, formats="annotate", changes=False)
        with pytest.raises(TypeError, match="migrat"):
            c.put_namespace("user", migrate=["rename /name"])  # type: ignore[list-item]
        with pytest.raises(TypeError, match="migrate"):
            c.put_namespace("user", migrate={"op": "rename"})  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="changes"):
            c.put_namespace("user", changes="false")  # type: ignore[arg-type]
    assert len(sent) == 4
    bodies = [json.loads(r.content) for r in sent]
    assert bodies[0] == {"schema": V2, "migrate": STEPS, "formats": "assert", "changes": False}
    assert bodies[1] == bodies[2] == {"schema": V2}
    assert bodies[3] == {"schema": V2, "migrate": STEPS, "formats": "annotate", "changes": False}
    assert [dict(r.url.params) for r in sent] == [{"force": "true"}, {}, {}, {"dry_run": "true"}]
    # What the server answers since migrations, read back.
    assert (got.version, got.migrate, got.formats, got.changes) == (2, STEPS, "assert", False)
    assert got.rewrite == Rewrite(to=2, checked=5, rewritten=4, done=False)
    assert check == SchemaCheck(checked=1, violating=0, first=[], problems=["/plan ..."])
    # A server from before migrations leaves them out.
    old = NamespaceDefinition.from_wire(definition())
    assert (old.migrate, old.formats, old.rewrite, old.changes) == ([], None, None, None)
    assert NamespaceDefinition.from_wire(definition(rewrite=None, migrate=None)).rewrite is None
    assert SchemaCheck(checked=0, violating=0, first=[]).problems == []

    async def run() -> None:
        async with AsyncClient("http://db", transport=httpx.MockTransport(answer)) as c:
            await c.put_namespace("user", migrate=STEPS, formats="annotate", changes=False, force=True)
            assert (await c.check_namespace("user", migrate=STEPS)).problems == ["/plan ..."]

    sent.clear()
    asyncio.run(run())
    assert [json.loads(r.content) for r in sent] == [
        {"migrate": STEPS, "formats": "annotate", "changes": False},
        {"migrate": STEPS},
    ]
    assert [dict(r.url.params) for r in sent] == [{"force": "true"}, {"dry_run": "true"}]


def test_migrate_and_force(server: Server, admin: Client) -> None:
    ns = "ns_" + uuid.uuid4().hex[:12]
    v1 = admin.put_namespace(ns, schema=V1)
    assert (v1.version, v1.migrate, v1.formats) == (1, [], None)
    group = KeyPath().add("t", uuid.uuid4())
    path = group.add(ns, 1)
    with Client(server.url, TOKEN) as writer:
        assert writer.put(path, {"name": "Ada", "status": "new"}).schema_version == 1
    rename = [{"op": "rename", "from": "/name", "to": "/full_name"}]
    v2_schema = dict(V1, required=["full_name"])
    v2_schema["properties"] = {
        "full_name": {"type": "string"},
        "status": V1["properties"]["status"],
    }
    v2 = admin.put_namespace(ns, schema=v2_schema, migrate=rename, if_version=1)
    assert (v2.version, v2.migrate) == (2, rename)
    stored = admin.get_namespace(ns)
    assert stored is not None and stored.version == 2 and stored.migrate == rename
    assert stored.rewrite is not None and stored.rewrite.to == 2
    # The item written in version 1, read in both versions.
    with Client(server.url, TOKEN, schema_versions={ns: 1}) as old, Client(
        server.url, TOKEN, schema_versions={ns: 2}
    ) as new:
        in_1 = old.get(path)
        assert in_1 is not None and (in_1.value, in_1.schema_version) == (
            {"name": "Ada", "status": "new"},
            1,
        )
        in_2 = new.get(path)
        assert in_2 is not None and (in_2.value, in_2.schema_version) == (
            {"full_name": "Ada", "status": "new"},
            2,
        )
    # A new required member without an `add` step: incompatible, each problem named, in the dry
    # run too (which stores nothing either way).
    v3_schema = dict(v2_schema, required=["full_name", "plan"])
    v3_schema["properties"] = dict(v2_schema["properties"], plan={"type": "string"})
    check = admin.check_namespace(ns, schema=v3_schema)
    assert (check.checked, check.violating) == (1, 1)
    assert any("/plan" in p for p in check.problems), check.problems
    with pytest.raises(IncompatibleSchema) as incompatible:
        admin.put_namespace(ns, schema=v3_schema)
    assert (incompatible.value.status, incompatible.value.code) == (409, "incompatible_schema")
    assert incompatible.value.problems == check.problems
    unchanged = admin.get_namespace(ns)
    assert unchanged is not None and unchanged.version == 2
    # `force` stores it all the same.
    forced = admin.put_namespace(ns, schema=v3_schema, force=True)
    assert (forced.version, forced.schema, forced.migrate) == (3, v3_schema, [])
    # An invalid step is the caller's mistake.
    with pytest.raises(InvalidRequest) as invalid:
        admin.put_namespace(ns, schema=v3_schema, migrate=[{"op": "frob", "path": "/plan"}])
    assert (invalid.value.status, invalid.value.code) == (400, "invalid_request")


def test_formats(admin: Client, client: Client, group: KeyPath) -> None:
    ns = "ns_" + uuid.uuid4().hex[:12]
    mail: Dict[str, Any] = {"properties": {"mail": {"type": "string", "format": "email"}}}
    annotated = admin.put_namespace(ns, schema=mail)
    assert annotated.formats is None
    client.put(group.add(ns, 1), {"mail": "notanemail"})  # 2020-12: an annotation
    asserted = admin.put_namespace(ns, schema=mail, formats="assert")
    assert asserted.formats == "assert"
    fetched = admin.get_namespace(ns)
    assert fetched is not None and fetched.formats == "assert"
    assert admin.check_namespace(ns, schema=mail, formats="assert").violating == 1
    assert admin.check_namespace(ns, schema=mail, formats="annotate").violating == 0
    with pytest.raises(SchemaViolation):
        client.put(group.add(ns, 2), {"mail": "notanemail"})
    client.put(group.add(ns, 2), {"mail": "ada@example.com"})
    with pytest.raises(InvalidRequest):
        admin.put_namespace(ns, schema=mail, formats="frob")  # type: ignore[arg-type]
