/** The README's quick start runs as written, against a test server. */

import assert from "node:assert/strict";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { pathToFileURL } from "node:url";

import { REPO, TOKEN, startServer, type Server } from "./server.js";

let server: Server;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server?.stop();
});

test("README quick start", async () => {
  const readme = readFileSync(join(REPO, "clients/typescript/README.md"), "utf8");
  const snippet = /```ts\n([\s\S]*?)```/.exec(readme)?.[1];
  assert.ok(snippet);
  assert.ok(snippet.trim().split("\n").length <= 13);
  const index = pathToFileURL(join(REPO, "clients/typescript/dist/src/index.js")).href;
  const code = snippet
    .replace('"@pathdb/client"', JSON.stringify(index))
    .replace('new Client("http://127.0.0.1:7070")', `new Client(${JSON.stringify(server.url)}, { token: "${TOKEN}" })`);
  assert.notEqual(code, snippet);
  const file = join(REPO, "clients/typescript/dist/test", `readme-snippet-${process.pid}.mjs`);
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
  assert.deepEqual(printed, [["/user-7/post-2"], ["/user-7/post-10"], [true], [[1500, 20]]]);
});
