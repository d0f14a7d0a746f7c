/**
 * Filters, projections, counts and filtered change feeds (docs/filters.md), one name one shape
 * (`list` iterates, `listPage` reads a page, on `Client` and the transaction), and `KeyPath.equals`
 * with text.
 *
 * "filter requests" runs against scripted answers (the requests sent and how the answers read);
 * "filters against a server" runs against a real `pathdb serve` and needs a server with filters
 * (`GET /v1/list?filter=...`).
 */

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import {
  CheckList,
  Client,
  InvalidFilter,
  InvalidRequest,
  KeyPath,
  PathDBError,
  TransactionListing,
  type Change,
  type Item,
} from "../src/index.js";
import { TOKEN, startServer, type Server } from "./server.js";
import { collect, group, rejects } from "./helpers.js";

type Wire = Record<string, unknown>;
type Call = { url: URL; method: string; body: unknown };

const wireItem = (path: string, version = 1, value: unknown = null) => ({ path, version, created_at: 0, modified_at: 0, expires_at: null, value });
const json = (status: number, body: unknown) => new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });
const invalidFilter = (position?: number) =>
  json(400, { error: { code: "invalid_filter", message: "undeclared reference to 'valu'", ...(position !== undefined && { position }) } });

/** A `fetch` that answers with `handler` and records each request. */
function scripted(handler: (call: Call) => Response, calls: Call[] = []): typeof fetch {
  return (async (url: string | URL | Request, init?: RequestInit) => {
    const body = typeof init?.body === "string" ? JSON.parse(init.body) : undefined;
    const call = { url: new URL(String(url)), method: init?.method ?? "GET", body };
    calls.push(call);
    return handler(call);
  }) as typeof fetch;
}

const params = (call: Call) => Object.fromEntries(call.url.searchParams);

/** A listing of /a-1 in pages: a filtered page may be empty and still have a next page. */
const PAGES: Record<string, Wire> = {
  "": { items: [wireItem("/a-1/x-1", 1, 1)], next_page_token: "p2", changes_token: "C", scanned: 3 },
  p2: { items: [], next_page_token: "p3", scanned: 3 },
  p3: { items: [], next_page_token: "p4", scanned: 3 },
  p4: { items: [wireItem("/a-1/x-9", 2, 9)], scanned: 2 },
};
const COUNTS: Record<string, [number, string | null]> = { "": [4, "c2"], c2: [0, "c3"], c3: [5, null] };

function paged({ url }: Call): Response {
  assert.ok(url.pathname.startsWith("/v1/list/"), url.pathname);
  const token = url.searchParams.get("page_token") ?? "";
  if (url.searchParams.get("count") === "true") {
    const [count, next] = COUNTS[token]!;
    return json(200, { count, scanned: 10, ...(next !== null && { next_page_token: next }) });
  }
  return json(200, PAGES[token]);
}

/** A server for a transaction: listings of `PAGES`, a stored /a-1/x-1, and the commit recorded. */
function txServer(calls: Call[], commits: Wire[][]): typeof fetch {
  return scripted((call) => {
    const path = call.url.pathname;
    if (path === "/v1/transact") {
      const ops = (call.body as { ops: Wire[] }).ops;
      commits.push(ops);
      return json(200, { results: ops.map(() => ({ op: "check" })) });
    }
    if (path === "/v1/get") {
      const asked = (call.body as { paths: string[] }).paths;
      return json(200, { items: asked.filter((p) => p === "/a-1/x-1").map((p) => wireItem(p, 1, 0)) });
    }
    if (path.startsWith("/v1/items/")) return json(200, wireItem("/" + path.slice("/v1/items/".length), 4, 0));
    return paged(call);
  }, calls);
}

describe("filter requests", () => {
  test("list sends the filter and follows empty pages", async () => {
    const calls: Call[] = [];
    const c = new Client("http://db", { fetch: scripted(paged, calls) });
    const expr = 'value.status == "open" && value.total > 100';
    const items = await collect(c.list("/a-1", { filter: expr, fields: ["title", "author.name"], maxScan: 3, pageSize: 50 }));
    assert.deepEqual(items.map((i) => i.value), [1, 9]);
    assert.equal(calls.length, 4); // through both empty pages to the end
    assert.deepEqual(params(calls[0]!), { filter: expr, fields: "title,author.name", max_scan: "3", limit: "50" });
    assert.deepEqual(calls.map((r) => r.url.searchParams.get("page_token")), [null, "p2", "p3", "p4"]);
    assert.ok(calls.every((r) => r.url.searchParams.get("filter") === expr && r.url.searchParams.get("max_scan") === "3"));
  });

  test("listPage has scanned, and the limit spans empty pages", async () => {
    const calls: Call[] = [];
    const c = new Client("http://db", { fetch: scripted(paged, calls) });
    const page = await c.listPage("/a-1", { filter: "true", fields: "title" });
    assert.deepEqual([page.scanned, page.nextPageToken, page.changesToken], [3, "p2", "C"]);
    assert.deepEqual(params(calls[0]!), { filter: "true", fields: "title" });
    const empty = await c.listPage("/a-1", { filter: "true", pageToken: "p2" });
    assert.deepEqual([empty.items, empty.scanned, empty.nextPageToken], [[], 3, "p3"]);
    calls.length = 0;
    // `limit` counts items, not pages: the empty pages do not use it up.
    assert.deepEqual((await collect(c.list("/a-1", { filter: "true", limit: 2 }))).map((i) => i.value), [1, 9]);
    assert.deepEqual(calls.map((r) => r.url.searchParams.get("limit")), ["2", "1", "1", "1"]);
    // A server from before filters says nothing of `scanned`.
    const old = new Client("http://db", { fetch: scripted(() => json(200, { items: [] })) });
    assert.equal((await old.listPage("/a-1")).scanned, null);
    await assert.rejects(c.listPage("/a-1", { filter: 1 as unknown as string }), TypeError);
  });

  test("count follows pages and sums", async () => {
    const calls: Call[] = [];
    const c = new Client("http://db", { fetch: scripted(paged, calls) });
    assert.equal(await c.count("/a-1", { filter: "value.n > 1", maxScan: 10, gte: "/a-1/x-1" }), 9);
    const base = { count: "true", filter: "value.n > 1", max_scan: "10", gte: "/a-1/x-1" };
    assert.deepEqual(calls.map(params), [base, { ...base, page_token: "c2" }, { ...base, page_token: "c3" }]);
    assert.ok(calls.every((r) => r.url.pathname === "/v1/list/a-1"));
    calls.length = 0;
    assert.equal(await c.count(KeyPath.parse("/a-1/x"), { children: true }), 9);
    assert.deepEqual(params(calls[0]!), { children: "true", count: "true" });
    const aborted = new AbortController();
    aborted.abort(new Error("stop"));
    await assert.rejects(c.count("/a-1", { signal: aborted.signal }), /stop/);
  });

  test("get and getMany send fields and the filter", async () => {
    const calls: Call[] = [];
    const c = new Client("http://db", {
      fetch: scripted(({ url }) => {
        // Items the filter does not match are left out, like missing ones.
        if (url.pathname === "/v1/get") return json(200, { items: [wireItem("/a-1/x-2", 1, { title: "b" })] });
        return json(200, wireItem("/a-1/x-1", 3, { title: "a" }));
      }, calls),
    });
    const got = await c.get<{ title: string }>("/a-1/x-1", { fields: ["title"] });
    assert.deepEqual([got?.value, got?.version], [{ title: "a" }, 3]);
    await c.get("/a-1/x-1", { fields: "title,author.name" });
    await c.get("/a-1/x-1");
    const many = await c.getMany(["/a-1/x-1", "/a-1/x-2", "/a-1/x-3"], { filter: "value.title == 'b'", fields: ["title"] });
    assert.deepEqual(many.map((i) => i?.value ?? null), [null, { title: "b" }, null]);
    await c.getMany(["/a-1/x-1"]);
    assert.deepEqual(calls.map(params), [{ fields: "title" }, { fields: "title,author.name" }, {}, { filter: "value.title == 'b'", fields: "title" }, {}]);
    assert.equal(calls[3]!.method, "POST");
    assert.deepEqual(calls[3]!.body, { paths: ["/a-1/x-1", "/a-1/x-2", "/a-1/x-3"] });
    await assert.rejects(c.get("/a-1/x-1", { fields: ["title", ""] }), RangeError);
    await assert.rejects(c.get("/a-1/x-1", { fields: [] }), RangeError);
  });

  test("filtered changes and watch", async () => {
    const calls: Call[] = [];
    const c = new Client("http://db", {
      fetch: scripted(({ url }) => {
        if (!url.searchParams.has("since")) return json(200, { changes: [], next_token: "N1" });
        return json(200, {
          changes: [
            { op: "put", item: wireItem("/a-1/x-1", 2, { status: "open" }) },
            { op: "delete", path: "/a-1/x-2", version: 5, left: true },
            { op: "delete", path: "/a-1/x-3", version: 1 },
          ],
          next_token: "N2",
        });
      }, calls),
    });
    const expr = 'value.status == "open"';
    const page = await c.changes("/a-1", { since: "N0", filter: expr, waitSeconds: 5 });
    const [put, left, deleted] = page.changes as [Change, Change, Change];
    assert.ok(put.op === "put" && (put.item.value as { status: string }).status === "open");
    assert.ok(left.op === "delete" && left.left === true && left.version === 5);
    assert.ok(deleted.op === "delete" && deleted.left === undefined);
    const watch = c.watch("/a-1", { filter: expr, waitSeconds: 5 });
    const got: Change[] = [];
    for await (const change of watch) {
      got.push(change);
      if (got.length === 3) break;
    }
    assert.deepEqual(got.map((g) => g.op), ["put", "delete", "delete"]);
    assert.deepEqual(params(calls[0]!), { filter: expr, since: "N0", wait: "5" });
    // The watch's first request (its start) and its long poll both carry the filter.
    assert.deepEqual(params(calls[1]!), { filter: expr });
    assert.deepEqual(params(calls[2]!), { filter: expr, since: "N1", wait: "5" });
  });

  test("an invalid filter is InvalidFilter with its position", async () => {
    const c = new Client("http://db", { fetch: scripted(() => invalidFilter(7)) });
    for (const call of [
      () => c.listPage("/a-1", { filter: "valu.x == 1" }),
      () => collect(c.list("/a-1", { filter: "valu.x == 1" })),
      () => c.count("/a-1", { filter: "valu.x == 1" }),
      () => c.getMany(["/a-1"], { filter: "valu.x == 1" }),
      () => c.changes("/a-1", { filter: "valu.x == 1" }),
      () => c.transaction(async (tx) => collect(tx.list("/a-1", { filter: "valu.x == 1" }))),
    ]) {
      const e = await rejects(call(), InvalidFilter);
      assert.ok(e instanceof InvalidRequest && e instanceof PathDBError);
      assert.deepEqual([e.status, e.code, e.position, e.name], [400, "invalid_filter", 7, "InvalidFilter"]);
      assert.equal(e.message, "undeclared reference to 'valu'");
    }
    const none = new Client("http://db", { fetch: scripted(() => invalidFilter()) });
    assert.equal((await rejects(none.listPage("/a-1", { filter: "(" }), InvalidFilter)).position, undefined);
  });
});

describe("filter requests in transactions", () => {
  test("tx.list iterates and sends the filter in its check", async () => {
    const calls: Call[] = [];
    const commits: Wire[][] = [];
    const c = new Client("http://db", { fetch: txServer(calls, commits) });
    const expr = 'value.status == "open"';
    const listed = await c.transaction(async (tx) => {
      const listing = tx.list<number>("/a-1", { filter: expr, maxScan: 3 });
      assert.ok(listing instanceof TransactionListing);
      const values: number[] = [];
      for await (const item of listing) values.push(item.value);
      return values;
    });
    assert.deepEqual(listed, [1, 9]);
    const lists = calls.filter((r) => r.url.pathname.startsWith("/v1/list/"));
    assert.deepEqual(lists.map((r) => r.url.searchParams.get("page_token")), [null, "p2", "p3", "p4"]);
    assert.ok(lists.every((r) => r.url.searchParams.get("filter") === expr && r.url.searchParams.get("max_scan") === "3"));
    assert.deepEqual(commits.at(-1), [
      { op: "check_list", prefix: "/a-1", changes_token: "C", seen: { "/a-1/x-1": 1, "/a-1/x-9": 2 }, filter: expr },
    ]);
    // One range with two filters is two listings, each checked with its own.
    await c.transaction(async (tx) => {
      await tx.listPage("/a-1", { filter: "true" });
      await tx.listPage("/a-1", { filter: "false" });
      await tx.listPage("/a-1");
    });
    assert.deepEqual(commits.at(-1)!.map((o) => [o.op, o.filter]), [["check_list", "true"], ["check_list", "false"], ["check_list", undefined]]);
    assert.deepEqual(new CheckList("/a-1", "T", { filter: "true" }).toWire(), { op: "check_list", prefix: "/a-1", changes_token: "T", filter: "true" });
  });

  test("tx.listPage reads one page, and a limit stops early", async () => {
    const calls: Call[] = [];
    const c = new Client("http://db", { fetch: txServer(calls, []) });
    const out = await c.transaction(async (tx) => {
      const first = await tx.listPage("/a-1", { filter: "true", pageSize: 1 });
      const second = await tx.listPage("/a-1", { filter: "true", pageSize: 1, pageToken: first.nextPageToken });
      const limited = (await collect(tx.list("/a-1", { limit: 1 }))).map((i) => i.value);
      return [first.scanned, second.items, second.nextPageToken, limited];
    });
    assert.deepEqual(out, [3, [], "p3", [1]]);
    assert.equal(calls.filter((r) => r.url.pathname.startsWith("/v1/list/")).length, 3);
  });

  test("the old page shape of tx.list still works, deprecated", async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error & { code?: string }) => warnings.push(`${w.name} ${w.code}`);
    process.on("warning", onWarning);
    try {
      const c = new Client("http://db", { fetch: txServer([], []) });
      const out = await c.transaction(async (tx) => {
        const listing = tx.list("/a-1");
        const page = await listing; // the first page, as tx.list used to resolve to
        const again = (await collect(listing)).map((i) => i.value); // from that page on, not past it
        const paged = await tx.list("/a-1", { pageToken: page.nextPageToken });
        return [page.items.map((i) => i.value), page.nextPageToken, page.changesToken, again, paged.items];
      });
      assert.deepEqual(out, [[1], "p2", "C", [1, 9], []]);
      await new Promise((resolve) => setImmediate(resolve)); // warnings are emitted on the next tick
      assert.ok(warnings.includes("DeprecationWarning PATHDB_TX_LIST_PAGE"), String(warnings));
      assert.ok(warnings.includes("DeprecationWarning PATHDB_TX_LIST_PAGE_TOKEN"), String(warnings));
    } finally {
      process.off("warning", onWarning);
    }
  });

  test("a filtered listing refuses what the transaction put in its range", async () => {
    const calls: Call[] = [];
    const commits: Wire[][] = [];
    const c = new Client("http://db", { fetch: txServer(calls, commits) });
    const refused = await rejects(
      c.transaction(async (tx) => {
        tx.put("/a-1/x-5", { status: "open" });
        return collect(tx.list("/a-1", { filter: "true" }));
      }),
      InvalidRequest,
    );
    assert.match(refused.message, /cannot tell whether a value put here matches/);
    assert.equal(commits.length, 0);
    const kept = await c.transaction(async (tx) => {
      tx.delete("/a-1/x-1"); // a delete leaves the listing, whatever the filter
      tx.put("/b-1/x-1", 1); // outside the range
      return (await collect(tx.list("/a-1", { filter: "true" }))).map((i) => i.path.toString());
    });
    assert.deepEqual(kept, ["/a-1/x-9"]);
    const counted = await c.transaction(async (tx) => {
      const n = (await collect(tx.list("/a-1", { filter: "true" }))).length;
      tx.put("/a-1/x-5", { status: "open" }); // after the listing: fine
      return n;
    });
    assert.equal(counted, 2);
    assert.deepEqual(commits.at(-1)!.map((o) => o.op), ["put", "check_list"]);
    const unfiltered = await c.transaction(async (tx) => {
      tx.put("/a-1/x-5", 5);
      return (await collect(tx.list("/a-1"))).map((i) => i.path.toString()); // without a filter, shown in order
    });
    assert.deepEqual(unfiltered, ["/a-1/x-1", "/a-1/x-5", "/a-1/x-9"]);
  });
});

describe("KeyPath.equals", () => {
  test("compares with paths and text; === does not", () => {
    const path = KeyPath.parse("/ward-1/doc-0");
    assert.ok(path.equals("/ward-1/doc-0"));
    assert.ok(path.equals(new KeyPath().add("ward", 1).add("doc", 0)));
    assert.ok(path !== (KeyPath.parse("/ward-1/doc-0") as unknown)); // objects: never compare paths with ===
    assert.ok(new KeyPath().add("tag", "7").equals("/tag-%7") && !new KeyPath().add("tag", "7").equals("/tag-7"));
    assert.ok(new KeyPath().add("tag", 7).equals("/tag-7") && !new KeyPath().add("tag", 7).equals("/tag-%7"));
    assert.ok(KeyPath.parse("/a-b").equals("/a-%b")); // text is parsed: any spelling of the path
    for (const other of ["/ward-1/doc-00", "not a path", "", null, undefined]) assert.equal(path.equals(other), false);
    assert.ok(["/x-1", "/ward-1/doc-0"].some((t) => path.equals(t)));
  });
});

describe("filters against a server", () => {
  let server: Server;
  let db: Client;

  before(async () => {
    server = await startServer();
    db = new Client(server.url, { token: TOKEN });
  });
  after(async () => {
    await server?.stop();
  });

  type Order = { status: string; total: number; title: string; author: { name: string; age: number } };
  const OPEN_AND_BIG = 'value.status == "open" && value.total > 100';
  async function orders(g: KeyPath): Promise<void> {
    const rows: [string, number][] = [["open", 50], ["open", 150], ["closed", 500], ["open", 300], ["closed", 20]];
    for (const [i, [status, total]] of rows.entries()) {
      await db.put<Order>(g.add("order", i + 1), { status, total, title: `t${i + 1}`, author: { name: `a${i + 1}`, age: i + 1 } });
    }
  }

  test("item paths equal their text (any server)", async () => {
    const g = group();
    await db.put(g.add("doc", 0), { n: 0 });
    await db.put(g.add("doc", 1), { n: 1 });
    const text = `${g}/doc-0`;
    const found = (await collect(db.list(g))).filter((i) => i.path.equals(text));
    assert.deepEqual(found.map((i) => i.value), [{ n: 0 }]);
    const others = await db.transaction(async (tx) => (await collect(tx.list(g))).filter((i) => !i.path.equals(text)).map((i) => i.value));
    assert.deepEqual(others, [{ n: 1 }]);
  });

  test("a filtered listing", async () => {
    const g = group();
    await orders(g);
    await db.put(g.add("note", 1), { status: "open" }); // no total: an error is no match
    const listed = await collect(db.list<Order>(g, { filter: OPEN_AND_BIG }));
    assert.deepEqual(listed.map((i) => i.path.toString()), [g.add("order", 2).toString(), g.add("order", 4).toString()]);
    assert.deepEqual((await collect(db.list<Order>(g, { filter: OPEN_AND_BIG, reverse: true }))).map((i) => i.value.total), [300, 150]);
    const projected = await collect(db.list(g.add("order"), { fields: ["title", "author.name"], filter: "value.total >= 300" }));
    assert.deepEqual(projected.map((i) => i.value), [{ title: "t3", author: { name: "a3" } }, { title: "t4", author: { name: "a4" } }]);
    assert.deepEqual((await collect(db.list(g, { filter: "ids.order == 5" }))).map((i) => i.path.toString()), [g.add("order", 5).toString()]);
    assert.equal((await collect(db.list(g, { filter: `path.startsWith("${g}/order")` }))).length, 5);
    await db.put(g.add("order", 1), { status: "open", total: 51 });
    assert.deepEqual((await collect(db.list(g, { filter: "version == 2u" }))).map((i) => i.path.toString()), [g.add("order", 1).toString()]);
    assert.equal((await collect(db.list(g, { filter: "created_at > 0 && modified_at >= created_at" }))).length, 6);
    const page = await db.listPage(g, { filter: OPEN_AND_BIG });
    assert.deepEqual([page.scanned, page.nextPageToken, page.items.length], [6, null, 2]);
  });

  test("filtered pages may be empty, and iterators and counts follow them", async () => {
    const g = group();
    for (let i = 1; i <= 30; i++) await db.put(g.add("n", i), { n: i });
    const expr = "value.n % 10 == 0";
    const first = await db.listPage(g, { filter: expr, maxScan: 3 });
    assert.deepEqual([first.items, first.scanned], [[], 3]);
    assert.notEqual(first.nextPageToken, null);
    assert.deepEqual((await collect(db.list<{ n: number }>(g, { filter: expr, maxScan: 3 }))).map((i) => i.value.n), [10, 20, 30]);
    assert.deepEqual((await collect(db.list<{ n: number }>(g, { filter: expr, maxScan: 3, limit: 2 }))).map((i) => i.value.n), [10, 20]);
    assert.equal(await db.count(g, { filter: expr }), 3);
    assert.equal(await db.count(g, { filter: expr, maxScan: 4 }), 3); // 8 requests, added up
    assert.equal(await db.count(g), 30);
    assert.equal(await db.count(g, { filter: "value.n > 25", gt: g.add("n", 27) }), 3);
  });

  test("get with fields, getMany with a filter", async () => {
    const g = group();
    await orders(g);
    const got = await db.get(g.add("order", 2), { fields: ["title", "author.name", "missing"] });
    const full = await db.get(g.add("order", 2));
    assert.deepEqual(got?.value, { title: "t2", author: { name: "a2" } });
    assert.equal(got?.version, full?.version);
    const many = await db.getMany([1, 2, 3, 9].map((i) => g.add("order", i)), { filter: OPEN_AND_BIG, fields: "total" });
    assert.deepEqual(many.map((i) => i?.value ?? null), [null, { total: 150 }, null, null]);
  });

  test("invalid filters name their position", async () => {
    const g = group();
    const e = await rejects(db.listPage(g, { filter: "value.total > " }), InvalidFilter);
    assert.deepEqual([e.code, e.status], ["invalid_filter", 400]);
    assert.ok(typeof e.position === "number" && e.position >= 0);
    assert.equal((await rejects(collect(db.list(g, { filter: 'valu.status == "open"' })), InvalidFilter)).position, 0);
    await rejects(db.count(g, { filter: "" }), InvalidFilter);
    await rejects(db.getMany([g.add("x", 1)], { filter: "(" }), InvalidFilter);
    await rejects(db.changes(g, { filter: "1 +" }), InvalidFilter);
  });

  test("a filtered change feed", async () => {
    const g = group();
    const expr = 'value.status == "open"';
    const [a, b, c] = [1, 2, 3].map((i) => g.add("order", i)) as [KeyPath, KeyPath, KeyPath];
    await db.put(a, { status: "open" });
    await db.put(b, { status: "closed" });
    const start = (await db.changes(g)).nextToken;
    await db.put(b, { status: "closed", n: 1 }); // matches neither before nor after: left out
    await db.put(c, { status: "open" }); // enters
    await db.put(a, { status: "open", n: 1 }); // changes while matching
    await db.put(a, { status: "closed" }); // leaves
    await db.delete(c); // deleted while matching
    const page = await db.changes(g, { since: start, filter: expr });
    assert.deepEqual(
      page.changes.map((ch) => [ch.op, ch.path.toString(), ch.version]),
      [["put", c.toString(), 1], ["put", a.toString(), 2], ["delete", a.toString(), 3], ["delete", c.toString(), 1]],
    );
    const left = page.changes[2]!;
    assert.ok(left.op === "delete" && left.left === true); // it left the result; not deleted
    const watched: Change[] = [];
    for await (const change of db.watch(g, { since: start, filter: expr, waitSeconds: 1 })) {
      watched.push(change);
      if (watched.length === 4) break;
    }
    assert.deepEqual(watched.map((w) => [w.path.toString(), w.version]), [[c.toString(), 1], [a.toString(), 2], [a.toString(), 3], [c.toString(), 1]]);
  });

  test("a filtered listing's check fails only when the result changed", async () => {
    const g = group();
    await orders(g);
    const other = new Client(server.url, { token: TOKEN });
    const expr = 'value.status == "open"';
    const run = async (write: () => Promise<unknown>): Promise<number> => {
      let runs = 0;
      await db.transaction(async (tx) => {
        runs++;
        const open: Item[] = await collect(tx.list(g.add("order"), { filter: expr }));
        if (runs === 1) await write();
        tx.put(g.add("summary", 1), { open: open.length });
      });
      return runs;
    };
    // A closed order changes and stays closed: not in the filtered result, the commit holds.
    assert.equal(await run(() => other.put(g.add("order", 3), { status: "closed", total: 1 })), 1);
    // A closed order opens: it enters the result, the callback runs again.
    assert.equal(await run(() => other.put(g.add("order", 5), { status: "open", total: 1 })), 2);
    assert.deepEqual((await db.get(g.add("summary", 1)))?.value, { open: 4 });
    const closed = await db.transaction(async (tx) => {
      const page = await tx.listPage(g.add("order"), { filter: 'value.status == "closed"' });
      const all = await collect(tx.list(g.add("order"), { filter: 'value.status == "closed"' }));
      return [...all.map((i) => i.path.toString()), page.items.length];
    });
    assert.deepEqual(closed, [g.add("order", 3).toString(), 1]);
  });
});
