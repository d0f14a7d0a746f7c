/**
 * Namespace definitions and `SchemaViolation` against a real `pathdb serve`. Definitions apply to
 * the whole database, so each test defines namespaces of its own names (`ns_<random>`).
 */

import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";

import {
  Client,
  ConditionFailed,
  Create,
  Forbidden,
  InvalidRequest,
  KeyPath,
  PathDBError,
  Put,
  SchemaViolation,
  type Item,
  type Schema,
} from "../src/index.js";
import { errorFor } from "../src/errors.js";
import { ADMIN_TOKEN, TOKEN, startServer, type Server } from "./server.js";
import { collect, group, rejects } from "./helpers.js";

let server: Server;
let db: Client;
let admin: Client;

before(async () => {
  server = await startServer();
  db = new Client(server.url, { token: TOKEN });
  admin = new Client(server.url, { token: ADMIN_TOKEN });
});
after(async () => {
  await server?.stop();
});

const AGE: Schema = {
  type: "object",
  properties: { name: { type: "string" }, age: { type: "integer", minimum: 0 } },
  required: ["name"],
};

interface Person {
  name: string;
  age?: number;
}

/** A namespace no other test uses. */
const fresh = () => "ns_" + randomUUID().replaceAll("-", "").slice(0, 12);

describe("namespace definitions", () => {
  test("put, get, list, delete", async () => {
    const ns = fresh();
    assert.equal(await admin.getNamespace(ns), null);
    const created = await admin.putNamespace(ns, { schema: AGE, history: 3, description: "people" });
    assert.deepEqual(
      [created.namespace, created.version, created.schema, created.history, created.description],
      [ns, 1, AGE, 3, "people"],
    );
    assert.equal(created.createdAtMicros, created.modifiedAtMicros);
    assert.deepEqual(await admin.getNamespace(ns), created);
    // A PUT replaces the whole definition: what it leaves out is gone.
    const replaced = await admin.putNamespace(ns, { description: "people, any shape" });
    assert.deepEqual([replaced.version, replaced.schema, replaced.history], [2, null, null]);
    assert.equal(replaced.createdAtMicros, created.createdAtMicros);
    const listed = (await collect(admin.listNamespaces())).filter((d) => d.namespace === ns);
    assert.deepEqual(listed, [replaced]);
    assert.equal(await admin.deleteNamespace(ns), true);
    assert.equal(await admin.getNamespace(ns), null);
    assert.equal(await admin.deleteNamespace(ns), false);
  });

  test("conditions", async () => {
    const ns = fresh();
    const first = await admin.putNamespace(ns, { schema: AGE, mustNotExist: true });
    assert.equal((await rejects(admin.putNamespace(ns, { schema: true, mustNotExist: true }), ConditionFailed)).status, 412);
    await rejects(admin.putNamespace(ns, { schema: true, ifVersion: first.version + 1 }), ConditionFailed);
    // From AGE to `true` (any value): a change no stored item or older client can break.
    assert.equal((await admin.putNamespace(ns, { schema: true, ifVersion: first.version })).version, 2);
    await rejects(admin.deleteNamespace(ns, { ifVersion: 1 }), ConditionFailed);
    assert.equal(await admin.deleteNamespace(ns, { ifVersion: 2 }), true);
    await assert.rejects(admin.putNamespace(ns, { mustNotExist: true, ifVersion: 1 }), TypeError);
  });

  test("pages in name order", async () => {
    const names = [fresh(), fresh(), fresh()].sort();
    for (const name of [...names].reverse()) await admin.putNamespace(name, { description: name });
    const page = await admin.listNamespacesPage({ pageSize: 1 });
    assert.equal(page.namespaces.length, 1);
    assert.notEqual(page.nextPageToken, null);
    const every = (await collect(admin.listNamespaces({ pageSize: 2 }))).map((d) => d.namespace);
    assert.deepEqual(every, [...every].sort());
    assert.deepEqual(
      every.filter((n) => names.includes(n)),
      names,
    );
    assert.equal((await collect(admin.listNamespaces({ limit: 2, pageSize: 1 }))).length, 2);
    for (const name of names) await admin.deleteNamespace(name);
  });

  test("changing one needs the admin scope", async () => {
    const forbidden = await rejects(db.putNamespace(fresh(), { schema: AGE }), Forbidden);
    assert.deepEqual([forbidden.status, forbidden.code], [403, "forbidden"]);
    await rejects(db.checkNamespace(fresh(), { schema: AGE }), Forbidden); // a dry run is a PUT too
    assert.equal(await db.getNamespace(fresh()), null); // reading needs only read
  });

  test("an invalid schema", async () => {
    const ns = fresh();
    const invalid = await rejects(admin.putNamespace(ns, { schema: { type: "frob" } }), InvalidRequest);
    assert.deepEqual([invalid.status, invalid.code], [400, "invalid_schema"]);
    const remote = await rejects(admin.putNamespace(ns, { schema: { $ref: "http://example.com/schema.json" } }), InvalidRequest);
    assert.equal(remote.code, "invalid_schema");
    assert.equal(await admin.getNamespace(ns), null);
    await assert.rejects(admin.putNamespace("not-a-namespace"), /namespace/); // refused before sending
  });
});

describe("SchemaViolation", () => {
  test("a put, a patch and a create that do not fit write nothing", async () => {
    const ns = fresh();
    await admin.putNamespace(ns, { schema: AGE });
    const path = group().add(ns, 1);
    const error = await rejects(db.put(path, { name: "ann", age: "old" }), SchemaViolation);
    assert.ok(error instanceof PathDBError);
    assert.deepEqual([error.status, error.code, error.index, error.line], [422, "schema_violation", undefined, undefined]);
    assert.ok(error.path?.equals(path));
    assert.equal(error.violations.length, 1);
    assert.deepEqual([error.violations[0]?.instancePath, error.violations[0]?.schemaPath], ["/age", "/properties/age/type"]);
    assert.match(error.violations[0]?.message ?? "", /integer/);
    assert.equal(await db.get(path), null);
    const item: Item<Person> = await db.put<Person>(path, { name: "ann", age: 3 });
    assert.deepEqual(item.value, { name: "ann", age: 3 });
    // A patch's result is what is checked.
    const merged = await rejects(db.merge(path, { name: null }), SchemaViolation);
    assert.deepEqual(
      merged.violations.map((v) => v.instancePath),
      [""],
    );
    await rejects(db.patch(path, [{ op: "replace", path: "/age", value: -1 }]), SchemaViolation);
    await rejects(db.create(path.parent, ns, { age: 1 }), SchemaViolation);
    assert.equal((await db.get<Person>(path))?.version, 1);
  });

  test("in a transaction: its index, and none of the others written", async () => {
    const ns = fresh();
    await admin.putNamespace(ns, { schema: AGE });
    const g = group();
    const error = await rejects(
      db.transact([new Put(g.add("other", 1), { any: "thing" }), new Create(g, ns, { name: "bo" }), new Put(g.add(ns, 2), { name: 7 })]),
      SchemaViolation,
    );
    assert.equal(error.index, 2);
    assert.ok(error.path?.equals(g.add(ns, 2)));
    assert.deepEqual(
      error.violations.map((v) => v.instancePath),
      ["/name"],
    );
    assert.equal(await db.get(g.add("other", 1)), null);
    const again = await rejects(
      db.transaction((tx) => {
        tx.put(g.add(ns, 3), { name: ["not", "a", "string"] });
      }),
      SchemaViolation,
    );
    assert.equal(again.index, 0);
  });

  test("errorFor reads a violation's members", () => {
    const error = errorFor(422, "schema_violation", "line 3: does not fit", undefined, {
      path: "/a-1/b-2",
      line: 3,
      violations: [{ instance_path: "", schema_path: "/type", message: "1 is not of type object" }, "not a violation"],
    });
    assert.ok(error instanceof SchemaViolation);
    assert.equal(error.line, 3);
    assert.equal(error.index, undefined);
    assert.ok(error.path?.equals(KeyPath.parse("/a-1/b-2")));
    assert.deepEqual(error.violations[0], { instancePath: "", schemaPath: "/type", message: "1 is not of type object" });
    const bare = errorFor(422, "schema_violation", "no detail");
    assert.ok(bare instanceof SchemaViolation);
    assert.deepEqual(bare.violations, []);
    assert.equal(bare.path, undefined);
    assert.equal(errorFor(422, "invalid_request", "x").constructor, InvalidRequest);
  });
});

describe("schemas and stored items", () => {
  test("a dry run, then the violations", async () => {
    const ns = fresh();
    const g = group();
    const values = [{ name: "a" }, { age: 1 }, { name: "c", age: -1 }, { name: "d" }];
    for (const [n, value] of values.entries()) await db.put(g.add(ns, n), value);
    const report = await admin.checkNamespace(ns, { schema: AGE });
    assert.deepEqual([report.checked, report.violating], [4, 2]);
    assert.deepEqual(
      report.first.map((v) => v.path.toString()),
      [g.add(ns, 1).toString(), g.add(ns, 2).toString()],
    );
    assert.equal(report.first[0]?.violations[0]?.schemaPath, "/required");
    assert.equal(await admin.getNamespace(ns), null); // a dry run stores nothing
    await admin.putNamespace(ns, { schema: AGE });
    const violating = await collect(db.namespaceViolations(ns, { pageSize: 1 }));
    assert.deepEqual(
      violating.map((v) => [v.path.toString(), v.version]),
      [
        [g.add(ns, 1).toString(), 1],
        [g.add(ns, 2).toString(), 1],
      ],
    );
    assert.equal(violating[1]?.violations[0]?.instancePath, "/age");
    assert.equal((await collect(db.namespaceViolations(ns, { limit: 1 }))).length, 1);
    const page = await db.namespaceViolationsPage(ns, { pageSize: 1000 });
    assert.deepEqual(
      page.items.map((v) => v.path.toString()),
      violating.map((v) => v.path.toString()),
    );
    assert.ok(page.checked >= 4);
    assert.equal(page.nextPageToken, null);
  });
});
