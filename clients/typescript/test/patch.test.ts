/** Partial updates (`patch`, `merge`, `increment`) and their transaction operations against a real `pathdb serve`. */

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import {
  Client,
  ConditionFailed,
  Conflict,
  Increment,
  InvalidRequest,
  KeyPath,
  Merge,
  NotFound,
  Patch,
  PatchConflict,
  PatchTestFailed,
  PathDBError,
  Put,
  type Op,
  type PatchOperation,
} from "../src/index.js";
import { TOKEN, startServer, type Server } from "./server.js";
import { group, rejects } from "./helpers.js";

let server: Server;
let db: Client;

before(async () => {
  server = await startServer();
  db = new Client(server.url, { token: TOKEN });
});
after(async () => {
  await server?.stop();
});

describe("partial updates", () => {
  test("merge", async () => {
    const path = group().add("post", 1);
    await db.put(path, { title: "draft", tags: { a: 1, b: 2 }, body: "..." });
    const item = await db.merge(path, { title: "final", tags: { b: null, c: 3 }, body: null });
    assert.ok(item.path.equals(path));
    assert.equal(item.version, 2);
    assert.deepEqual(item.value, { title: "final", tags: { a: 1, c: 3 } });
    assert.deepEqual(await db.get(path), item);
    // A document that is not an object replaces the value, null included.
    assert.deepEqual((await db.merge(path, [1, 2])).value, [1, 2]);
    assert.equal((await db.merge(path, null)).value, null);
    const kept = await db.merge(path, { n: 1 }, { history: true, ttlSeconds: 3600 });
    assert.deepEqual(kept.value, { n: 1 });
    assert.notEqual(kept.expiresAt, null);
    assert.deepEqual((await db.history(path)).map((r) => r.version), [kept.version]);
  });

  test("JSON patch", async () => {
    const path = group().add("doc", 1);
    await db.put(path, { title: "a", tags: ["x"], old: 1, meta: { n: 1 } });
    const operations: PatchOperation[] = [
      { op: "test", path: "/title", value: "a" },
      { op: "replace", path: "/title", value: "b" },
      { op: "add", path: "/tags/-", value: "y" },
      { op: "remove", path: "/old" },
      { op: "move", from: "/meta/n", path: "/n" },
      { op: "copy", from: "/tags", path: "/labels" },
      { op: "increment", path: "/n", value: 41 },
    ];
    const item = await db.patch(path.toString(), operations);
    assert.equal(item.version, 2);
    assert.deepEqual(item.value, { title: "b", tags: ["x", "y"], meta: {}, n: 42, labels: ["x", "y"] });
    assert.deepEqual(await db.get(path), item);
  });

  test("increment", async () => {
    const g = group();
    const counter = g.add("counter", 1);
    // create is on by default: a missing counter starts at 0.
    const first = await db.increment<{ views: number }>(counter, "/views");
    assert.deepEqual([first.version, first.value], [1, { views: 1 }]);
    assert.equal(first.createdAtMicros, first.modifiedAtMicros);
    assert.deepEqual((await db.increment(counter, "/views", 41)).value, { views: 42 });
    assert.deepEqual((await db.increment(counter, "/views", -2)).value, { views: 40 });
    assert.deepEqual((await db.increment(counter, "/likes", 0.5)).value, { views: 40, likes: 0.5 });
    const missing = await rejects(db.increment(g.add("counter", 2), "/views", 1, { create: false }), NotFound);
    assert.deepEqual([missing.status, missing.code], [404, "not_found"]);
    assert.equal(await db.get(g.add("counter", 2)), null);
    await assert.rejects(db.increment(counter, "/views", Number.NaN), TypeError);

    await db.merge(counter, { name: "visits" });
    const conflict = await rejects(db.increment(counter, "/name"), PatchConflict);
    assert.deepEqual([conflict.status, conflict.code], [409, "patch_conflict"]);
    await db.put(counter, { n: Number.MAX_SAFE_INTEGER });
    await rejects(db.increment(counter, "/n"), PatchConflict); // past the exact integer range
    assert.deepEqual((await db.get(counter))?.value, { n: Number.MAX_SAFE_INTEGER });
    assert.ok(!(conflict instanceof Conflict)); // not a concurrent write: never retried
  });

  test("a failed test writes nothing", async () => {
    const path = group().add("doc", 1);
    const before = await db.put(path, { state: "open", n: 1 });
    const failed = await rejects(
      db.patch(path, [
        { op: "increment", path: "/n", value: 1 },
        { op: "test", path: "/state", value: "closed" },
      ]),
      PatchTestFailed,
    );
    assert.deepEqual([failed.status, failed.code], [409, "patch_test_failed"]);
    assert.ok(!(failed instanceof ConditionFailed));
    assert.deepEqual(await db.get(path), before);
  });

  test("conditions and create", async () => {
    const g = group();
    const path = g.add("doc", 1);
    await rejects(db.merge(path, { a: 1 }), NotFound);
    await rejects(db.patch(path, [{ op: "add", path: "/a", value: 1 }]), NotFound);
    const created = await db.merge(path, { a: 1 }, { create: true }); // applied to {}
    assert.deepEqual([created.path.toString(), created.version, created.value], [path.toString(), 1, { a: 1 }]);
    assert.equal(created.createdAtMicros, created.modifiedAtMicros);
    const stale = await rejects(db.merge(path, { a: 2 }, { ifVersion: 7 }), ConditionFailed);
    assert.deepEqual([stale.status, stale.code], [412, "condition_failed"]);
    assert.equal((await db.merge(path, { a: 2 }, { ifVersion: 1 })).version, 2);
    await rejects(db.increment(path, "/a", 1, { mustNotExist: true }), ConditionFailed);
    assert.deepEqual((await db.increment(g.add("doc", 2), "/a", 1, { mustNotExist: true })).value, { a: 1 });
    await rejects(db.patch(g.add("doc", 3), [], { ifVersion: 1, create: true }), ConditionFailed);
    await assert.rejects(db.merge(path, {}, { mustNotExist: true, ifVersion: 1 }), TypeError);
    const got = await db.get(path);
    assert.deepEqual([got?.version, got?.value], [2, { a: 2 }]);
  });

  test("invalid patches", async () => {
    const path = group().add("doc", 1);
    await db.put(path, { a: 1 });
    const bad = [{ op: "add", path: "/b", value: 1 }, { op: "frobnicate", path: "/a" }] as unknown as PatchOperation[];
    const invalid = await rejects(db.patch(path, bad), InvalidRequest);
    assert.deepEqual([invalid.status, invalid.code], [400, "invalid_patch"]);
    assert.ok(invalid.message.startsWith("operation 1: "), invalid.message);
    const notANumber = [{ op: "increment", path: "/a", value: "1" }] as unknown as PatchOperation[];
    await rejects(db.patch(path, notANumber), InvalidRequest);
    await rejects(db.patch(path, [{ op: "remove", path: "/missing" }]), PatchConflict);
    const got = await db.get(path);
    assert.deepEqual([got?.version, got?.value], [1, { a: 1 }]);
  });

  test("patches in transactions", async () => {
    const g = group();
    const [a, b, c] = [g.add("doc", 1), g.add("doc", 2), g.add("doc", 3)];
    await db.put(a, { n: 1, tags: ["x"] });
    const results = await db.transact([
      new Patch(a, [{ op: "add", path: "/tags/-", value: "y" }], { ifVersion: 1 }),
      new Put(b, { title: "new" }),
      new Merge(b, { draft: false }), // applies to the value put just before
      new Increment(b, "/views", 2),
      new Increment(c, "/views", 1, { history: true }), // create is on by default
    ]);
    assert.ok(results.every((r) => r !== null));
    assert.deepEqual(results[0]?.value, { n: 1, tags: ["x", "y"] });
    assert.deepEqual(results[3]?.value, { title: "new", draft: false, views: 2 });
    const gotB = await db.get(b);
    assert.deepEqual([gotB?.value, gotB?.version], [results[3]?.value, 1]);
    assert.deepEqual(results[4]?.value, { views: 1 });
    assert.deepEqual((await db.history(c)).map((r) => r.version), [1]);
    assert.deepEqual(new Merge(c, null).toWire(), { op: "patch", path: c.toString(), merge: null });
    assert.ok(new Increment(c, "/n") instanceof Patch);

    // All or nothing: a failed test, a misfit, a missing item or a condition writes nothing.
    const failing: [Op, new (...a: never[]) => PathDBError, number][] = [
      [new Patch(a, [{ op: "test", path: "/n", value: 2 }]), PatchTestFailed, 409],
      [new Increment(a, "/tags"), PatchConflict, 409],
      [new Merge(g.add("doc", 9), { x: 1 }), NotFound, 404],
      [new Merge(a, { x: 1 }, { ifVersion: 1 }), ConditionFailed, 409],
      [new Patch(a, [{ op: "nope" } as unknown as PatchOperation]), InvalidRequest, 400],
    ];
    for (const [op, kind, status] of failing) {
      const error = await rejects(db.transact([new Put(g.add("doc", 4), "untouched"), op]), kind);
      assert.equal(error.status, status);
    }
    assert.equal(await db.get(g.add("doc", 4)), null);
    assert.equal((await db.get(a))?.version, 2);
    const [created] = await db.transact([new Merge(g.add("doc", 5), { a: 1 }, { create: true, ttlSeconds: 60 })]);
    assert.deepEqual(created?.value, { a: 1 });
    assert.notEqual(created?.expiresAt, null);
    assert.throws(() => new Patch(a, [], { mustNotExist: true, ifVersion: 1 }), TypeError);
  });

  test("concurrent increments all count", async () => {
    const counter = group().add("counter", 1);
    const clients = Array.from({ length: 4 }, () => new Client(server.url, { token: TOKEN }));
    await Promise.all(
      clients.map(async (c) => {
        for (let i = 0; i < 25; i++) await c.increment(counter, "/n");
      }),
    );
    const got = await db.get(counter);
    assert.deepEqual([got?.value, got?.version], [{ n: 100 }, 100]);
  });
});

describe("patch requests (scripted fetch)", () => {
  const ITEM = { path: "/a-1", version: 4, created_at: 0, modified_at: 1000, expires_at: null, value: {} };
  const json = (status: number, body: unknown) =>
    new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });
  const error = (status: number, code: string) => json(status, { error: { code, message: `${code}!` } });
  function scripted(answers: Response[], calls: { url: string; init: RequestInit }[]): typeof fetch {
    return (async (url: string | URL | Request, init?: RequestInit) => {
      calls.push({ url: String(url), init: init ?? {} });
      const answer = answers.shift();
      assert.ok(answer, "more requests than scripted answers");
      return answer;
    }) as typeof fetch;
  }
  const headers = (call: { init: RequestInit }) => call.init.headers as Record<string, string>;

  test("carry media types, conditions and options", async () => {
    const calls: { url: string; init: RequestInit }[] = [];
    const c = new Client("http://db", { fetch: scripted([json(200, ITEM), json(201, ITEM), json(201, ITEM)], calls) });
    await c.patch(new KeyPath().add("a", 1).add("s", "x/y"), [{ op: "remove", path: "/x" }], { ifVersion: 3, history: true });
    await c.merge("/a-1", { k: null }, { mustNotExist: true, create: true, ttlSeconds: 5 });
    await c.increment("/a-1", "/n~1m", 7);
    const [patch, merge, increment] = calls;
    assert.deepEqual([patch?.init.method, patch?.url], ["PATCH", "http://db/v1/items/a-1/s-x%25%2Fy?history=true"]);
    assert.equal(headers(patch!)["Content-Type"], "application/json-patch+json");
    assert.equal(headers(patch!)["If-Match"], '"3"');
    assert.deepEqual(JSON.parse(patch!.init.body as string), [{ op: "remove", path: "/x" }]);
    assert.equal(merge?.url, "http://db/v1/items/a-1?create=true&ttl_seconds=5");
    assert.equal(headers(merge!)["Content-Type"], "application/merge-patch+json");
    assert.equal(headers(merge!)["If-None-Match"], "*");
    assert.deepEqual(JSON.parse(merge!.init.body as string), { k: null });
    assert.equal(increment?.url, "http://db/v1/items/a-1?create=true");
    assert.deepEqual(JSON.parse(increment!.init.body as string), [{ op: "increment", path: "/n~1m", value: 7 }]);
  });

  test("errors map, and only concurrent writes are retried", async () => {
    const calls: { url: string; init: RequestInit }[] = [];
    const answers = [
      error(409, "conflict"),
      json(200, ITEM),
      error(409, "patch_conflict"),
      error(409, "patch_test_failed"),
      error(400, "invalid_patch"),
    ];
    const c = new Client("http://db", { backoffMs: 1, fetch: scripted(answers, calls) });
    assert.equal((await c.increment("/a-1", "/n")).version, 4); // a concurrent write: retried
    assert.equal(calls.length, 2);
    await rejects(c.increment("/a-1", "/n"), PatchConflict);
    await rejects(c.patch("/a-1", [{ op: "test", path: "/n", value: 0 }]), PatchTestFailed);
    assert.equal((await rejects(c.merge("/a-1", {}), InvalidRequest)).code, "invalid_patch");
    assert.equal(calls.length, 5);
  });
});
