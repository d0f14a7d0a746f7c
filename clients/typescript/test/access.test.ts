/**
 * Roles, issued tokens, the session and the refusals (`Forbidden`, `Unauthorized`) against a real
 * `pathdb serve` (started with an admin token, `ADMIN_TOKEN`). Roles apply to the whole database,
 * so the tests other than the first (which is about `member`) use roles of their own names.
 */

import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";

import {
  BuiltinRole,
  Client,
  ConditionFailed,
  Forbidden,
  InvalidRequest,
  InvalidRole,
  KeyPath,
  PathDBError,
  Unauthorized,
  UnknownRole,
  type Rule,
} from "../src/index.js";
import { errorFor } from "../src/errors.js";
import { ADMIN_TOKEN, TOKEN, startServer, type Server } from "./server.js";
import { rejects } from "./helpers.js";

let server: Server;
let admin: Client;
let db: Client;

before(async () => {
  server = await startServer();
  admin = new Client(server.url, { token: ADMIN_TOKEN });
  db = new Client(server.url, { token: TOKEN });
});
after(async () => {
  await server?.stop();
});

const TEAM_RULES: Rule[] = [{ path: "/team-{team}/**", allow: ["read", "write"] }];

/** A role name no other test uses. */
const fresh = () => "r_" + randomUUID().replaceAll("-", "").slice(0, 12);

describe("roles and tokens", () => {
  test("a member token reaches its team only, until revoked", async () => {
    const role = await admin.putRole("member", TEAM_RULES, { description: "A team's member." });
    assert.deepEqual([role.name, role.version, role.builtin, role.description], ["member", 1, false, "A team's member."]);
    assert.deepEqual(role.rules, TEAM_RULES);
    assert.equal(role.createdAtMicros, role.modifiedAtMicros);
    assert.deepEqual(await admin.getRole("member"), role);
    assert.deepEqual((await admin.listRoles()).find((r) => r.name === "member"), role);

    const issued = await admin.createToken("member", { vars: { team: 7 }, description: "team 7's robot" });
    assert.ok(issued.token.startsWith(`pdb_${issued.id}_`));
    assert.deepEqual([issued.role, issued.vars, issued.description], ["member", { team: 7 }, "team 7's robot"]);
    assert.deepEqual([issued.expiresAt, issued.lastUsedAt, issued.lastUsedAtMicros], [null, null, null]);

    const member = new Client(server.url, { token: issued.token });
    const doc = await member.put("/team-7/doc-1", { title: "ours" });
    assert.deepEqual(await member.get("/team-7/doc-1"), doc);
    let refused = await rejects(member.put("/team-8/doc-1", { title: "theirs" }), Forbidden);
    assert.deepEqual([refused.status, refused.code, refused.operation], [403, "forbidden", "write"]);
    assert.ok(refused.path?.equals(KeyPath.parse("/team-8/doc-1")));
    refused = await rejects(member.get("/team-8/doc-1"), Forbidden);
    assert.deepEqual([refused.operation, refused.path?.toString()], ["read", "/team-8/doc-1"]);
    refused = await rejects(member.listTokens(), Forbidden); // administering: the whole database, no path
    assert.deepEqual([refused.operation, refused.path], ["admin", undefined]);

    const session = await member.session();
    assert.deepEqual([session.role, session.via, session.scope, session.authRequired], ["member", "token", "custom", true]);
    assert.deepEqual([session.vars, session.tokenId, session.admin, session.rules], [{ team: 7 }, issued.id, false, TEAM_RULES]);

    const listed = (await admin.listTokens()).filter((t) => t.id === issued.id);
    assert.equal(listed.length, 1);
    const info = listed[0]!;
    assert.ok(!("token" in info)); // no secret
    assert.ok(!JSON.stringify(await admin.listTokens()).includes(issued.token));
    assert.deepEqual([info.role, info.vars, info.createdAtMicros], ["member", { team: 7 }, issued.createdAtMicros]);
    assert.ok(info.lastUsedAtMicros !== null && info.lastUsedAtMicros <= Date.now() * 1000); // presented, to the minute
    assert.deepEqual(await admin.getToken(issued.id), info);

    assert.equal(await admin.revokeToken(issued.id), true);
    const unauthorized = await rejects(member.get("/team-7/doc-1"), Unauthorized);
    assert.deepEqual([unauthorized.status, unauthorized.code, unauthorized.reason], [401, "unauthorized", "unknown_token"]);
    assert.equal(await admin.revokeToken(issued.id), false);
    assert.equal(await admin.getToken(issued.id), null);
    assert.ok(!(await admin.listTokens()).some((t) => t.id === issued.id));
  });

  test("putRole and deleteRole take conditions", async () => {
    const name = fresh();
    assert.equal(await admin.getRole(name), null);
    const first = await admin.putRole(name, [{ path: "/public-1/**", allow: ["read"] }], { mustNotExist: true });
    await rejects(admin.putRole(name, TEAM_RULES, { mustNotExist: true }), ConditionFailed);
    const stale = await rejects(admin.putRole(name, TEAM_RULES, { ifVersion: first.version + 1 }), ConditionFailed);
    assert.equal(stale.status, 412);
    const second = await admin.putRole(name, TEAM_RULES, { ifVersion: first.version });
    assert.deepEqual([second.version, second.rules, second.description], [2, TEAM_RULES, null]);
    assert.equal(second.createdAtMicros, first.createdAtMicros);
    assert.deepEqual(await admin.getRole(name), second);
    await rejects(admin.deleteRole(name, { ifVersion: first.version }), ConditionFailed);
    assert.equal(await admin.deleteRole(name, { ifVersion: second.version }), true);
    assert.equal(await admin.deleteRole(name), false);
    assert.equal(await admin.getRole(name), null);
    await assert.rejects(admin.putRole(name, TEAM_RULES, { mustNotExist: true, ifVersion: 1 }), TypeError);
  });

  test("the built-in roles cannot change", async () => {
    const roles = await admin.listRoles();
    for (const name of ["read", "read-write", "admin"]) {
      const role = roles.find((r) => r.name === name);
      assert.ok(role?.builtin && role.version === 0, name);
    }
    assert.deepEqual(
      roles.map((r) => r.name),
      roles.map((r) => r.name).sort(),
    );
    const builtin = await rejects(admin.putRole("admin", [{ path: "/**", allow: ["read"] }]), BuiltinRole);
    assert.deepEqual([builtin.status, builtin.code], [409, "builtin_role"]);
    await rejects(admin.deleteRole("read"), BuiltinRole);
    assert.deepEqual(await admin.getRole("read"), roles.find((r) => r.name === "read"));
  });

  test("invalid and unknown roles", async () => {
    const name = fresh();
    const invalid = await rejects(admin.putRole(name, [{ path: "/team-{team}/**", allow: ["admin"] }]), InvalidRole);
    assert.deepEqual([invalid.status, invalid.code], [422, "invalid_role"]);
    assert.ok(invalid.message.includes("/team-{team}/**")); // it names the rule
    assert.ok(invalid instanceof InvalidRequest); // as a 422 was before roles
    assert.equal(await admin.getRole(name), null);
    const unknown = await rejects(admin.createToken(name, { vars: { team: 7 } }), UnknownRole);
    assert.deepEqual([unknown.status, unknown.code], [422, "unknown_role"]);
    assert.ok(unknown instanceof InvalidRequest);
    await assert.rejects(admin.putRole(name, [{ path: "/**", allow: "read" } as unknown as Rule]), TypeError);
    await assert.rejects(admin.getRole("no/slashes"), RangeError);
    await assert.rejects(admin.getRole(""), RangeError);
  });

  test("token expiry and vars", async () => {
    const name = fresh();
    await admin.putRole(name, TEAM_RULES);
    const later = new Date(Date.now() + 86_400_000);
    const issued = await admin.createToken(name, { vars: { team: "a" }, expiresAt: later });
    assert.deepEqual([issued.expiresAt, issued.expiresAtMicros, issued.description], [later, later.getTime() * 1000, null]);
    const info = await admin.getToken(issued.id);
    assert.deepEqual([info?.expiresAt, info?.vars], [later, { team: "a" }]);
    const member = new Client(server.url, { token: issued.token });
    assert.equal((await member.put("/team-a/doc-1", 1)).value, 1);
    await rejects(member.put("/team-7/doc-1", 1), Forbidden);
    await rejects(admin.createToken(name, { vars: { team: [7] } as unknown as Record<string, number> }), InvalidRequest);
    await rejects(admin.createToken(name, { expiresAt: new Date(Date.now() - 86_400_000) }), InvalidRequest);
    assert.ok(await admin.revokeToken(issued.id));
  });

  test("the sessions of configured tokens", async () => {
    let session = await admin.session();
    assert.deepEqual([session.via, session.role, session.scope, session.admin], ["config", "admin", "admin", true]);
    assert.deepEqual([session.tokenId, session.vars, session.authRequired], [null, {}, true]);
    assert.deepEqual(session.rules, [{ path: "/**", allow: ["read", "write", "admin"] }]);
    session = await db.session();
    assert.deepEqual([session.role, session.scope, session.admin], ["read-write", "read-write", false]);
    const refused = await rejects(db.putRole(fresh(), TEAM_RULES), Forbidden); // a read-write token administers nothing
    assert.deepEqual([refused.operation, refused.path], ["admin", undefined]);
    const unauthorized = await rejects(new Client(server.url).session(), Unauthorized);
    assert.equal(unauthorized.reason, "missing");
  });

  test("errorFor reads the refusals' members", () => {
    const forbidden = errorFor(403, "forbidden", "m", undefined, { operation: "write", path: "/team-8/doc-1" });
    assert.ok(forbidden instanceof Forbidden);
    assert.deepEqual([forbidden.operation, forbidden.path?.toString()], ["write", "/team-8/doc-1"]);
    const readOnly = errorFor(403, "read_only", "the database is read-only");
    assert.ok(readOnly instanceof Forbidden && readOnly.operation === undefined && readOnly.path === undefined);
    const expired = errorFor(401, "unauthorized", "m", undefined, { reason: "expired" });
    assert.ok(expired instanceof Unauthorized && expired.reason === "expired");
    assert.equal(errorFor(409, "builtin_role", "m").constructor, BuiltinRole);
    assert.equal(errorFor(422, "unknown_role", "m").constructor, UnknownRole);
    assert.equal(errorFor(422, "invalid_role", "m").constructor, InvalidRole);
    assert.ok(errorFor(409, "builtin_role", "m") instanceof PathDBError);
  });
});
