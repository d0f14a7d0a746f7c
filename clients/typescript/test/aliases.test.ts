/**
 * Alias paths (docs/aliases.md) against a real `pathdb serve`, and their errors. Definitions and
 * alias paths apply to the whole database, so each test uses namespaces of its own names:
 * `ns_<random>` for its items, and others for the elements of its alias paths.
 */

import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";

import {
  AliasBuilding,
  AliasInvalid,
  AliasTaken,
  Client,
  InvalidRequest,
  KeyPath,
  NotFound,
  PathDBError,
  PathIsAlias,
  Put,
  Unavailable,
  type Item,
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

/** Builds read the whole database, which the other tests fill: time enough for a slow machine. */
const BUILD_MS = 60_000;

/** A namespace no other test uses. */
const fresh = (prefix = "ns_") => prefix + randomUUID().replaceAll("-", "").slice(0, 12);

/** Paths as text, to compare (a `KeyPath`'s elements are private). */
const text = (path: KeyPath | undefined | null) => path?.toString();

describe("alias paths", () => {
  test("reads, listings, writes and the change feed through aliases", async () => {
    const [ns, email, status] = [fresh(), fresh("email_"), fresh("status_")];
    const [byEmail, byStatus] = [`/${email}-{email}`, `/${status}-{status}/${ns}-{@${ns}}`];
    const defined = await admin.putNamespace(ns, { aliases: [byEmail, { path: byStatus }] });
    assert.deepEqual(
      defined.aliases.map((a) => a.path),
      [byEmail, byStatus],
    );
    const ready = await admin.waitForAliases(ns, { timeoutMs: BUILD_MS });
    assert.deepEqual(
      ready.aliases.map((a) => [a.path, a.state, a.conflicts]),
      [
        [byEmail, "ready", []],
        [byStatus, "ready", []],
      ],
    );
    const g = group();
    const ann = await db.put(g.add(ns, 1), { email: "ann@example.org", status: "open" });
    await db.put(g.add(ns, 2), { email: "bo@example.org", status: "open" });
    await db.put(g.add(ns, 3), { email: "cy@example.org", status: "shipped" });

    // A get through an alias answers the item: its own path, and the alias read.
    const alias = new KeyPath().add(email, "ann@example.org");
    const got = await db.get(alias);
    assert.deepEqual([text(got?.path), text(got?.alias), got?.version, got?.value], [text(ann.path), text(alias), 1, ann.value]);
    assert.ok(!("alias" in ann));
    assert.deepEqual(await db.get(ann.path), ann);
    assert.equal(await db.get(new KeyPath().add(email, "nobody@example.org")), null);

    // A listing of an alias prefix: the items in alias order, each with its alias.
    const open = new KeyPath().add(status, "open");
    const first = await db.listPage(open);
    assert.deepEqual(
      first.items.map((i) => [text(i.path), text(i.alias)]),
      [
        [text(g.add(ns, 1)), text(open.add(ns, 1))],
        [text(g.add(ns, 2)), text(open.add(ns, 2))],
      ],
    );
    assert.deepEqual(
      (await collect(db.list(open, { reverse: true }))).map((i) => text(i.path)),
      [text(g.add(ns, 2)), text(g.add(ns, 1))],
    );

    // getMany answers every path asked, an alias as well.
    const many = await db.getMany([alias, ann.path, new KeyPath().add(email, "nobody@example.org")]);
    assert.deepEqual(
      many.map((i) => (i === null ? null : [text(i.path), text(i.alias)])),
      [[text(ann.path), text(alias)], [text(ann.path), undefined], null],
    );

    // A patch and a delete through an alias act on the item; the feed of an alias prefix sees
    // items leave it.
    const patched = await db.merge(alias, { status: "shipped" });
    assert.deepEqual([text(patched.path), patched.version, patched.alias], [text(ann.path), 2, undefined]);
    const deleted = await db.delete(new KeyPath().add(email, "bo@example.org"));
    assert.equal(text(deleted?.path), text(g.add(ns, 2)));
    assert.equal(await db.get(g.add(ns, 2)), null);
    const { changes } = await db.changes(open, { since: first.changesToken });
    assert.deepEqual(
      changes.map((c) => [c.op, text(c.path), c.version, c.op === "delete" ? text(c.alias) : undefined]),
      [
        ["delete", text(g.add(ns, 1)), 1, text(open.add(ns, 1))],
        ["delete", text(g.add(ns, 2)), 1, text(open.add(ns, 2))],
      ],
    );
    await db.put(g.add(ns, 4), { status: "open" });
    const fed = (await db.changes(open, { since: first.changesToken })).changes.at(-1);
    assert.ok(fed?.op === "put");
    assert.deepEqual([text(fed.path), text(fed.item.alias)], [text(g.add(ns, 4)), text(open.add(ns, 4))]);
  });

  test("AliasTaken, PathIsAlias, AliasInvalid and invalid templates", async () => {
    const [ns, email] = [fresh(), fresh("email_")];
    await admin.putNamespace(ns, { aliases: [`/${email}-{email}`] });
    await admin.waitForAliases(ns, { timeoutMs: BUILD_MS });
    const g = group();
    const ann = await db.put(g.add(ns, 1), { email: "ann@example.org" });
    const alias = new KeyPath().add(email, "ann@example.org");

    const taken = await rejects(db.put(g.add(ns, 2), { email: "ann@example.org" }), AliasTaken);
    assert.ok(taken instanceof PathDBError);
    assert.deepEqual(
      [taken.status, taken.code, text(taken.alias), text(taken.holder), taken.index],
      [409, "alias_taken", text(alias), text(ann.path), undefined],
    );
    assert.equal(await db.get(g.add(ns, 2)), null); // nothing written
    const inTransaction = await rejects(db.transact([new Put(g.add("other", 1), {}), new Put(g.add(ns, 3), { email: "ann@example.org" })]), AliasTaken);
    assert.deepEqual([inTransaction.index, text(inTransaction.holder)], [1, text(ann.path)]);
    assert.equal(await db.get(g.add("other", 1)), null); // none of the others either

    const isAlias = await rejects(db.put(alias, { email: "ann@example.org" }), PathIsAlias);
    assert.deepEqual([isAlias.status, isAlias.code, text(isAlias.path), text(isAlias.item)], [409, "path_is_alias", text(alias), text(ann.path)]);

    const invalid = await rejects(db.put(g.add(ns, 4), { email: true }), AliasInvalid);
    assert.deepEqual([invalid.status, invalid.code, text(invalid.path), invalid.member, invalid.index], [422, "alias_invalid", text(g.add(ns, 4)), "email", undefined]);
    assert.equal((await rejects(db.transact([new Put(g.add(ns, 5), { email: 1.5 })]), AliasInvalid)).index, 0);
    assert.equal(await db.get(g.add(ns, 4)), null);

    // Invalid templates: refused by the dry run as by the PUT.
    const refused = await rejects(admin.checkNamespace(fresh(), { aliases: ["/email-fixed"] }), InvalidRequest);
    assert.deepEqual([refused.status, refused.code], [400, "invalid_request"]);
    await rejects(admin.putNamespace(fresh(), { aliases: ["email-{email}"] }), InvalidRequest);
    await assert.rejects(admin.putNamespace(fresh(), { aliases: [{ template: "/e-{x}" } as never] }), TypeError);
  });

  test("a build in conflict, its retry, and a template removed", async () => {
    const [ns, email] = [fresh(), fresh("email_")];
    const template = `/${email}-{email}`;
    const g = group();
    await db.put(g.add(ns, 1), { email: "same@example.org" });
    await db.put(g.add(ns, 2), { email: "same@example.org" });
    await db.put(g.add(ns, 3), { email: "other@example.org" });
    await admin.putNamespace(ns, { aliases: [template] });
    const stopped = await rejects(admin.waitForAliases(ns, { timeoutMs: BUILD_MS, intervalMs: 100 }), AliasBuilding);
    assert.deepEqual([stopped.state, stopped.template, stopped.status], ["conflict", template, undefined]);
    assert.match(stopped.message, /same@example\.org/);
    const definition = await admin.getNamespace(ns);
    assert.equal(definition?.aliases.length, 1);
    const build = definition.aliases[0]!;
    assert.equal(build.state, "conflict");
    assert.deepEqual(
      build.conflicts.map((c) => [text(c.alias), c.items.map(text)]),
      [[text(new KeyPath().add(email, "same@example.org")), [text(g.add(ns, 1)), text(g.add(ns, 2))]]],
    );

    // A read through the template is answered 503 alias_building, thrown at once.
    const reading = await rejects(db.get(new KeyPath().add(email, "other@example.org")), AliasBuilding);
    assert.ok(reading instanceof Unavailable);
    assert.deepEqual([reading.status, reading.code, reading.template, reading.state], [503, "alias_building", template, "conflict"]);

    await db.merge(g.add(ns, 2), { email: "two@example.org" });
    const retried = await admin.retryAliasBuild(ns, template);
    assert.equal(retried.namespace, ns);
    assert.ok(["building", "ready"].includes(retried.aliases[0]!.state));
    const ready = await admin.waitForAliases(ns, { timeoutMs: BUILD_MS, intervalMs: 100 });
    assert.deepEqual(
      ready.aliases.map((a) => [a.path, a.state]),
      [[template, "ready"]],
    );
    const found: Item | null = await db.get(new KeyPath().add(email, "same@example.org"));
    assert.equal(text(found?.path), text(g.add(ns, 1)));

    // A build that is not in conflict is not retried.
    const notInConflict = await rejects(admin.retryAliasBuild(ns, template), InvalidRequest);
    assert.deepEqual([notInConflict.status, notInConflict.code], [400, "invalid_request"]);
    await rejects(admin.retryAliasBuild(fresh(), template), NotFound);
    await rejects(admin.waitForAliases(fresh()), NotFound);
    await assert.rejects(admin.waitForAliases(ns, { intervalMs: 0 }), RangeError);

    // A template removed is gone for reads at once; its aliases are deleted after.
    const removed = await admin.putNamespace(ns);
    assert.ok(removed.aliases.every((a) => a.state === "removing"));
    await admin.waitForAliases(ns);
    assert.equal(await db.get(new KeyPath().add(email, "same@example.org")), null);
  });
});

describe("alias errors on the wire", () => {
  const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
    new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json", ...headers } });
  function scripted(answers: Response[], calls: { url: string; init: RequestInit }[]): typeof fetch {
    return (async (url: string | URL | Request, init?: RequestInit) => {
      calls.push({ url: String(url), init: init ?? {} });
      const answer = answers.shift();
      assert.ok(answer, "more requests than scripted answers");
      return answer;
    }) as typeof fetch;
  }
  const building = {
    code: "alias_building",
    message: "alias /e-{email} of namespace u is building: 3 items checked so far",
    template: "/e-{email}",
    state: "building",
    checked: 3,
  };
  const definition = {
    namespace: "u",
    version: 1,
    created_at: 0,
    modified_at: 0,
    schema: null,
    history: null,
    description: null,
    aliases: [{ path: "/e-{email}", state: "building", checked: 3, written: 2 }],
  };

  test("alias_building is not retried; definitions go on the wire", async () => {
    const calls: { url: string; init: RequestInit }[] = [];
    let c = new Client("http://db", {
      backoffMs: 1,
      fetch: scripted([json(503, { error: building }, { "Retry-After": "1" }), json(200, definition), json(200, definition)], calls),
    });
    const raised = await rejects(c.get("/e-a"), AliasBuilding);
    assert.deepEqual([raised.template, raised.state, raised.checked], ["/e-{email}", "building", 3]);
    const stored = await c.putNamespace("u", { aliases: ["/e-{email}", { path: "/f-{@u}" }] });
    assert.deepEqual(stored.aliases, [{ path: "/e-{email}", state: "building", checked: 3, written: 2, conflicts: [] }]);
    const waited = await rejects(c.waitForAliases("u", { timeoutMs: 0 }), AliasBuilding);
    assert.deepEqual([waited.state, waited.status, waited.checked], ["building", undefined, 3]);
    assert.equal(calls.length, 3); // the 503 was not retried
    assert.equal(calls[1]!.init.body, '{"aliases":[{"path":"/e-{email}"},{"path":"/f-{@u}"}]}');

    calls.length = 0;
    c = new Client("http://db", { fetch: scripted([json(200, definition), json(200, definition)], calls) });
    await c.putNamespace("u", { description: "no aliases", aliases: [] });
    await c.retryAliasBuild("u", "/e-{email}");
    assert.equal(calls[0]!.init.body, '{"description":"no aliases"}'); // an empty list is left out
    assert.deepEqual([calls[1]!.init.method, calls[1]!.url], ["POST", "http://db/v1/namespaces/u/aliases/retry"]);
    assert.equal(calls[1]!.init.body, '{"path":"/e-{email}"}');
  });

  test("errorFor reads an alias error's members", () => {
    const taken = errorFor(409, "alias_taken", "alias_taken!", 2, { alias: "/email-a@x.org", holder: "/user-1" });
    assert.ok(taken instanceof AliasTaken);
    assert.deepEqual([text(taken.alias), text(taken.holder), taken.index, taken.status], ["/email-a@x.org", "/user-1", 2, 409]);
    const isAlias = errorFor(409, "path_is_alias", "x", undefined, { path: "/email-a@x.org", item: "/user-1" });
    assert.ok(isAlias instanceof PathIsAlias);
    assert.deepEqual([text(isAlias.path), text(isAlias.item)], ["/email-a@x.org", "/user-1"]);
    const invalid = errorFor(422, "alias_invalid", "x", undefined, { path: "/user-4", member: "address.city" });
    assert.ok(invalid instanceof AliasInvalid && !(invalid instanceof InvalidRequest));
    assert.deepEqual([text(invalid.path), invalid.member, invalid.status], ["/user-4", "address.city", 422]);
    const stopped = errorFor(503, "alias_building", "x", undefined, { template: "/email-{email}", state: "conflict", checked: 3 });
    assert.ok(stopped instanceof AliasBuilding && stopped instanceof Unavailable);
    assert.deepEqual([stopped.template, stopped.state, stopped.checked, stopped.name], ["/email-{email}", "conflict", 3, "AliasBuilding"]);
    // Members missing or not what they should be: undefined, the kind stays.
    const bare = errorFor(409, "alias_taken", "x", undefined, { alias: "not a path", holder: 7 });
    assert.ok(bare instanceof AliasTaken);
    assert.deepEqual([bare.alias, bare.holder], [undefined, undefined]);
    const odd = errorFor(503, "alias_building", "x", undefined, { checked: true, state: 1 });
    assert.ok(odd instanceof AliasBuilding);
    assert.deepEqual([odd.template, odd.state, odd.checked], [undefined, undefined, undefined]);
    assert.ok(errorFor(422, "alias_invalid", "no detail") instanceof AliasInvalid);
  });
});
