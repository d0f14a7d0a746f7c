/** Every client method and error class against a real `pathdb serve`. */

import assert from "node:assert/strict";
import { createServer } from "node:net";
import { after, before, describe, test } from "node:test";

import {
  Check,
  Client,
  ConditionFailed,
  Conflict,
  Delete,
  Desc,
  DestinationNotEmpty,
  Forbidden,
  InsufficientStorage,
  InvalidRequest,
  KeyPath,
  NotFound,
  NotPathDB,
  OutcomeUnknown,
  PathDBError,
  Put,
  Unauthorized,
  Unavailable,
  Uuid,
  type Id,
  type Page,
} from "../src/index.js";
import { READ_TOKEN, TOKEN, startServer, type Server } from "./server.js";
import { collect, group, rejects } from "./helpers.js";

let server: Server;
let db: Client;

before(async () => {
  server = await startServer();
  db = new Client(server.url, { token: TOKEN });
});
after(async () => {
  await server?.stop();
});

describe("items", () => {
  test("put, get, delete", async () => {
    const g = group();
    const path = g.add("post", 2);
    const before = Date.now();
    const item = await db.put(path, { title: "hello" });
    assert.ok(item.path.equals(path));
    assert.equal(item.version, 1);
    assert.deepEqual(item.value, { title: "hello" });
    assert.equal(item.createdAtMicros, item.modifiedAtMicros);
    assert.equal(item.expiresAt, null);
    assert.ok(Math.abs(item.createdAt.getTime() - before) < 60_000);
    assert.deepEqual(await db.get(path), item);
    assert.equal((await db.put(path.toString(), [1, 2])).version, 2);
    const deleted = await db.delete(path);
    assert.equal(deleted?.version, 2);
    assert.equal(await db.get(path), null);
    assert.equal(await db.delete(path), null);
    assert.equal((await db.put(path, null)).version, 4); // never reused: the delete took 3
  });

  test("put options and conditions", async () => {
    const g = group();
    const path = g.add("doc", "a");
    await db.put(path, 1, { mustNotExist: true });
    const failed = await rejects(db.put(path, 2, { mustNotExist: true }), ConditionFailed);
    assert.equal(failed.code, "condition_failed");
    assert.equal(failed.status, 412);
    assert.equal((await db.put(path, 2, { ifVersion: 1 })).version, 2);
    await rejects(db.put(path, 3, { ifVersion: 1 }), ConditionFailed);
    await rejects(db.delete(path, { ifVersion: 1 }), ConditionFailed);
    assert.notEqual(await db.delete(path, { ifVersion: 2 }), null);
    const expiring = await db.put(g.add("doc", "ttl"), "x", { ttlSeconds: 3600 });
    const seconds = (expiring.expiresAtMicros! - expiring.modifiedAtMicros) / 1e6;
    assert.ok(seconds > 3500 && seconds <= 3600);
    await assert.rejects(db.put(path, 1, { mustNotExist: true, ifVersion: 1 }), TypeError);
  });

  test("history and getVersion", async () => {
    const path = group().add("page", 1);
    for (const n of [0, 1, 2]) await db.put(path, { n }, { history: true });
    assert.deepEqual((await db.history(path)).map((r) => r.version), [3, 2, 1]);
    assert.deepEqual((await db.history(path, { limit: 2 })).map((r) => r.value), [{ n: 2 }, { n: 1 }]);
    assert.deepEqual((await db.getVersion(path, 2)).value, { n: 1 });
    const missing = await rejects(db.getVersion(path, 99), NotFound);
    assert.equal(missing.status, 404);
  });

  test("getMany", async () => {
    const g = group();
    await db.put(g.add("x", 1), "a");
    await db.put(g.add("x", 2), "b");
    const items = await db.getMany([g.add("x", 2), g.add("x", 3), g.add("x", 1).toString()]);
    assert.deepEqual(items.map((i) => i?.value ?? null), ["b", null, "a"]);
    assert.deepEqual(await db.getMany([]), []);
  });

  const oddIds: Id[] = [
    "a/b", "100%", "%2F", "!bang", "~tilde", "7", "-3", "caf\u00e9 & co?#*", "\u{1f600}", "..",
    Uint8Array.of(0, 255, 47), new Uuid("4c9d36e5-6b19-4e6a-828c-226ed667458a"),
    2n ** 64n - 1n, -(2n ** 64n - 1n), new Desc(5), new Desc("a/b%"), new Desc(Uint8Array.of(1)),
  ];
  for (const id of oddIds) {
    test(`id ${new KeyPath().add("k", id).toString()} survives the URL`, async () => {
      const g = group();
      const path = g.add("k", id).add("child", 1);
      assert.ok((await db.put(path, 1)).path.equals(path));
      assert.ok((await db.get(path))?.path.equals(path));
      const listed = await collect(db.list(g.add("k", id)));
      assert.deepEqual(listed.map((i) => i.path.toString()), [path.toString()]);
      assert.notEqual(await db.delete(path), null);
    });
  }
});

async function fill(g: KeyPath, n: number): Promise<KeyPath[]> {
  const paths = Array.from({ length: n }, (_, i) => g.add("n", i));
  for (let start = 0; start < n; start += 100) {
    await db.transact(paths.slice(start, start + 100).map((p, i) => new Put(p, start + i)));
  }
  return paths;
}

describe("listing", () => {
  test("pages across many pages in both directions", async () => {
    const g = group();
    const paths = (await fill(g, 250)).map(String);
    const forward = await collect(db.list(g, { pageSize: 7 }));
    assert.deepEqual(forward.map((i) => i.path.toString()), paths);
    const backward = await collect(db.list(g, { pageSize: 7, reverse: true }));
    assert.deepEqual(backward.map((i) => i.path.toString()), [...paths].reverse());
    const limited = await collect(db.list<number>(g, { limit: 120 }));
    assert.deepEqual(limited.map((i) => i.value), Array.from({ length: 120 }, (_, i) => i));
    const last = await collect(db.list<number>(g, { reverse: true, limit: 3 }));
    assert.deepEqual(last.map((i) => i.value), [249, 248, 247]);
    const seen: string[] = [];
    let pageToken: string | null = null;
    let pages = 0;
    do {
      const page: Page = await db.listPage(g, { pageSize: 40, pageToken });
      seen.push(...page.items.map((i) => i.path.toString()));
      pageToken = page.nextPageToken;
      pages++;
    } while (pageToken !== null);
    assert.deepEqual(seen, paths);
    assert.ok(pages >= 7);
    const first = await db.listPage<number>(g, { reverse: true, pageSize: 10 });
    assert.ok(first.nextPageToken);
    const second = await db.listPage<number>(g, { reverse: true, pageSize: 10, pageToken: first.nextPageToken });
    assert.deepEqual(
      [...first.items, ...second.items].map((i) => i.value),
      Array.from({ length: 20 }, (_, i) => 249 - i),
    );
  });

  test("bounds and children", async () => {
    const g = group();
    await fill(g, 30);
    await db.put(g.add("n", 3).add("c", 1), "deep");
    await db.put(g.add("o", 1), "other");
    const range = await collect(db.list(g.add("n"), { gte: g.add("n", 10), lt: g.add("n", 13) }));
    assert.deepEqual(range.map((i) => i.value), [10, 11, 12]);
    const reversed = await collect(db.list(g.add("n"), { gt: g.add("n", 26), lte: g.add("n", 28), reverse: true }));
    assert.deepEqual(reversed.map((i) => i.value), [28, 27]);
    const children = (await collect(db.list(g, { children: true }))).map((i) => i.path.toString());
    assert.equal(children.length, 31);
    assert.ok(!children.includes(g.add("n", 3).add("c", 1).toString()));
    assert.deepEqual((await collect(db.list(g.add("n", 3)))).map((i) => i.value), [3, "deep"]);
  });

  test("children show nodes for folders", async () => {
    const g = group();
    await db.put(g.add("folder", 1), { name: "has an item" });
    await db.put(g.add("folder", 1).add("file", 1), 1);
    await db.put(g.add("folder", 2).add("file", 1), 2);
    await db.put(g.add("folder", 10).add("sub", 1).add("file", 1), 3);
    const entries = await collect(db.list(g, { children: true }));
    assert.deepEqual(
      entries.map((e) => e.path.toString()),
      [1, 2, 10].map((n) => g.add("folder", n).toString()),
    );
    const [first, second] = entries;
    assert.ok(first !== undefined && !("node" in first) && first.version === 1);
    assert.deepEqual(second, { path: g.add("folder", 2), node: true });
    const page = await db.listPage(g, { children: true, reverse: true, pageSize: 1 });
    assert.deepEqual(page.items, [{ path: g.add("folder", 10), node: true }]);
    assert.ok(page.nextPageToken);
    // A subtree listing is items only, typed as such.
    assert.deepEqual((await collect(db.list(g))).map((i) => i.value), [{ name: "has an item" }, 1, 2, 3]);
  });

  test("subtree delete, move and copy", async () => {
    const g = group();
    const docs = g.add("folder", 1);
    await db.put(docs, { name: "docs" });
    for (const n of [1, 2]) await db.put(docs.add("file", 1), n, { history: true });
    await db.put(docs.add("sub", 1).add("file", 2), 3);
    await db.put(g.add("folder", 10), { name: "a sibling" });
    const other = group();
    assert.equal(await db.move(docs, other.add("folder", 1)), 3);
    assert.equal(await db.get(docs), null);
    assert.notEqual(await db.get(g.add("folder", 10)), null);
    const moved = other.add("folder", 1).add("file", 1);
    assert.equal((await db.get(moved))?.value, 2);
    assert.deepEqual((await db.history(moved)).map((r) => r.version), [2, 1]);
    assert.equal(await db.copy(other, g.add("copy", 1)), 3);
    assert.deepEqual((await collect(db.list(g.add("copy", 1)))).map((i) => i.value), [{ name: "docs" }, 2, 3]);
    await assert.rejects(db.copy(other, g.add("copy", 1)), (e: unknown) => {
      assert.ok(e instanceof DestinationNotEmpty);
      assert.equal(e.status, 409);
      assert.equal(e.code, "destination_not_empty");
      return true;
    });
    await assert.rejects(db.move(other, other.add("inside", 1)), InvalidRequest);
    assert.equal(await db.deleteSubtree(g.add("copy", 1)), 3);
    await assert.rejects(db.deleteSubtree(g.add("copy", 1)), NotFound);
  });
});

/** Runs `write` from `n` clients at once; each outcome is won, lost (ConditionFailed) or conflict. */
async function race(write: (c: Client) => Promise<unknown>, n = 8): Promise<string[]> {
  const clients = Array.from({ length: n }, () => new Client(server.url, { token: TOKEN }));
  const outcomes = await Promise.all(
    clients.map(async (c) => {
      try {
        await write(c);
        return "won";
      } catch (e) {
        if (e instanceof ConditionFailed) return "lost";
        if (e instanceof Conflict) return "conflict";
        return String(e);
      }
    }),
  );
  return outcomes.sort();
}

function oneWinner(outcomes: string[]): boolean {
  return outcomes.filter((o) => o === "won").length === 1 && outcomes.every((o) => ["won", "lost", "conflict"].includes(o));
}

describe("races and transactions", () => {
  test("conditions racing have one winner", async () => {
    const g = group();
    const path = g.add("race", 1);
    const lost7 = [...Array(7).fill("lost"), "won"];
    assert.deepEqual(await race((c) => c.put(path, "created", { mustNotExist: true })), lost7);
    assert.deepEqual(await race((c) => c.put(path, "updated", { ifVersion: 1 })), lost7);
    const checkThenCreate = [new Check(path, { ifVersion: 2 }), new Put(g.add("race", 2), 1, { mustNotExist: true })];
    assert.ok(oneWinner(await race((c) => c.transact(checkThenCreate))));
    assert.ok(oneWinner(await race((c) => c.transact([new Put(path, "tx", { ifVersion: 2 })]))));
    const got = await db.get(path);
    assert.deepEqual([got?.version, got?.value], [3, "tx"]);
  });

  test("racing transactions all apply", async () => {
    // Unconditional transactions on one path: the server plans a transaction that lost a race
    // again, so each applies; none answers 409 `conflict` (still mapped to `Conflict` for older
    // servers).
    const path = group().add("busy", 1);
    for (let round = 0; round < 3; round++) {
      assert.deepEqual(await race((c) => c.transact([new Put(path, 1)])), Array(8).fill("won"));
    }
    assert.equal((await db.get(path))?.version, 24);
  });

  test(
    "deletes racing have one winner",
    async () => {
      const path = group().add("race", 1);
      await db.put(path, 1);
      const outcomes = await race(async (c) => {
        if ((await c.delete(path, { ifVersion: 1 })) === null) throw new ConditionFailed("nothing deleted");
      });
      assert.deepEqual(outcomes, [...Array(7).fill("lost"), "won"]);
    },
  );

  test("transactions are all or nothing", async () => {
    const g = group();
    const [a, b, c] = [g.add("acct", 1), g.add("acct", 2), g.add("acct", 3)];
    await db.put(a, 100);
    await db.put(c, "old");
    const results = await db.transact([new Put(a, 90, { ifVersion: 1 }), new Put(b, 10, { mustNotExist: true }), new Delete(c)]);
    assert.equal(results[0]?.version, 2);
    assert.equal(results[1]?.value, 10);
    assert.equal(results[2]?.value, "old");
    assert.deepEqual(await db.transact([new Check(a, { ifVersion: 2 }), new Delete(g.add("acct", 9))]), [null, null]);
    const failed = await rejects(db.transact([new Put(a, 0), new Check(b, { mustNotExist: true })]), ConditionFailed);
    assert.deepEqual([failed.code, failed.status], ["condition_failed", 409]);
    assert.equal((await db.get(a))?.value, 90);
    assert.throws(() => new Check(a, {}), TypeError);
    assert.throws(() => new Check(a, { ifVersion: 1, mustExist: true }), TypeError);
  });
});

describe("errors", () => {
  test("tokens", async () => {
    const path = group().add("secret", 1);
    await db.put(path, "x");
    const anonymous = await rejects(new Client(server.url).get(path), Unauthorized);
    assert.equal(anonymous.status, 401);
    await rejects(new Client(server.url, { token: "wrong" }).put(path, "y"), Unauthorized);
    const reader = new Client(server.url, { token: READ_TOKEN });
    assert.equal((await reader.get(path))?.value, "x");
    const forbidden = await rejects(reader.put(path, "y"), Forbidden);
    assert.deepEqual([forbidden.status, forbidden.code], [403, "forbidden"]);
    await rejects(reader.transact([new Delete(path)]), Forbidden);
  });

  test("invalid requests", async () => {
    const g = group();
    const zero = await rejects(db.listPage(g, { pageSize: 0 }), InvalidRequest);
    assert.deepEqual([zero.status, zero.code], [400, "invalid_request"]);
    assert.equal((await rejects(db.listPage(g, { pageToken: "not a token" }), InvalidRequest)).code, "invalid_page_token");
    const big = await rejects(db.put(g.add("big", 1), "x".repeat(500_000)), InvalidRequest);
    assert.deepEqual([big.status, big.code], [413, "too_large"]);
    await rejects(db.getMany(Array.from({ length: 101 }, (_, i) => g.add("m", i))), InvalidRequest);
    const ttl = await rejects(db.put(g.add("ttl", 0), 1, { ttlSeconds: 0 }), InvalidRequest); // a dead item
    assert.equal(ttl.status, 400);
  });

  test("an unreachable server is unavailable", async () => {
    const port = await new Promise<number>((resolve) => {
      const s = createServer();
      s.listen(0, "127.0.0.1", () => {
        const address = s.address();
        s.close(() => resolve(typeof address === "object" && address ? address.port : 0));
      });
    });
    const error = await rejects(new Client(`http://127.0.0.1:${port}`).get("/a-1"), Unavailable);
    assert.equal(error.status, undefined);
  });

  const ITEM = { path: "/a-1", version: 4, created_at: 0, modified_at: 1000, expires_at: null, value: 1 };
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

  test("conflicts and 503 are retried with backoff", async () => {
    let calls: { url: string; init: RequestInit }[] = [];
    let c = new Client("http://db", { backoffMs: 1, fetch: scripted([error(409, "conflict"), error(503, "unavailable"), json(200, ITEM)], calls) });
    assert.equal((await c.put("/a-1", 1)).version, 4);
    assert.equal(calls.length, 3);
    assert.equal((calls[0]!.init.headers as Record<string, string>)["Content-Type"], "application/json");

    calls = [];
    c = new Client("http://db", { retries: 2, backoffMs: 1, fetch: scripted([error(409, "conflict"), error(409, "conflict"), error(409, "conflict")], calls) });
    const conflict = await rejects(c.delete("/a-1"), Conflict);
    assert.deepEqual([calls.length, conflict.code, conflict.message], [3, "conflict", "conflict!"]);

    calls = [];
    c = new Client("http://db", { backoffMs: 1, fetch: scripted([error(409, "conflict")], calls) });
    await rejects(c.transact([new Put("/a-1", 1)]), Conflict);
    assert.equal(calls.length, 1); // a transaction is the caller's unit of work to retry

    calls = [];
    c = new Client("http://db", { retries: 1, backoffMs: 1, fetch: scripted([error(503, "unavailable"), error(503, "unavailable")], calls) });
    assert.equal((await rejects(c.get("/a-1"), Unavailable)).status, 503);
    assert.equal(calls.length, 2);

    // A write that may have been made is not retried (an increment would apply twice), and a full
    // disk is not retried either: each is raised at once, as its own kind.
    calls = [];
    c = new Client("http://db", { backoffMs: 1, fetch: scripted([error(503, "outcome_unknown"), error(507, "insufficient_storage")], calls) });
    const unknown = await rejects(c.put("/a-1", 1), OutcomeUnknown);
    const full = await rejects(c.put("/a-1", 1), InsufficientStorage);
    assert.deepEqual([calls.length, unknown.status, full.status], [2, 503, 507]);
    assert.ok(unknown instanceof Unavailable && full instanceof Unavailable);

    const answers = [
      error(412, "condition_failed"),
      error(500, "internal"),
      error(415, "unsupported_media_type"),
      error(418, "teapot"),
    ];
    c = new Client("http://db", { fetch: scripted(answers, calls) });
    await rejects(c.put("/a-1", 1, { ifVersion: 3 }), ConditionFailed);
    const boom = await rejects(c.get("/a-1"), Unavailable);
    assert.deepEqual([boom.status, boom.code], [500, "internal"]);
    const media = await rejects(c.put("/a-1", 1), InvalidRequest);
    assert.deepEqual([media.status, media.code], [415, "unsupported_media_type"]);
    const other = await rejects(c.get("/a-1"), PathDBError);
    assert.deepEqual([other.constructor, other.status], [PathDBError, 418]);
    assert.ok(new NotFound("x") instanceof PathDBError);
  });

  test("a server that is not PathDB is named as such", async () => {
    // An error without PathDB's JSON error body, or a success that is not JSON, comes from
    // another program: NotPathDB (an Unavailable), never "not found" or a parse error.
    const page = "<!DOCTYPE html>\n<html><body><h1>Welcome to nginx!</h1></body></html>";
    const html = (status: number) => new Response(page, { status, headers: { "Content-Type": "text/html" } });
    const calls: { url: string; init: RequestInit }[] = [];
    const answers = [
      html(404), // get: not "no item"
      html(200), // get
      html(404), // put
      html(200), // listPage
      new Response("boom", { status: 500 }),
      new Response("not json", { status: 200, headers: { "Content-Type": "application/json" } }),
    ];
    const c = new Client("http://db:8080", { retries: 0, fetch: scripted(answers, calls) });
    const messages: string[] = [];
    for (const call of [
      () => c.get("/a-1"),
      () => c.get("/a-1"),
      () => c.put("/a-1", 1),
      () => c.listPage("/a-1"),
      () => c.get("/a-1"),
      () => c.get("/a-1"),
    ]) {
      const error = await rejects(call(), NotPathDB);
      assert.ok(error instanceof Unavailable);
      assert.ok(error.message.startsWith("http://db:8080 is not a PathDB server (it answered HTTP "), error.message);
      messages.push(error.message);
    }
    assert.ok(messages[0]!.includes('HTTP 404, text/html: "<!DOCTYPE html> <html><body><h1>Welcome to nginx!</h1></body..."'), messages[0]);
    assert.equal(calls.length, 6);
    // PathDB's own 404 still means no item.
    const real = new Client("http://db", { fetch: scripted([error(404, "not_found")], calls) });
    assert.equal(await real.get("/a-1"), null);
  });

  test("requests carry media types, conditions and encoded paths", async () => {
    const calls: { url: string; init: RequestInit }[] = [];
    const c = new Client("http://db/", { token: "t", fetch: scripted([json(200, ITEM), json(201, ITEM), json(200, { items: [] })], calls) });
    await c.put(new KeyPath().add("a", 1).add("s", "x/y"), { k: "\u00e9" }, { ifVersion: 3, history: true, ttlSeconds: 5 });
    await c.put("/a-1", 1, { mustNotExist: true });
    await c.getMany(["/a-1"]);
    const put = calls[0]!;
    assert.equal(put.url, "http://db/v1/items/a-1/s-x%25%2Fy?history=true&ttl_seconds=5");
    const headers = put.init.headers as Record<string, string>;
    assert.deepEqual([headers["If-Match"], headers.Authorization, put.init.method], ['"3"', "Bearer t", "PUT"]);
    assert.deepEqual(JSON.parse(put.init.body as string), { k: "\u00e9" });
    assert.equal((calls[1]!.init.headers as Record<string, string>)["If-None-Match"], "*");
    assert.equal((calls[2]!.init.headers as Record<string, string>)["Content-Type"], "application/json");
  });
});

