/**
 * The change feed (`changes`, `watch`, a listing's `changesToken`, groups without one) and creates
 * with generated ids (`create`, `Create` in transactions) against a real `pathdb serve`, and the
 * answers a real server cannot easily give (410) against scripted ones.
 */

import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";

import {
  Client,
  Create,
  Created,
  Delete,
  InvalidKeyPath,
  InvalidRequest,
  KeyPath,
  NotPathDB,
  PathDBError,
  Put,
  TokenExpired,
  Uuid,
  type Change,
  type Item,
  type Page,
} from "../src/index.js";
import { ADMIN_TOKEN, TOKEN, startServer, type Server } from "./server.js";
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

/** Paths as text: deepEqual cannot see a KeyPath's private fields. */
const text = (paths: (KeyPath | undefined)[]) => paths.map((p) => p?.toString());
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A follower's rule (docs/changes.md): apply a change unless it is older than what is held. */
function apply(local: Map<string, Item>, change: Change): void {
  const key = change.path.toString();
  const held = local.get(key);
  if (held !== undefined && change.version < held.version) return;
  if (change.op === "put") local.set(key, change.item);
  else local.delete(key);
}

async function listing(prefix: KeyPath): Promise<Map<string, Item>> {
  const out = new Map<string, Item>();
  for await (const item of db.list(prefix)) out.set(item.path.toString(), item);
  return out;
}

describe("change feed", () => {
  test("a follower ends equal to the final listing", async () => {
    const g = group();
    await db.transact(Array.from({ length: 12 }, (_, n) => new Put(g.add("doc", n), { n, v: 0 })));
    const first = await db.listPage(g, { pageSize: 5 });
    assert.ok(first.changesToken && first.nextPageToken);
    const local = new Map(first.items.map((i) => [i.path.toString(), i] as const));

    const writer = async (w: number) => {
      const c = new Client(server.url, { token: TOKEN });
      for (let n = w; n < 12; n += 3) {
        if (n % 4 === 0) await c.delete(g.add("doc", n));
        else await c.put(g.add("doc", n), { n, v: w + 1 }, { history: n % 2 === 0 });
        await c.create(g, "new", { by: w }, { id: "sequence" });
      }
      await c.transact([new Put(g.add("tx", w), w), new Create(g.add("tx", w), "line", w, { id: "rand53" })]);
    };
    const writers = Promise.all([0, 1, 2].map(writer));
    let pageToken: string | null = first.nextPageToken;
    while (pageToken !== null) {
      const page: Page = await db.listPage(g, { pageSize: 5, pageToken });
      assert.equal(page.changesToken, null); // only a first page has one
      for (const i of page.items) local.set(i.path.toString(), i);
      pageToken = page.nextPageToken;
    }
    await writers;

    let since = first.changesToken;
    const seen: Change[] = [];
    for (;;) {
      const feed = await db.changes(g, { since, limit: 7 });
      for (const change of feed.changes) apply(local, change);
      seen.push(...feed.changes);
      if (feed.changes.length === 0) {
        assert.equal(feed.nextToken, since); // caught up: the position stays
        break;
      }
      since = feed.nextToken;
    }
    assert.deepEqual(local, await listing(g));
    assert.equal(seen.filter((c) => c.op === "delete").length, 3);
    assert.equal(seen.filter((c) => c.op === "put" && c.path.elements.at(-1)?.namespace === "new").length, 12);
  });

  test("without since: the current position", async () => {
    const g = group();
    await db.put(g.add("a", 1), 1);
    const now = await db.changes(g);
    assert.deepEqual(now.changes, []);
    assert.deepEqual((await db.changes(g, { since: now.nextToken })).changes, []);
    const item = await db.put(g.add("a", 1), 2);
    await db.delete(g.add("a", 1));
    const feed = await db.changes(g, { since: now.nextToken });
    assert.deepEqual(feed.changes, [
      { op: "put", item, path: item.path, version: 2 },
      { op: "delete", path: item.path, version: 2 },
    ]);
    assert.deepEqual(text(feed.changes.map((c) => c.path)), text([item.path, item.path]));
  });

  test("a long poll returns when a write commits", async () => {
    const g = group();
    const since = (await db.changes(g)).nextToken;
    const started = Date.now();
    const write = sleep(300).then(() => db.put(g.add("late", 1), "now"));
    const feed = await db.changes(g, { since, waitSeconds: 20 });
    await write;
    const took = Date.now() - started;
    assert.deepEqual(feed.changes.map((c) => c.path.toString()), [g.add("late", 1).toString()]);
    assert.ok(took > 200 && took < 10_000, String(took));
    const quiet = Date.now();
    assert.deepEqual((await db.changes(g, { since: feed.nextToken, waitSeconds: 1 })).changes, []);
    assert.ok(Date.now() - quiet > 900);
  });

  test("watch follows, stops on break, resumes from its token, and aborts", async () => {
    const g = group();
    const start = (await db.changes(g)).nextToken;
    await db.transact([0, 1, 2].map((n) => new Put(g.add("w", n), n)));
    const watch = db.watch(g, { since: start, waitSeconds: 5 });
    const got: Change[] = [];
    for await (const change of watch) {
      got.push(change);
      if (got.length === 2) break;
    }
    assert.equal(watch.token, start); // stopped inside the transaction's page: a resume repeats, never skips
    for await (const change of db.watch(g, { since: watch.token, waitSeconds: 5 })) {
      got.push(change);
      if (got.length === 5) break;
    }
    assert.deepEqual(got.map((c) => c.path.toString()), [0, 1, 0, 1, 2].map((n) => g.add("w", n).toString()));

    // From where iterating starts, waiting for what comes next.
    const fresh = db.watch(g, { waitSeconds: 5 });
    assert.equal(fresh.token, null);
    const write = sleep(300).then(() => db.delete(g.add("w", 1)));
    for await (const change of fresh) {
      assert.deepEqual([change.op, change.path.toString(), change.version], ["delete", g.add("w", 1).toString(), 1]);
      break;
    }
    await write;
    assert.equal(fresh.token, (await db.changes(g)).nextToken);

    // An abort ends even a waiting long poll, with the signal's reason.
    const controller = new AbortController();
    const aborted = Date.now();
    setTimeout(() => controller.abort(), 200);
    const error = await rejects(
      (async () => {
        for await (const change of db.watch(g, { waitSeconds: 30, signal: controller.signal })) assert.fail(String(change));
      })(),
      Error,
    );
    assert.equal(error.name, "AbortError");
    assert.ok(Date.now() - aborted < 5000);
  });

  test("invalid and foreign change tokens", async () => {
    const g = group();
    const bad = await rejects(db.changes(g, { since: "not a token" }), InvalidRequest);
    assert.deepEqual([bad.status, bad.code], [400, "invalid_change_token"]);
    const foreign = (await db.changes(group())).nextToken;
    assert.equal((await rejects(db.changes(g, { since: foreign }), InvalidRequest)).code, "invalid_change_token");
    const watching = db.watch(g, { since: foreign })[Symbol.asyncIterator]();
    await rejects(watching.next(), InvalidRequest);
    const tooLong = await rejects(db.changes(g, { since: foreign, waitSeconds: 61 }), InvalidRequest);
    assert.equal(tooLong.code, "invalid_request");
    assert.throws(() => db.watch(g, { waitSeconds: 0 }), RangeError); // it would poll without a pause
  });

  test("a group without a change log", async () => {
    // A namespace of its own: definitions apply to the whole database, and this one stays.
    const ns = "session_" + randomUUID().replaceAll("-", "").slice(0, 12);
    const admin = new Client(server.url, { token: ADMIN_TOKEN });
    assert.equal((await admin.putNamespace(ns, { changes: false })).changes, false);
    const session = new KeyPath().add(ns, 1);
    await db.put(session.add("cart", 1), { items: 2 });
    assert.equal((await admin.getNamespace(ns))?.changes, false);
    const refused = await rejects(db.changes(session), InvalidRequest);
    assert.deepEqual([refused.status, refused.code], [400, "invalid_request"]);
    assert.match(refused.message, /keeps no change log/);
    assert.equal((await db.listPage(session)).changesToken, null);
    // For good: a definition without it, or none, would leave a gap in the group's log.
    assert.match((await rejects(admin.putNamespace(ns, {}), InvalidRequest)).message, /cannot be undone/);
    assert.match((await rejects(admin.deleteNamespace(ns), InvalidRequest)).message, /cannot be undone/);
  });
});

describe("values that look like nothing", () => {
  // Issue 18: a null put used to stop its group's feed for good.
  test("null, [], {}, \"\", 0 and false reach every reader", async () => {
    const g = group();
    const start = (await db.changes(g)).nextToken;
    const emptyish: unknown[] = [null, [], {}, "", 0, false, { a: null }];
    const written: unknown[] = [];
    for (const [i, value] of emptyish.entries()) {
      const path = g.add("a", i);
      assert.deepEqual((await db.put(path, value, { history: true })).value, value);
      assert.deepEqual((await db.get(path))?.value, value);
      assert.deepEqual((await db.history(path))[0]?.value, value);
      const [result] = await db.transact([new Put(g.add("t", i), value)]);
      assert.deepEqual(result?.value, value);
      assert.deepEqual((await db.create(g, "c", value, { id: "sequence" })).value, value);
      written.push(value, value, value);
    }
    const page = await db.changes(g, { since: start, limit: 1000 });
    assert.deepEqual(
      page.changes.map((c) => (c.op === "put" ? c.item.value : "deleted")),
      written,
    );
  });
});

describe("generated ids", () => {
  test("sequences count up and are never reused", async () => {
    const parent = group().add("x", 1);
    const first = await db.create(parent, "post", { n: 1 }, { id: "sequence" });
    const second = await db.create(parent.toString(), "post", { n: 2 }, { id: "sequence", history: true });
    assert.deepEqual(text([first.path, second.path]), text([parent.add("post", 1), parent.add("post", 2)]));
    assert.deepEqual([first.version, first.value], [1, { n: 1 }]);
    assert.deepEqual(await db.get(second.path), second);
    await db.delete(second.path);
    assert.ok((await db.create(parent, "post", null, { id: "sequence" })).path.equals(parent.add("post", 3)));
    assert.ok((await db.create(parent, "note", 1, { id: "sequence" })).path.equals(parent.add("note", 1)));
    await db.put(parent.add("post", 4), "by hand"); // ahead of the sequence: skipped, not overwritten
    assert.ok((await db.create(parent, "post", 5, { id: "sequence" })).path.equals(parent.add("post", 5)));
    assert.notEqual((await db.create(parent, "post", "ttl", { id: "sequence", ttlSeconds: 3600 })).expiresAt, null);
  });

  test("uuid and rand53 ids, and new groups", async () => {
    const g = group();
    const made = await db.create(g, "u", { k: 1 }); // uuid by default
    const last = made.path.elements.at(-1);
    assert.ok(made.path.toString().startsWith(g.toString() + "/u-") && last?.id instanceof Uuid);
    assert.match(last.id.toString(), /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const ids = await Promise.all([0, 1, 2, 3, 4].map(async (n) => (await db.create(g, "r", n, { id: "rand53" })).path.elements.at(-1)?.id));
    for (const id of ids) assert.ok(typeof id === "bigint" && id >= 1n && id < 2n ** 53n, String(id));
    assert.equal(new Set(ids).size, 5);
    const newGroup = await db.create(null, "t", { fresh: true }, { id: "uuid" });
    assert.equal(newGroup.path.length, 1);
    assert.ok(newGroup.path.elements[0]?.id instanceof Uuid);
    assert.deepEqual(await db.get(newGroup.path), newGroup);
    await rejects(db.create(g, "not-a-namespace", 1), InvalidKeyPath);
    await rejects(db.create(g.add("ns"), "post", 1), InvalidKeyPath);
    await rejects(db.create(g, "post", 1, { id: "serial" as "uuid" }), InvalidRequest);
  });

  test("creates in transactions", async () => {
    const g = group();
    const [order, line, other, put] = await db.transact([
      new Create(g, "order", { total: 5 }, { id: "sequence" }),
      new Create(new Created(0), "line", { sku: "a" }, { id: "sequence" }),
      new Create(new Created(0), "line", { sku: "b" }, { id: "sequence" }),
      new Put(g.add("plain", 1), 1),
    ]);
    assert.ok(order && order.path.equals(g.add("order", 1)));
    assert.deepEqual(text([line?.path, other?.path]), text([order.path.add("line", 1), order.path.add("line", 2)]));
    assert.deepEqual([line?.value, put?.value], [{ sku: "a" }, 1]);
    const [newGroup, child] = await db.transact([new Create(null, "t", 0), new Create(new Created(0), "c", 1, { id: "rand53" })]);
    assert.ok(newGroup && child?.path.parent?.equals(newGroup.path));
    assert.deepEqual(new Create(new Created(3), "c", 1, { history: true, ttlSeconds: 9 }).toWire(), {
      op: "create",
      path: "$3/c",
      id: "uuid",
      value: 1,
      history: true,
      ttl_seconds: 9,
    });
    assert.throws(() => new Created(-1), RangeError);
    await rejects(db.transact([new Put(g.add("p", 1), 1), new Create(new Created(0), "c", 1)]), InvalidRequest);
    await rejects(db.transact([new Delete(g.add("p", 1)), new Create(new Created(5), "c", 1)]), InvalidRequest);
  });
});

describe("scripted answers", () => {
  const ITEM = { path: "/a-1/b-2", version: 3, created_at: 0, modified_at: 1000, expires_at: null, value: { x: 1 } };
  const json = (status: number, body: unknown) =>
    new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });
  const expired = () => json(410, { error: { code: "token_expired", message: "the changes after this token are no longer kept" } });
  const page = (changes: unknown[], nextToken: string) => json(200, { changes, next_token: nextToken });
  type Call = { url: string; init: RequestInit };
  function scripted(answers: Response[], calls: Call[]): typeof fetch {
    return (async (url: string | URL | Request, init?: RequestInit) => {
      calls.push({ url: String(url), init: init ?? {} });
      const answer = answers.shift();
      assert.ok(answer, "more requests than scripted answers");
      return answer;
    }) as typeof fetch;
  }

  test("an expired token throws TokenExpired", async () => {
    const calls: Call[] = [];
    const c = new Client("http://db", { fetch: scripted([expired(), expired(), new Response("gone", { status: 410 })], calls) });
    const error = await rejects(c.changes("/a-1", { since: "old", waitSeconds: 5 }), TokenExpired);
    assert.deepEqual([error.status, error.code, error.name], [410, "token_expired", "TokenExpired"]);
    assert.ok(error instanceof PathDBError);
    await rejects(c.watch("/a-1", { since: "old" })[Symbol.asyncIterator]().next(), TokenExpired);
    await rejects(c.changes("/a-1", { since: "old" }), NotPathDB); // a 410 without PathDB's body: another server
    assert.equal(new URL(calls[0]!.url).searchParams.get("since"), "old");
  });

  test("change and create requests and answers", async () => {
    const calls: Call[] = [];
    const answers = [
      page([{ op: "put", item: ITEM }, { op: "delete", path: "/a-1/c-%7", version: 9 }], "t2"),
      json(201, ITEM),
      json(200, { items: [ITEM], next_page_token: null, changes_token: "c1" }),
      json(200, { items: [ITEM], next_page_token: null }),
    ];
    const c = new Client("http://db", { fetch: scripted(answers, calls) });
    const feed = await c.changes(KeyPath.parse("/a-1/s-x%/y"), { since: "t1", limit: 50, waitSeconds: 20 });
    assert.equal(feed.nextToken, "t2");
    const [put, gone] = feed.changes;
    assert.ok(put?.op === "put" && put.version === 3 && put.path.equals(put.item.path));
    assert.deepEqual(put.item.value, { x: 1 });
    assert.deepEqual(gone, { op: "delete", path: new KeyPath().add("a", 1).add("c", "7"), version: 9 });
    assert.ok(gone?.path.equals(new KeyPath().add("a", 1).add("c", "7")));
    await c.create(new KeyPath().add("a", 1), "b", { x: 1 }, { id: "sequence", history: true, ttlSeconds: 5 });
    assert.equal((await c.listPage("/a-1")).changesToken, "c1");
    assert.equal((await c.listPage("/a-1", { pageToken: "p" })).changesToken, null);
    assert.equal(calls[0]!.url, "http://db/v1/changes/a-1/s-x%25%2Fy?since=t1&wait=20&limit=50");
    const create = calls[1]!;
    assert.equal(create.url, "http://db/v1/items/a-1/b?id=sequence&history=true&ttl_seconds=5");
    assert.equal(create.init.method, "POST");
    assert.equal((create.init.headers as Record<string, string>)["Content-Type"], "application/json");
    assert.deepEqual(JSON.parse(create.init.body as string), { x: 1 });
  });

  test("watch keeps its position across pages", async () => {
    const put = { op: "put", item: ITEM };
    const calls: Call[] = [];
    const c = new Client("http://db", { fetch: scripted([page([put, put, put], "t2"), page([], "t2"), page([put], "t3")], calls) });
    const watch = c.watch("/a-1", { since: "t1", waitSeconds: 3, limit: 10 });
    const it = watch[Symbol.asyncIterator]();
    await it.next();
    await it.next();
    assert.equal(watch.token, "t1"); // inside a page: where that page started
    await it.next();
    assert.equal(watch.token, "t2");
    await it.next(); // an empty poll, then one more
    assert.equal(watch.token, "t3");
    await it.return();
    assert.deepEqual(calls.map((r) => new URL(r.url).searchParams.get("since")), ["t1", "t2", "t2"]);
    assert.deepEqual([...new URL(calls[0]!.url).searchParams].sort(), [["limit", "10"], ["since", "t1"], ["wait", "3"]]);
  });
});
