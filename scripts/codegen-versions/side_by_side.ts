/**
 * One client of the side-by-side run of two schema versions in scripts/codegen.sh: the TypeScript
 * twin of side_by_side.py (see there), copied next to a `gen/` directory that `pathdb codegen
 * typescript` generated from one definition version of the namespace `user`, and compiled with it.
 *
 *   node main.js BUNDLE URL SECONDS LABEL
 *
 * BUNDLE is gen/pathdb-namespaces.json (its schema is the version's). Prints one JSON line of
 * counts; exits 1 on a misfit or an error answer that was not deliberate.
 */

import { readFileSync } from "node:fs";

import { NotFound, PathDBError, SchemaViolation, type Item } from "@pathdb/client";
import { SCHEMA_VERSIONS, createClient, type User, userPath, userPrefix } from "./gen/index.js";

type Schema = {
  type?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: boolean;
  enum?: unknown[];
  minLength?: number;
};

const ITEMS = 16;
const PARENT = "/app-1";
const NAMES = ["Ada", "Bob", "Cy", "Di", "Eve"];
const KEYWORDS = new Set(["type", "properties", "required", "additionalProperties", "enum", "minLength"]);
const TYPES: Record<string, (v: unknown) => boolean> = {
  object: (v) => typeof v === "object" && v !== null && !Array.isArray(v),
  string: (v) => typeof v === "string",
  integer: (v) => Number.isInteger(v),
  boolean: (v) => typeof v === "boolean",
};

/** How `value` does not fit `schema` (with the keywords of KEYWORDS only). */
function misfits(schema: Schema, value: unknown, at = ""): string[] {
  const where = at || "the value";
  const unknown = Object.keys(schema).filter((k) => !KEYWORDS.has(k));
  if (unknown.length > 0) return [`${where}: the check does not know the keywords ${unknown.join(", ")}`];
  if (schema.type !== undefined && !TYPES[schema.type]!(value)) return [`${where}: ${JSON.stringify(value)} is not of type ${schema.type}`];
  const out: string[] = [];
  if (schema.enum !== undefined && !schema.enum.includes(value)) out.push(`${where}: ${JSON.stringify(value)} is not one of ${JSON.stringify(schema.enum)}`);
  if (typeof value === "string" && value.length < (schema.minLength ?? 0)) out.push(`${where}: ${JSON.stringify(value)} is too short`);
  if (TYPES.object!(value)) {
    const object = value as Record<string, unknown>;
    const properties = schema.properties ?? {};
    for (const name of schema.required ?? []) if (!(name in object)) out.push(`${where}: no ${JSON.stringify(name)}`);
    for (const [name, member] of Object.entries(object)) {
      if (name in properties) out.push(...misfits(properties[name]!, member, `${at}/${name}`));
      else if (schema.additionalProperties === false) out.push(`${where}: ${JSON.stringify(name)} is not one of its members`);
    }
  }
  return out;
}

/** A deterministic generator (mulberry32), seeded from the label. */
function generator(seed: string): () => number {
  let a = [...seed].reduce((h, c) => Math.imul(h ^ c.charCodeAt(0), 2654435761), 1);
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const [bundleFile, url, secondsText, label] = process.argv.slice(2) as [string, string, string, string];
const random = generator(label);
const pick = <T>(from: readonly T[]): T => from[Math.floor(random() * from.length)]!;

/** A value that fits `schema`: its required members, and each other one half of the time. */
function sample(schema: Schema): unknown {
  if (schema.enum !== undefined) return pick(schema.enum);
  if (schema.type === "object") {
    const required = schema.required ?? [];
    const entries = Object.entries(schema.properties ?? {}).filter(([name]) => required.includes(name) || random() < 0.5);
    return Object.fromEntries(entries.map(([name, member]) => [name, sample(member)]));
  }
  if (schema.type === "string") return `${pick(NAMES)} ${Math.floor(random() * 1000)}`;
  throw new Error(`no sample for the schema ${JSON.stringify(schema)}`);
}

const bundle = JSON.parse(readFileSync(bundleFile, "utf8")) as { namespaces: { namespace: string; version: number; schema: Schema }[] };
const { version, schema } = bundle.namespaces.find((d) => d.namespace === "user")!;
if (JSON.stringify(SCHEMA_VERSIONS) !== JSON.stringify({ user: version })) {
  throw new Error(`SCHEMA_VERSIONS is ${JSON.stringify(SCHEMA_VERSIONS)}, not user=${version}`);
}

const statuses = new Map<number, number>();
const counting: typeof fetch = async (input, init) => {
  const response = await fetch(input, init);
  statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
  return response;
};
const db = createClient(url, { retries: 0, fetch: counting });
const ops = new Map<string, number>();
const deliberate = new Map<string, number>();
const unexpected = new Map<string, number>();
const bump = (counts: Map<string, number>, key: string) => counts.set(key, (counts.get(key) ?? 0) + 1);
const problems: string[] = [];
const misfitsByOp = new Map<string, number>();
let checked = 0;

function check(item: Item<User>, what: string): void {
  checked++;
  const found = misfits(schema, item.value);
  if (item.schemaVersion !== version) found.push(`schemaVersion ${item.schemaVersion}, not ${version}`);
  if (found.length > 0) bump(misfitsByOp, what);
  for (const p of found) problems.push(`${what} ${item.path}: ${p}: ${JSON.stringify(item.value)}`);
}

const deadline = Date.now() + Number(secondsText) * 1000;
while (Date.now() < deadline) {
  const path = userPath(1 + Math.floor(random() * ITEMS), PARENT);
  const roll = random();
  const op =
    roll < 0.3 ? "get" : roll < 0.45 ? "list" : roll < 0.7 ? "put" : roll < 0.9 ? "merge" : roll < 0.96 ? "delete" : "refused put";
  bump(ops, op);
  try {
    if (op === "get") {
      const got = await db.get<User>(path);
      if (got === null) bump(deliberate, "404 get of a deleted item");
      else check(got, op);
    } else if (op === "list") {
      for await (const item of db.list<User>(userPrefix(PARENT))) check(item, op);
    } else if (op === "put") {
      check(await db.put<User>(path, sample(schema) as User), op);
    } else if (op === "merge") {
      const member = pick(Object.keys(schema.properties!).sort());
      const drop = !schema.required!.includes(member) && random() < 0.3;
      check((await db.merge(path, { [member]: drop ? null : sample(schema.properties![member]!) })) as Item<User>, op);
    } else if (op === "delete") {
      const deleted = await db.delete(path);
      if (deleted === null) bump(deliberate, "404 delete of a deleted item");
      else check(deleted as Item<User>, op);
    } else {
      const value = sample(schema) as Record<string, unknown>;
      delete value[pick(schema.required!)];
      await db.put(path, value);
      problems.push(`${op} ${path}: ${JSON.stringify(value)} was taken`);
    }
  } catch (e) {
    if (e instanceof NotFound && op === "merge") bump(deliberate, "404 merge of a deleted item");
    else if (e instanceof SchemaViolation && op === "refused put") bump(deliberate, "422 put without a required member");
    else if (e instanceof PathDBError) {
      bump(unexpected, `${e.status} ${e.code}`);
      problems.push(`${op} ${path}: ${e.message}`);
    } else throw e;
  }
}

const sum = (counts: Map<unknown, number>) => [...counts.values()].reduce((a, b) => a + b, 0);
const errors = sum(new Map([...statuses].filter(([status]) => status < 200 || status >= 300)));
if (errors !== sum(deliberate) + sum(unexpected)) {
  problems.push(`the server answered ${errors} errors, ${sum(deliberate)} of them deliberate and ${sum(unexpected)} not`);
}
const sorted = <K>(counts: Map<K, number>) => Object.fromEntries([...counts].sort(([a], [b]) => (String(a) < String(b) ? -1 : 1)));
console.log(
  JSON.stringify({
    client: label,
    version,
    requests: sum(statuses),
    statuses: sorted(statuses),
    ops: sorted(ops),
    "values checked": checked,
    misfits: sorted(misfitsByOp),
    deliberate: sorted(deliberate),
    unexpected: sorted(unexpected),
    problems: problems.length,
  }),
);
for (const problem of problems.slice(0, 10)) console.error(`${label}: ${problem}`);
process.exitCode = problems.length > 0 ? 1 : 0;
