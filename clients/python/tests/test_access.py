"""Roles, issued tokens, the session and the refusals (`Forbidden`, `Unauthorized`), against a
real `pathdb serve` (see conftest.py: it starts the server with an admin token, `ADMIN_TOKEN`).

Roles apply to the whole database, so the tests other than the first (which is about `member`)
use roles of their own names (`r_<random>`)."""

from __future__ import annotations

import asyncio
import uuid
from datetime import datetime, timedelta, timezone

import pytest

from pathdb import (
    AsyncClient,
    BuiltinRole,
    Client,
    ConditionFailed,
    Forbidden,
    InvalidRequest,
    InvalidRole,
    IssuedToken,
    KeyPath,
    PathDBError,
    Role,
    Rule,
    TokenInfo,
    Unauthorized,
    UnknownRole,
)
from pathdb._errors import error_for

from .conftest import ADMIN_TOKEN, Server

TEAM_RULES = [{"path": "/team-{team}/**", "allow": ["read", "write"]}]


def fresh() -> str:
    """A role name no other test uses."""
    return "r_" + uuid.uuid4().hex[:12]


def test_a_member_token_reaches_its_team_only(server: Server, admin: Client) -> None:
    role = admin.put_role("member", TEAM_RULES, description="A team's member.")
    assert isinstance(role, Role)
    assert (role.name, role.version, role.builtin) == ("member", 1, False)
    assert role.rules == [Rule("/team-{team}/**", ["read", "write"])]
    assert role.description == "A team's member."
    assert role.created_at == role.modified_at
    assert admin.get_role("member") == role
    assert role in admin.list_roles()

    issued = admin.create_token("member", vars={"team": 7}, description="team 7's robot")
    assert isinstance(issued, IssuedToken)
    assert issued.token.startswith(f"pdb_{issued.id}_")
    assert (issued.role, issued.vars, issued.description) == ("member", {"team": 7}, "team 7's robot")
    assert (issued.expires_at, issued.last_used_at) == (None, None)
    assert issued.token not in repr(issued)  # a logged IssuedToken does not leak its secret

    with Client(server.url, token=issued.token) as member:
        doc = member.put("/team-7/doc-1", {"title": "ours"})
        assert member.get("/team-7/doc-1") == doc
        with pytest.raises(Forbidden) as refused:
            member.put("/team-8/doc-1", {"title": "theirs"})
        assert (refused.value.status, refused.value.code) == (403, "forbidden")
        assert refused.value.operation == "write"
        assert refused.value.path == KeyPath.parse("/team-8/doc-1")
        with pytest.raises(Forbidden) as refused:
            member.get("/team-8/doc-1")
        assert (refused.value.operation, str(refused.value.path)) == ("read", "/team-8/doc-1")
        with pytest.raises(Forbidden) as refused:
            member.list_tokens()  # administering: the whole database, no path
        assert (refused.value.operation, refused.value.path) == ("admin", None)

        session = member.session()
        assert (session.role, session.via, session.scope) == ("member", "token", "custom")
        assert (session.vars, session.token_id, session.admin) == ({"team": 7}, issued.id, False)
        assert session.rules == role.rules and session.auth_required

        listed = [t for t in admin.list_tokens() if t.id == issued.id]
        assert len(listed) == 1
        info = listed[0]
        assert type(info) is TokenInfo and not hasattr(info, "token")  # no secret
        assert issued.token not in repr(admin.list_tokens())
        assert (info.role, info.vars, info.created_at) == ("member", {"team": 7}, issued.created_at)
        assert info.last_used_at is not None  # it was presented, to the minute
        assert info.last_used_at <= datetime.now(timezone.utc)
        assert admin.get_token(issued.id) == info

        assert admin.revoke_token(issued.id) is True
        with pytest.raises(Unauthorized) as unauthorized:
            member.get("/team-7/doc-1")
        assert (unauthorized.value.status, unauthorized.value.code) == (401, "unauthorized")
        assert unauthorized.value.reason == "unknown_token"
    assert admin.revoke_token(issued.id) is False
    assert admin.get_token(issued.id) is None
    assert issued.id not in [t.id for t in admin.list_tokens()]


def test_role_conditions_and_deletes(admin: Client) -> None:
    name = fresh()
    assert admin.get_role(name) is None
    first = admin.put_role(name, [Rule("/public-1/**", ["read"])], must_not_exist=True)
    with pytest.raises(ConditionFailed):
        admin.put_role(name, TEAM_RULES, must_not_exist=True)
    with pytest.raises(ConditionFailed) as stale:
        admin.put_role(name, TEAM_RULES, if_version=first.version + 1)
    assert stale.value.status == 412
    second = admin.put_role(name, TEAM_RULES, if_version=first.version)
    assert (second.version, second.description) == (2, None)
    assert second.rules == [Rule("/team-{team}/**", ["read", "write"])]
    assert second.created_at == first.created_at and second.modified_at >= first.modified_at
    assert admin.get_role(name) == second
    with pytest.raises(ConditionFailed):
        admin.delete_role(name, if_version=first.version)
    assert admin.delete_role(name, if_version=second.version) is True
    assert admin.delete_role(name) is False
    assert admin.get_role(name) is None
    with pytest.raises(ValueError):
        admin.put_role(name, TEAM_RULES, must_not_exist=True, if_version=1)


def test_builtin_roles(admin: Client) -> None:
    roles = {r.name: r for r in admin.list_roles()}
    for name in ("read", "read-write", "admin"):
        assert roles[name].builtin and roles[name].version == 0
    assert [r.name for r in admin.list_roles()] == sorted(roles)
    assert admin.get_role("read-write") == roles["read-write"]
    with pytest.raises(BuiltinRole) as builtin:
        admin.put_role("admin", [Rule("/**", ["read"])])
    assert (builtin.value.status, builtin.value.code) == (409, "builtin_role")
    with pytest.raises(BuiltinRole):
        admin.delete_role("read")
    assert admin.get_role("read") == roles["read"]  # unchanged


def test_invalid_and_unknown_roles(admin: Client) -> None:
    name = fresh()
    with pytest.raises(InvalidRole) as invalid:
        admin.put_role(name, [{"path": "/team-{team}/**", "allow": ["admin"]}])
    assert (invalid.value.status, invalid.value.code) == (422, "invalid_role")
    assert "/team-{team}/**" in invalid.value.message  # it names the rule
    assert isinstance(invalid.value, InvalidRequest)  # as a 422 was before roles
    assert admin.get_role(name) is None
    with pytest.raises(UnknownRole) as unknown:
        admin.create_token(name, vars={"team": 7})
    assert (unknown.value.status, unknown.value.code) == (422, "unknown_role")
    assert isinstance(unknown.value, InvalidRequest)
    with pytest.raises(TypeError):
        admin.put_role(name, [{"path": "/**", "allow": "read"}])
    with pytest.raises(ValueError):
        admin.get_role("no/slashes")
    with pytest.raises(ValueError):
        admin.get_role("")


def test_token_expiry_and_bad_vars(server: Server, admin: Client) -> None:
    name = fresh()
    admin.put_role(name, TEAM_RULES)
    later = datetime.now(timezone.utc).replace(microsecond=123456) + timedelta(days=1)
    issued = admin.create_token(name, vars={"team": "a"}, expires_at=later)
    assert issued.expires_at == later and issued.description is None
    info = admin.get_token(issued.id)
    assert info is not None and info.expires_at == later and info.vars == {"team": "a"}
    with Client(server.url, token=issued.token) as member:
        assert member.put("/team-a/doc-1", 1).value == 1
        with pytest.raises(Forbidden):
            member.put("/team-7/doc-1", 1)
    with pytest.raises(InvalidRequest):
        admin.create_token(name, vars={"team": [7]})  # type: ignore[dict-item]
    with pytest.raises(InvalidRequest):
        admin.create_token(name, expires_at=datetime.now(timezone.utc) - timedelta(days=1))
    with pytest.raises(ValueError):
        admin.create_token(name, expires_at=datetime.now())  # naive: which zone?
    assert admin.revoke_token(issued.id)


def test_sessions_of_configured_tokens(server: Server, admin: Client, client: Client) -> None:
    session = admin.session()
    assert (session.via, session.role, session.scope, session.admin) == ("config", "admin", "admin", True)
    assert (session.token_id, session.vars, session.auth_required) == (None, {}, True)
    assert session.rules == [Rule("/**", ["read", "write", "admin"])]
    session = client.session()
    assert (session.role, session.scope, session.admin) == ("read-write", "read-write", False)
    with pytest.raises(Forbidden) as refused:
        client.put_role(fresh(), TEAM_RULES)  # a read-write token administers nothing
    assert (refused.value.operation, refused.value.path) == ("admin", None)
    with Client(server.url) as anonymous, pytest.raises(Unauthorized) as unauthorized:
        anonymous.session()
    assert unauthorized.value.reason == "missing"


def test_async_roles_and_tokens(server: Server) -> None:
    async def main() -> None:
        name = fresh()
        async with AsyncClient(server.url, token=ADMIN_TOKEN) as admin:
            role = await admin.put_role(name, TEAM_RULES, description="async")
            assert await admin.get_role(name) == role and role in await admin.list_roles()
            issued = await admin.create_token(name, vars={"team": 70})
            async with AsyncClient(server.url, token=issued.token) as member:
                await member.put("/team-70/doc-1", {})
                with pytest.raises(Forbidden):
                    await member.get("/team-71/doc-1")
                assert (await member.session()).token_id == issued.id
                assert await admin.get_token(issued.id) in await admin.list_tokens()
                assert await admin.revoke_token(issued.id)
                with pytest.raises(Unauthorized):
                    await member.session()
            with pytest.raises(BuiltinRole):
                await admin.delete_role("admin")
            assert await admin.delete_role(name)

    asyncio.run(main())


def test_refusals_from_their_wire_shape() -> None:
    detail = {"code": "forbidden", "message": "m", "operation": "write", "path": "/team-8/doc-1"}
    error = error_for(403, "forbidden", "m", None, detail)
    assert isinstance(error, Forbidden)
    assert (error.operation, error.path) == ("write", KeyPath.parse("/team-8/doc-1"))
    read_only = error_for(403, "read_only", "the database is read-only")
    assert isinstance(read_only, Forbidden) and (read_only.operation, read_only.path) == (None, None)
    expired = error_for(401, "unauthorized", "m", None, {"reason": "expired"})
    assert isinstance(expired, Unauthorized) and expired.reason == "expired"
    assert isinstance(error_for(401, "unauthorized", "m"), Unauthorized)
    assert type(error_for(409, "builtin_role", "m")) is BuiltinRole
    assert type(error_for(422, "unknown_role", "m")) is UnknownRole
    assert type(error_for(422, "invalid_role", "m")) is InvalidRole
    assert isinstance(error_for(409, "builtin_role", "m"), PathDBError)
