/** The README's snippets run as written, against a test server. */

import assert from "node:assert/strict";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { pathToFileURL } from "node:url";

import { ADMIN_TOKEN, REPO, TOKEN, startServer, type Server } from "./server.js";

let server: Server;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server?.stop();
});

/**
 * The README's TypeScript snippets: the quick start, following changes, filters, generated ids,
 * partial updates, transactions, namespaces, alias paths, roles and tokens. (Blocks marked ```typescript,
 * the use of generated code, are shown, not run: scripts/codegen.sh type-checks and runs a program
 * like them.)
 */
function snippets(): string[] {
  const readme = readFileSync(join(REPO, "clients/typescript/README.md"), "utf8");
  const found = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1] ?? "");
  assert.equal(found.length, 9);
  return found;
}

/** Runs a snippet (as an ES module importing the built client) against the test server; what it logged. */
async function run(snippet: string, name: string, token = TOKEN): Promise<unknown[][]> {
  const index = pathToFileURL(join(REPO, "clients/typescript/dist/src/index.js")).href;
  const code = snippet
    .replace('"@pathdb/client"', JSON.stringify(index))
    .replace('new Client("http://127.0.0.1:7070")', `new Client(${JSON.stringify(server.url)}, { token: "${token}" })`);
  assert.notEqual(code, snippet);
  const file = join(REPO, "clients/typescript/dist/test", `readme-${name}-${process.pid}.mjs`);
  writeFileSync(file, code);
  const printed: unknown[][] = [];
  const log = console.log;
  console.log = (...args: unknown[]) => printed.push(args);
  try {
    await import(pathToFileURL(file).href);
  } finally {
    console.log = log;
    rmSync(file);
  }
  return printed;
}

test("README quick start", async () => {
  const snippet = snippets()[0]!;
  assert.ok(snippet.trim().split("\n").length <= 13);
  // A newcomer runs it again, on the same server: it must pass again (a group of its own per
  // run), and stay off the paths of the repository's README.
  assert.ok(!snippet.includes("/user-7") && !snippet.includes('"user", 7'));
  for (const round of [1, 2]) {
    const printed = await run(snippet, `quick-start-${round}`);
    assert.equal(printed.length, 4);
    const [post2, post10] = [String(printed[0]?.[0]), String(printed[1]?.[0])];
    assert.match(post2, /^\/team-[0-9a-f-]{36}\/post-2$/);
    assert.equal(post10, post2.replace(/2$/, "10"));
    assert.deepEqual(printed.slice(2), [[true], [[1500, 20]]]);
  }
});

test("README follow changes", async () => {
  const snippet = snippets()[1]!;
  assert.ok(snippet.trim().split("\n").length <= 17);
  const code = snippet.replace('"user", 8', '"user", 8000').replaceAll("/user-8/", "/user-8000/");
  assert.deepEqual(await run(code, "follow"), [[{ title: "from another writer" }]]);
});

test("README filters (needs a server with filters)", async () => {
  const snippet = snippets()[2]!;
  assert.ok(snippet.trim().split("\n").length <= 17);
  const code = snippet.replaceAll("/shop-3/", "/shop-3000/");
  assert.notEqual(code, snippet);
  for (const round of [1, 2]) {
    // It writes the same orders again.
    assert.deepEqual(await run(code, `filters-${round}`), [[{ title: "order 2" }], [2], ["invalid_filter"], [true]]);
  }
});

test("README generated ids", async () => {
  const snippet = snippets()[3]!;
  assert.ok(snippet.trim().split("\n").length <= 11);
  const code = snippet.replaceAll('"/user-9"', '"/user-9000"');
  assert.deepEqual(await run(code, "ids"), [["/user-9000/post-1"], ["/user-9000/order-1/line-1"]]);
});

test("README partial updates", async () => {
  const snippet = snippets()[4]!;
  assert.ok(snippet.trim().split("\n").length <= 12);
  const code = snippet.replaceAll('"/user-10/', '"/user-10000/');
  assert.notEqual(code, snippet);
  assert.deepEqual(await run(code, "patch"), [[{ tags: ["a", "b"], title: "hello", views: 2 }], [true], [{ posts: 1 }]]);
});

test("README transactions", async () => {
  const snippet = snippets()[5]!;
  assert.ok(snippet.trim().split("\n").length <= 13);
  const code = snippet.replaceAll('"/shop-1/', '"/shop-1000/');
  assert.notEqual(code, snippet);
  assert.deepEqual(await run(code, "transactions"), [[true, true, false]]);
});

test("README namespaces", async () => {
  const snippet = snippets()[6]!;
  assert.ok(snippet.trim().split("\n").length <= 17);
  const code = snippet.replaceAll('"/club-1/', '"/club-1000/');
  assert.notEqual(code, snippet);
  for (const round of [1, 2]) {
    // It removes its definition again, so it runs again.
    assert.deepEqual(await run(code, `namespaces-${round}`, ADMIN_TOKEN), [[1], [[["/age", "/properties/age/type"]]], ["/club-1000/person-1"]]);
  }
});

test("README alias paths", async () => {
  const snippet = snippets()[7]!;
  assert.ok(snippet.trim().split("\n").length <= 14);
  const code = snippet.replaceAll('"/club-2/', '"/club-2000/');
  assert.notEqual(code, snippet);
  const printed = [["/club-2000/member-1", "/email-ann@example.org"], ["/club-2000/member-1"], ["/club-2000/member-2"], ["/club-2000/member-1"]];
  for (const round of [1, 2]) {
    // A second run finds it all in place.
    assert.deepEqual(await run(code, `aliases-${round}`, ADMIN_TOKEN), printed);
  }
});

test("README roles and tokens", async () => {
  const snippet = snippets()[8]!;
  assert.ok(snippet.trim().split("\n").length <= 16);
  const code = snippet.replaceAll('"member"', '"member_readme"');
  assert.notEqual(code, snippet);
  for (const round of [1, 2]) {
    // The role is replaced, a new token issued.
    assert.deepEqual(await run(code, `roles-${round}`, ADMIN_TOKEN), [["write", "/team-8/doc-1"], ["member_readme"], ["unknown_token"]]);
  }
});
