/**
 * Interactive transactions (`Client.transaction`) against a real `pathdb serve`, their requests
 * against scripted answers, the local patch against the server's, and the key order the listing
 * overlay relies on.
 */

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import {
  CheckList,
  Client,
  ConditionFailed,
  Desc,
  InvalidRequest,
  KeyPath,
  NotFound,
  PatchConflict,
  PatchTestFailed,
  PathDBError,
  Transaction,
  Uuid,
  type Entry,
  type Id,
  type Item,
  type PatchOperation,
} from "../src/index.js";
import { TOKEN, startServer, type Server } from "./server.js";
import { collect, group, rejects } from "./helpers.js";

let server: Server;
let db: Client;
let other: Client;

before(async () => {
  server = await startServer();
  db = new Client(server.url, { token: TOKEN });
  other = new Client(server.url, { token: TOKEN });
});
after(async () => {
  await server?.stop();
});

const values = (entries: readonly Entry[]) => entries.map((e) => ("node" in e ? "node" : e.value));

describe("transaction", () => {
  test("reads see the transaction's own writes", async () => {
    const g = group();
    const [a, b, c, missing] = [1, 2, 10, 5].map((i) => g.add("n", i)) as [KeyPath, KeyPath, KeyPath, KeyPath];
    await db.put(a, { n: 1 });
    await db.put(b, { n: 2 });
    await db.put(c, { n: 10 });
    const seen = await db.transaction(async (tx) => {
      const first = await tx.get(a);
      assert.equal(first?.version, 1);
      tx.put(a, { n: 100 });
      const afterPut = await tx.get(a);
      tx.delete(b);
      const deleted = await tx.get(b);
      const absent = await tx.get(missing);
      tx.put(missing, { n: 5 });
      const fresh = await tx.get(missing);
      const merged = await tx.patch(c, { merge: { n: null, m: 1 } });
      const patched = await tx.patch(c, { patch: [{ op: "increment", path: "/m", value: 2 }] });
      return {
        put: [afterPut?.version, afterPut?.value],
        deleted,
        absent,
        fresh: [fresh?.version, fresh?.value],
        merge: [merged.version, merged.value],
        patch: [patched.version, patched.value],
        list: values(await collect(tx.list(g.add("n")))),
        reverse: values((await tx.listPage(g.add("n"), { reverse: true })).items),
        many: (await tx.getMany([c, b, a])).map((i) => i?.value ?? null),
      };
    });
    assert.deepEqual(seen, {
      put: [2, { n: 100 }],
      deleted: null,
      absent: null,
      fresh: [1, { n: 5 }],
      merge: [2, { m: 1 }],
      patch: [2, { m: 3 }], // still one write: the version the commit makes
      list: [{ n: 100 }, { n: 5 }, { m: 3 }],
      reverse: [{ m: 3 }, { n: 5 }, { n: 100 }],
      many: [{ m: 3 }, null, { n: 100 }],
    });
    const listed = (await collect(db.list(g))).map((i) => [i.path.toString(), i.version, i.value]);
    assert.deepEqual(listed, [
      [a.toString(), 2, { n: 100 }],
      [missing.toString(), 1, { n: 5 }],
      [c.toString(), 2, { m: 3 }],
    ]);
  });

  test("pages show each pending write once", async () => {
    const g = group();
    for (let i = 0; i < 20; i += 2) await db.put(g.add("n", i), i);
    const shown = await db.transaction(async (tx) => {
      for (const i of [1, 7, 13, 19, 21]) tx.put(g.add("n", i), i);
      tx.delete(g.add("n", 8));
      const out: unknown[] = [];
      let pageToken: string | null = null;
      do {
        const page: Awaited<ReturnType<Transaction["listPage"]>> = await tx.listPage(g, { pageSize: 3, pageToken });
        out.push(...values(page.items));
        pageToken = page.nextPageToken;
      } while (pageToken !== null);
      return out;
    });
    const expected = [0, 1, 2, 4, 6, 7, 10, 12, 13, 14, 16, 18, 19, 21];
    assert.deepEqual(shown, expected);
    assert.deepEqual((await collect(db.list(g))).map((i) => i.value), expected);
  });

  test("children listings show nodes and respect bounds", async () => {
    const g = group();
    await db.put(g.add("f", 1), "one");
    await db.put(g.add("f", 3).add("x", 1), "below");
    const shown = await db.transaction(async (tx) => {
      tx.put(g.add("f", 2).add("x", 1), "new below");
      tx.put(g.add("f", 4), "four");
      tx.put(g.add("f", 9), "out of bounds");
      tx.delete(g.add("f", 1));
      const entries = await collect(tx.list(g, { children: true, lt: g.add("f", 5) }));
      return entries.map((e) => [e.path.toString(), "node" in e ? "node" : e.value]);
    });
    assert.deepEqual(shown, [
      [g.add("f", 2).toString(), "node"],
      [g.add("f", 3).toString(), "node"],
      [g.add("f", 4).toString(), "four"],
    ]);
  });

  test("a callback that throws writes nothing", async () => {
    const g = group();
    const path = g.add("acct", 1);
    await db.put(path, { balance: 10 });
    class Refused extends Error {}
    await rejects(
      db.transaction(async (tx) => {
        await tx.get(path);
        tx.put(path, { balance: 0 });
        tx.create(g.add("log"), { refused: true });
        throw new Refused();
      }),
      Refused,
    );
    const got = await db.get(path);
    assert.deepEqual([got?.version, got?.value], [1, { balance: 10 }]);
    assert.equal((await collect(db.list(g))).length, 1);
  });

  test("a read changed during the run runs it again", async () => {
    const counter = group().add("counter", 1);
    await db.put(counter, { n: 0 });
    let runs = 0;
    const n = await db.transaction(async (tx) => {
      runs++;
      const item = await tx.get<{ n: number }>(counter);
      if (runs === 1) await other.put(counter, { n: 41 }); // another writer, between the read and the commit
      const next = item!.value.n + 1;
      tx.put(counter, { n: next });
      return next;
    });
    assert.deepEqual([n, runs], [42, 2]);
    const got = await db.get(counter);
    assert.deepEqual([got?.version, got?.value], [3, { n: 42 }]);
  });

  test("a read-only callback checks its reads", async () => {
    const g = group();
    const [a, b] = [g.add("x", 1), g.add("x", 2)];
    await db.put(a, 1);
    let runs = 0;
    const read = await db.transaction(async (tx) => {
      runs++;
      const first = await tx.get(a);
      if (runs === 1) {
        await other.put(b, 2); // b is read as absent next: the two reads do not hold together
        await other.put(a, 10);
      }
      const second = await tx.get(b);
      return [first?.value ?? null, second?.value ?? null];
    });
    assert.deepEqual([read, runs], [[10, 2], 2]);
  });

  test("a listing changed in its range runs it again; one outside does not", async () => {
    const g = group();
    const orders = g.add("order");
    await db.put(g.add("order", 1), { total: 5 });
    await db.put(g.add("profile", 1), { name: "Ada" });
    const addOrder = async (write: () => Promise<unknown>): Promise<number> => {
      let runs = 0;
      const added = await db.transaction(async (tx) => {
        runs++;
        const listed = await collect(tx.list(orders));
        if (runs === 1) await write();
        if (listed.length >= 5) return false;
        tx.create(orders, { total: 1 });
        return true;
      });
      assert.ok(added);
      return runs;
    };
    assert.equal(await addOrder(() => other.put(g.add("profile", 1), { name: "Ada L." })), 1);
    assert.equal(await addOrder(() => other.put(g.add("order", 99), { total: 7 })), 2);
    assert.equal((await collect(db.list(orders))).length, 4);
  });

  test("max attempts exhausted throws ConditionFailed", async () => {
    const path = group().add("hot", 1);
    await db.put(path, 0);
    let runs = 0;
    const failed = await rejects(
      db.transaction(
        async (tx) => {
          runs++;
          const item = await tx.get<number>(path);
          await other.put(path, item!.value + 1); // always changes what was read
          tx.put(path, -1);
        },
        { maxAttempts: 3 },
      ),
      ConditionFailed,
    );
    assert.deepEqual([runs, failed.status, failed.code, failed.index], [3, 409, "condition_failed", 0]);
    assert.equal((await db.get(path))?.value, 3);
    await assert.rejects(db.transaction(() => null, { maxAttempts: 0 }), RangeError);
  });

  test("concurrent transfers keep the sum", async () => {
    const g = group();
    const accounts = Array.from({ length: 6 }, (_, i) => g.add("account", i));
    for (const path of accounts) await db.put(path, { balance: 100 });
    let committed = 0;
    await Promise.all(
      Array.from({ length: 6 }, async () => {
        const client = new Client(server.url, { token: TOKEN });
        for (let n = 0; n < 15; n++) {
          const from = Math.floor(Math.random() * accounts.length);
          const to = (from + 1 + Math.floor(Math.random() * (accounts.length - 1))) % accounts.length;
          const amount = 1 + Math.floor(Math.random() * 60);
          const moved = await client.transaction(async (tx) => {
            const [a, b] = await tx.getMany<{ balance: number }>([accounts[from]!, accounts[to]!]);
            if (a!.value.balance < amount) return false;
            tx.put(a!.path, { balance: a!.value.balance - amount });
            tx.put(b!.path, { balance: b!.value.balance + amount });
            return true;
          });
          if (moved) committed++;
        }
      }),
    );
    const balances = (await db.getMany<{ balance: number }>(accounts)).map((i) => i!.value.balance);
    assert.equal(balances.reduce((x, y) => x + y, 0), 600);
    assert.ok(Math.min(...balances) >= 0 && committed > 0);
  });

  test("creates, and callbacks that read and write nothing", async () => {
    const g = group();
    const [order, newGroup] = await db.transaction((tx) => {
      const handle = tx.create(g.add("order"), { n: 1 }, { id: "sequence" });
      assert.equal(handle.path, null);
      return [handle, tx.create("/tgroup", { new: true })] as const;
    });
    assert.ok(order.path?.equals(g.add("order", 1)));
    assert.deepEqual(order.item?.value, { n: 1 });
    assert.equal(newGroup.path?.elements[0]?.namespace, "tgroup");
    await assert.rejects(db.transaction((tx) => tx.create(g.add("order", 1), {})), TypeError);
    assert.equal(await db.transaction(() => 7), 7); // nothing read or written: nothing sent
  });

  test("a patch of a missing item, and misuse", async () => {
    const g = group();
    const path = g.add("doc", 1);
    await rejects(db.transaction((tx) => tx.patch(path, { merge: { a: 1 } })), NotFound);
    await db.put(path, { a: 1 });
    await db.put(g.add("doc", 2), { a: 2 });
    await rejects(db.transaction((tx) => tx.patch(path, { patch: [{ op: "test", path: "/a", value: 2 }] })), PatchTestFailed);
    assert.equal((await db.get(path))?.version, 1);
    const first = await db.listPage(g, { pageSize: 1 });
    assert.ok(first.nextPageToken !== null);
    // A next page of a listing this transaction did not start.
    await rejects(db.transaction((tx) => tx.listPage(g, { pageSize: 1, pageToken: first.nextPageToken })), InvalidRequest);
    let leaked: Transaction | undefined;
    await db.transaction((tx) => {
      leaked = tx;
    });
    await assert.rejects(leaked!.get(path), /run is over/);
  });
});

/** A `fetch` that answers from `handler` and records each request's path and body. */
function scripted(handler: (path: string, body: unknown) => [number, unknown], calls: { path: string; body: unknown }[]): typeof fetch {
  return async (input, init) => {
    const url = new URL(String(input));
    const body = init?.body ? (JSON.parse(String(init.body)) as unknown) : undefined;
    calls.push({ path: url.pathname, body });
    const [status, answer] = handler(url.pathname, body);
    return new Response(JSON.stringify(answer), { status, headers: { "Content-Type": "application/json" } });
  };
}

const wireItem = (path: string, version: number, value: unknown) => ({ path, version, created_at: 0, modified_at: 0, expires_at: null, value });

describe("transaction requests", () => {
  test("the commit carries every read as a condition", async () => {
    const stored: Record<string, ReturnType<typeof wireItem>> = {
      "/a-1/x-1": wireItem("/a-1/x-1", 3, 1),
      "/a-1/x-3": wireItem("/a-1/x-3", 7, 3),
      "/a-1/o-1": wireItem("/a-1/o-1", 2, "o"),
    };
    const calls: { path: string; body: unknown }[] = [];
    const c = new Client("http://db", {
      fetch: scripted((path, body) => {
        if (path.startsWith("/v1/items/")) {
          const item = stored["/" + path.slice("/v1/items/".length)];
          return item ? [200, item] : [404, { error: { code: "not_found", message: "no" } }];
        }
        if (path === "/v1/get") {
          const asked = (body as { paths: string[] }).paths;
          return [200, { items: asked.flatMap((p) => (stored[p] ? [stored[p]] : [])) }];
        }
        if (path.startsWith("/v1/list/")) return [200, { items: [stored["/a-1/o-1"]], next_page_token: null, changes_token: "T1" }];
        const ops = (body as { ops: unknown[] }).ops;
        return [200, { results: [{ op: "put", item: wireItem("/a-1/c-9", 1, {}) }, ...ops.slice(1).map(() => ({ op: "check" }))] }];
      }, calls),
    });
    await c.transaction(async (tx) => {
      await tx.get("/a-1/x-3"); // read, not written: a check
      await tx.get("/a-1/x-2"); // read as absent: a mustNotExist check
      await tx.getMany(["/a-1/x-1", "/a-1/x-4"]);
      tx.put("/a-1/x-1", "new"); // read at 3
      tx.put("/a-1/x-5", "blind"); // never read: unconditional
      tx.delete("/a-1/x-4"); // read as absent: only a check
      tx.put("/a-1/x-1", "newer"); // the last write wins, in its first place
      await collect(tx.list("/a-1/o", { lte: "/a-1/o-5" }));
      tx.create("/a-1/c", {}, { id: "sequence" });
    });
    assert.equal(await c.transaction(() => null), null); // nothing read or written: no request
    const commits = calls.filter((r) => r.path === "/v1/transact");
    assert.equal(commits.length, 1);
    assert.deepEqual((commits[0]!.body as { ops: unknown[] }).ops, [
      { op: "create", path: "/a-1/c", id: "sequence", value: {} },
      { op: "put", path: "/a-1/x-1", value: "newer", if_version: 3 },
      { op: "put", path: "/a-1/x-5", value: "blind" },
      { op: "check", path: "/a-1/x-4", must_not_exist: true },
      { op: "check", path: "/a-1/x-2", must_not_exist: true },
      { op: "check", path: "/a-1/x-3", if_version: 7 },
      { op: "check_list", prefix: "/a-1/o", changes_token: "T1", lte: "/a-1/o-5", seen: { "/a-1/o-1": 2 } },
    ]);
  });

  test("a failed condition reruns, then throws; other failures throw at once", async () => {
    const calls: { path: string; body: unknown }[] = [];
    let runs = 0;
    const c = new Client("http://db", {
      fetch: scripted(
        (path) =>
          path === "/v1/transact"
            ? [409, { error: { code: "condition_failed", message: "operation 0: x", index: 0 } }]
            : [200, wireItem("/a-1", 1, 0)],
        calls,
      ),
    });
    const failed = await rejects(
      c.transaction(
        async (tx) => {
          runs++;
          await tx.get("/a-1");
          tx.put("/a-1", 1);
        },
        { maxAttempts: 4 },
      ),
      ConditionFailed,
    );
    assert.deepEqual([runs, failed.index], [4, 0]);
    assert.deepEqual(calls.map((r) => r.path), Array(4).fill(["/v1/items/a-1", "/v1/transact"]).flat());
    calls.length = 0;
    const refused = new Client("http://db", { fetch: scripted(() => [400, { error: { code: "invalid_request", message: "too many" } }], calls) });
    await rejects(refused.transaction((tx) => tx.put("/a-1", 1)), InvalidRequest);
    assert.equal(calls.length, 1);
    assert.deepEqual(new CheckList("/a-1/o", "T").toWire(), { op: "check_list", prefix: "/a-1/o", changes_token: "T" });
  });
});

const PATCHES: PatchOperation[][] = [
  [{ op: "add", path: "/tags/-", value: "z" }, { op: "add", path: "/tags/0", value: "first" }],
  [{ op: "remove", path: "/meta/n" }, { op: "replace", path: "/title", value: null }],
  [{ op: "move", from: "/meta", path: "/m" }, { op: "copy", from: "/tags", path: "/t~1s" }],
  [{ op: "increment", path: "/views", value: 2 }, { op: "increment", path: "/deep/er", value: 0.5 }],
  [{ op: "increment", path: "/tags/0", value: 1 }], // not a number: a conflict
  [{ op: "increment", path: "/views", value: 2 ** 53 }], // past 2^53
  [{ op: "remove", path: "/nothing" }],
  [{ op: "add", path: "/tags/9", value: 1 }],
  [{ op: "test", path: "/views", value: 1 }, { op: "replace", path: "", value: [1] }],
  [{ op: "test", path: "/views", value: true }],
  [{ op: "move", from: "/meta", path: "/meta/inner" }],
  [{ op: "add", path: "/tags/01", value: 1 }],
];

describe("the local patch is the server's", () => {
  for (const operations of PATCHES) {
    test(JSON.stringify(operations), async () => {
      const g = group();
      const start = { title: "a", tags: ["x", "y"], meta: { n: 1 }, views: 1 };
      await db.put(g.add("server", 1), start);
      await db.put(g.add("local", 1), start);
      const outcome = async (p: Promise<Item>) => {
        try {
          return (await p).value;
        } catch (e) {
          if (e instanceof PathDBError) return e.constructor.name;
          throw e;
        }
      };
      const expected = await outcome(db.patch(g.add("server", 1), operations));
      const got = await outcome(db.transaction((tx) => tx.patch(g.add("local", 1), { patch: operations })));
      assert.deepEqual(got, expected);
      if (typeof expected === "string") assert.ok([PatchConflict.name, PatchTestFailed.name].includes(expected));
      else assert.deepEqual((await db.get(g.add("local", 1)))?.value, expected);
    });
  }
  for (const document of [{ title: null, meta: { n: null, k: [1] } }, [1, 2], null, { a: { b: { c: null } } }]) {
    test(`merge ${JSON.stringify(document)}`, async () => {
      const g = group();
      const start = { title: "a", meta: { n: 1 } };
      await db.put(g.add("server", 1), start);
      await db.put(g.add("local", 1), start);
      const expected = (await db.merge(g.add("server", 1), document)).value;
      assert.deepEqual((await db.transaction((tx) => tx.patch(g.add("local", 1), { merge: document }))).value, expected);
    });
  }
});

test("key order is the server's", async () => {
  const g = group();
  const ids: Id[] = [
    0, 1, 2, 10, 255, 256, -1, -300, (1n << 64n) - 1n, -((1n << 64n) - 1n),
    new Desc(5), new Desc(-5), new Desc(50), "a", "ab", "b", "10", new Desc("a"), new Desc("ab"),
    Uint8Array.of(0), Uint8Array.of(1, 2), Uint8Array.of(255), new Desc(Uint8Array.of(0)), new Desc(Uint8Array.of(97)),
    new Uuid("4c9d36e5-6b19-4e6a-828c-226ed667458a"),
  ];
  const paths = [...ids.map((i) => g.add("k", i)), g.add("k", 3).add("c", 1), g.add("j", 1), g.add("kk", 1)];
  for (const path of paths) await db.put(path, path.toString());
  const sorted = [...paths].sort(KeyPath.compare).map(String);
  assert.deepEqual((await collect(db.list(g))).map((i) => i.path.toString()), sorted);
  assert.deepEqual((await collect(db.list(g, { reverse: true }))).map((i) => i.path.toString()), [...sorted].reverse());
});
