/**
 * Schema versions (docs/migrations.md): `schemaVersions` sends `Schema-Version` on every request,
 * items say their `schemaVersion`, the errors of migrations (`UnknownSchemaVersion`,
 * `MigrationFailed`, `IncompatibleSchema`), and a client of version 1 beside one of version 2.
 *
 * "schema version requests" runs against scripted answers; "two versions against a server" against a
 * real `pathdb serve`, on a namespace of its own.
 */

import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";

import {
  Client,
  IncompatibleSchema,
  InvalidRequest,
  KeyPath,
  MigrationFailed,
  PathDBError,
  Put,
  SchemaViolation,
  UnknownSchemaVersion,
  type Formats,
  type MigrationStep,
  type Schema,
} from "../src/index.js";
import { errorFor } from "../src/errors.js";
import { ADMIN_TOKEN, TOKEN, startServer, type Server } from "./server.js";
import { collect, group, rejects } from "./helpers.js";

const wireItem = (path: string, value: unknown, schemaVersion?: number) => ({
  path,
  version: 1,
  created_at: 0,
  modified_at: 0,
  expires_at: null,
  value,
  ...(schemaVersion !== undefined && { schema_version: schemaVersion }),
});
const wireDefinition = {
  namespace: "user",
  version: 2,
  created_at: 0,
  modified_at: 0,
  schema: null,
  history: null,
  description: null,
  aliases: [],
};
const json = (status: number, body: unknown) => new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });

/** A `fetch` that records the `Schema-Version` of each request and answers as the routes the tests call do. */
function recording(sent: (string | null)[]): typeof fetch {
  return (async (url: string | URL | Request, init?: RequestInit) => {
    sent.push(new Headers(init?.headers).get("Schema-Version"));
    const path = new URL(String(url)).pathname;
    if (path.startsWith("/v1/list/")) return json(200, { items: [wireItem("/user-1", { name: "a" }, 1)] });
    if (path === "/v1/transact") return json(200, { results: [{ op: "put", item: wireItem("/user-2", {}) }] });
    return json(200, wireItem("/user-1", { name: "a" }, 1));
  }) as typeof fetch;
}

describe("schema version requests", () => {
  test("schemaVersions go with every request", async () => {
    const sent: (string | null)[] = [];
    const versions: Record<string, number> = { user: 1, order_2: 3 };
    const c = new Client("http://db", { schemaVersions: versions, fetch: recording(sent) });
    assert.deepEqual(c.schemaVersions, { user: 1, order_2: 3 });
    const got = await c.get("/user-1");
    assert.equal(got?.schemaVersion, 1);
    await c.put("/user-1", { name: "a" });
    await c.merge("/user-1", { name: "b" });
    assert.deepEqual((await collect(c.list("/user-1"))).map((i) => i.schemaVersion), [1]);
    const [put] = await c.transact([new Put("/user-2", {})]);
    assert.equal(put?.schemaVersion, undefined); // an item without one has none
    assert.deepEqual(sent, Array(5).fill("user=1, order_2=3"));
    // The client keeps its own copy: changing the object later changes nothing.
    versions.user = 2;
    sent.length = 0;
    await c.get("/user-1");
    assert.deepEqual(sent, ["user=1, order_2=3"]);
    sent.length = 0;
    const plain = new Client("http://db", { fetch: recording(sent) });
    assert.deepEqual(plain.schemaVersions, {});
    await plain.get("/user-1");
    await plain.put("/user-1", {});
    assert.deepEqual(sent, [null, null]);
  });

  test("schemaVersions are checked", () => {
    for (const bad of [{ "user-x": 1 }, { "": 1 }, { user: 0 }, { user: 1.5 }, { user: "1" as unknown as number }]) {
      assert.throws(() => new Client("http://db", { schemaVersions: bad }), (e) => e instanceof RangeError && /schemaVersions/.test(e.message));
    }
  });

  test("putNamespace sends migrate, formats, changes and force", async () => {
    const sent: { url: URL; body: unknown }[] = [];
    const wire = {
      ...wireDefinition,
      migrate: STEPS,
      formats: "assert",
      changes: false,
      rewrite: { to: 2, checked: 5, rewritten: 4, done: false },
    };
    const answer = (async (url: string | URL | Request, init?: RequestInit) => {
      const u = new URL(String(url));
      sent.push({ url: u, body: JSON.parse(String(init?.body)) });
      if (u.searchParams.get("dry_run") === "true") return json(200, { checked: 1, violating: 0, first: [], problems: ["/plan ...", 3] });
      return json(200, wire);
    }) as typeof fetch;
    const c = new Client("http://db", { fetch: answer });
    const got = await c.putNamespace("user", { schema: V2, migrate: STEPS, formats: "assert", changes: false, force: true });
    await c.putNamespace("user", { schema: V2 });
    await c.putNamespace("user", { schema: V2, migrate: [], force: false }); // no steps: left out
    const check = await c.checkNamespace("user", { schema: V2, migrate: STEPS, formats: "annotate", changes: false });
    await assert.rejects(c.putNamespace("user", { migrate: ["rename /name" as unknown as MigrationStep] }), TypeError);
    await assert.rejects(c.putNamespace("user", { migrate: { op: "rename" } as unknown as MigrationStep[] }), TypeError);
    await assert.rejects(c.putNamespace("user", { changes: "false" as unknown as boolean }), TypeError);
    assert.deepEqual(
      sent.map((r) => r.body),
      [
        { schema: V2, migrate: STEPS, formats: "assert", changes: false },
        { schema: V2 },
        { schema: V2 },
        { schema: V2, migrate: STEPS, formats: "annotate", changes: false },
      ],
    );
    assert.deepEqual(
      sent.map((r) => r.url.search),
      ["?force=true", "", "", "?dry_run=true"],
    );
    // What the server answers since migrations, read back.
    assert.deepEqual([got.version, got.migrate, got.formats, got.changes], [2, STEPS, "assert", false]);
    assert.deepEqual(got.rewrite, { to: 2, checked: 5, rewritten: 4, done: false });
    assert.deepEqual(check, { checked: 1, violating: 0, first: [], problems: ["/plan ..."] });
    // A server from before migrations leaves them out.
    const older = new Client("http://db", { fetch: (async () => json(200, wireDefinition)) as typeof fetch });
    const old = await older.putNamespace("user", {});
    assert.deepEqual([old.migrate, old.formats, old.rewrite, old.changes], [[], null, null, null]);
    const oldCheck = new Client("http://db", { fetch: (async () => json(200, { checked: 0, violating: 0, first: [] })) as typeof fetch });
    assert.deepEqual((await oldCheck.checkNamespace("user", {})).problems, []);
  });

  test("the error codes of migrations", () => {
    const unknown = errorFor(400, "unknown_schema_version", "user has no version 7");
    assert.ok(unknown instanceof UnknownSchemaVersion && unknown instanceof InvalidRequest);
    assert.equal(unknown.name, "UnknownSchemaVersion");
    const failed = errorFor(422, "migration_failed", "cannot", undefined, { path: "/user-9" });
    assert.ok(failed instanceof MigrationFailed && failed instanceof InvalidRequest);
    assert.deepEqual([failed.status, failed.code, failed.path?.toString(), failed.name], [422, "migration_failed", "/user-9", "MigrationFailed"]);
    assert.equal((errorFor(422, "migration_failed", "cannot") as MigrationFailed).path, undefined);
    const incompatible = errorFor(409, "incompatible_schema", "no", undefined, { problems: ["/plan is required", 3] });
    assert.ok(incompatible instanceof IncompatibleSchema && !(incompatible instanceof InvalidRequest));
    assert.deepEqual([incompatible.status, incompatible.code, incompatible.problems], [409, "incompatible_schema", ["/plan is required"]]);
  });
});

const V1: Schema = {
  type: "object",
  required: ["name"],
  properties: { name: { type: "string" }, status: { enum: ["new", "shipped"] } },
  additionalProperties: false,
};
const V2 = {
  type: "object",
  required: ["full_name", "tier"],
  properties: { full_name: { type: "string" }, tier: { type: "string" }, status: { enum: ["new", "sent"] } },
  additionalProperties: false,
};
const STEPS = [
  { op: "rename", from: "/name", to: "/full_name" },
  { op: "add", path: "/tier", default: "free" },
  { op: "rename_value", path: "/status", from: "shipped", to: "sent" },
];

interface UserV1 {
  name: string;
  status?: "new" | "shipped";
}
interface UserV2 {
  full_name: string;
  tier: string;
  status?: "new" | "sent";
}

describe("two versions against a server", () => {
  let server: Server;
  before(async () => {
    server = await startServer();
  });
  after(async () => {
    await server?.stop();
  });

  test("a version-1 client beside a version-2 one", async () => {
    const ns = "ns_" + randomUUID().replaceAll("-", "").slice(0, 12);
    const admin = new Client(server.url, { token: ADMIN_TOKEN });
    await admin.putNamespace(ns, { schema: V1 });
    const g: KeyPath = group();
    const old = new Client(server.url, { token: TOKEN, schemaVersions: { [ns]: 1 } });
    const first = g.add(ns, 1);
    assert.equal((await old.put<UserV1>(first, { name: "Ada", status: "shipped" })).schemaVersion, 1);
    assert.equal((await admin.putNamespace(ns, { schema: V2, migrate: STEPS })).version, 2);
    const fresh = new Client(server.url, { token: TOKEN });
    const got = await fresh.get<UserV2>(first);
    assert.deepEqual([got?.value, got?.schemaVersion], [{ full_name: "Ada", tier: "free", status: "sent" }, 2]);
    // The old client goes on, unchanged: it reads and writes version 1's shape.
    const again = await old.get<UserV1>(first);
    assert.deepEqual([again?.value, again?.schemaVersion], [{ name: "Ada", status: "shipped" }, 1]);
    const second = g.add(ns, 2);
    assert.deepEqual((await old.put<UserV1>(second, { name: "Bob" })).value, { name: "Bob" });
    await old.merge(second, { status: "shipped" });
    assert.deepEqual((await fresh.get<UserV2>(second))?.value, { full_name: "Bob", tier: "free", status: "sent" });
    await fresh.merge(second, { full_name: "Bobby" });
    assert.deepEqual((await collect(old.list<UserV1>(g))).map((i) => i.value.name), ["Ada", "Bobby"]);
    assert.deepEqual((await collect(fresh.list<UserV2>(g))).map((i) => i.value.full_name), ["Ada", "Bobby"]);
    // A version-1 write with both the old and the new name cannot be brought forward.
    const failed = await rejects(old.put(g.add(ns, 3), { name: "a", full_name: "b" }), MigrationFailed);
    assert.equal(failed.path?.toString(), g.add(ns, 3).toString());
    assert.equal(await fresh.get(g.add(ns, 3)), null);
    // A version the namespace does not have.
    const lost = new Client(server.url, { token: TOKEN, schemaVersions: { [ns]: 7 } });
    const unknown = await rejects(lost.get(first), UnknownSchemaVersion);
    assert.deepEqual([unknown.status, unknown.code], [400, "unknown_schema_version"]);
    // A version 3 that breaks version 2's clients, not forced: refused, each problem named.
    const v3 = { ...V2, required: ["full_name", "tier", "plan"], properties: { ...V2.properties, plan: { type: "string" } } };
    const incompatible = await rejects(admin.putNamespace(ns, { schema: v3 }), IncompatibleSchema);
    assert.ok(incompatible.problems.some((p) => p.includes("/plan")), String(incompatible.problems));
    assert.ok(incompatible instanceof PathDBError);
  });

  test("migrate and force", async () => {
    const ns = "ns_" + randomUUID().replaceAll("-", "").slice(0, 12);
    const admin = new Client(server.url, { token: ADMIN_TOKEN });
    const v1 = await admin.putNamespace(ns, { schema: V1 });
    assert.deepEqual([v1.version, v1.migrate, v1.formats], [1, [], null]);
    const path = group().add(ns, 1);
    const writer = new Client(server.url, { token: TOKEN });
    assert.equal((await writer.put<UserV1>(path, { name: "Ada", status: "new" })).schemaVersion, 1);
    const rename = [{ op: "rename", from: "/name", to: "/full_name" }];
    const v2Schema = { ...V1, required: ["full_name"], properties: { full_name: { type: "string" }, status: { enum: ["new", "shipped"] } } };
    const v2 = await admin.putNamespace(ns, { schema: v2Schema, migrate: rename, ifVersion: 1 });
    assert.deepEqual([v2.version, v2.migrate], [2, rename]);
    const stored = await admin.getNamespace(ns);
    assert.deepEqual([stored?.version, stored?.migrate, stored?.rewrite?.to], [2, rename, 2]);
    // The item written in version 1, read in both versions.
    const old = new Client(server.url, { token: TOKEN, schemaVersions: { [ns]: 1 } });
    const fresh = new Client(server.url, { token: TOKEN, schemaVersions: { [ns]: 2 } });
    const in1 = await old.get(path);
    assert.deepEqual([in1?.value, in1?.schemaVersion], [{ name: "Ada", status: "new" }, 1]);
    const in2 = await fresh.get(path);
    assert.deepEqual([in2?.value, in2?.schemaVersion], [{ full_name: "Ada", status: "new" }, 2]);
    // A new required member without an `add` step: incompatible, each problem named, in the dry
    // run too (which stores nothing either way).
    const v3Schema = { ...v2Schema, required: ["full_name", "plan"], properties: { ...v2Schema.properties, plan: { type: "string" } } };
    const check = await admin.checkNamespace(ns, { schema: v3Schema });
    assert.deepEqual([check.checked, check.violating], [1, 1]);
    assert.ok(check.problems.some((p) => p.includes("/plan")), String(check.problems));
    const incompatible = await rejects(admin.putNamespace(ns, { schema: v3Schema }), IncompatibleSchema);
    assert.deepEqual([incompatible.status, incompatible.code, incompatible.problems], [409, "incompatible_schema", check.problems]);
    assert.equal((await admin.getNamespace(ns))?.version, 2);
    // `force` stores it all the same.
    const forced = await admin.putNamespace(ns, { schema: v3Schema, force: true });
    assert.deepEqual([forced.version, forced.schema, forced.migrate], [3, v3Schema, []]);
    // An invalid step is the caller's mistake.
    const invalid = await rejects(admin.putNamespace(ns, { schema: v3Schema, migrate: [{ op: "frob", path: "/plan" }] }), InvalidRequest);
    assert.deepEqual([invalid.status, invalid.code], [400, "invalid_request"]);
  });

  test("formats", async () => {
    const ns = "ns_" + randomUUID().replaceAll("-", "").slice(0, 12);
    const admin = new Client(server.url, { token: ADMIN_TOKEN });
    const c = new Client(server.url, { token: TOKEN });
    const g = group();
    const mail: Schema = { properties: { mail: { type: "string", format: "email" } } };
    assert.equal((await admin.putNamespace(ns, { schema: mail })).formats, null);
    await c.put(g.add(ns, 1), { mail: "notanemail" }); // 2020-12: an annotation
    assert.equal((await admin.putNamespace(ns, { schema: mail, formats: "assert" })).formats, "assert");
    assert.equal((await admin.getNamespace(ns))?.formats, "assert");
    assert.equal((await admin.checkNamespace(ns, { schema: mail, formats: "assert" })).violating, 1);
    assert.equal((await admin.checkNamespace(ns, { schema: mail, formats: "annotate" })).violating, 0);
    await rejects(c.put(g.add(ns, 2), { mail: "notanemail" }), SchemaViolation);
    await c.put(g.add(ns, 2), { mail: "ada@example.com" });
    await rejects(admin.putNamespace(ns, { schema: mail, formats: "frob" as Formats }), InvalidRequest);
  });
});
