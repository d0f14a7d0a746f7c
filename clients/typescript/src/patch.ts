/**
 * JSON Merge Patch (RFC 7396) and JSON Patch (RFC 6902, plus PathDB's `increment`) applied
 * locally, as the server applies them (crates/pathdb-store/src/patch.rs): a transaction's `patch`
 * computes the new value itself so that its later reads see it, and commits it as a put.
 *
 * Failures throw the errors the server would answer with: `PatchTestFailed` (a `test` did not
 * hold), `PatchConflict` (an operation does not fit the value) and `InvalidRequest` with code
 * `invalid_patch` (not a patch document), each naming the operation ("operation 2: ...").
 * JavaScript numbers do not tell `1` from `1.0`, so a `test` takes them as equal here where the
 * server may not.
 */

import { InvalidRequest, PatchConflict, PatchTestFailed } from "./errors.js";

type Json = unknown;
type JsonObject = Record<string, Json>;

const isObject = (v: Json): v is JsonObject => typeof v === "object" && v !== null && !Array.isArray(v);

/** A deep copy of a JSON value. */
export function copyJson<T>(value: T): T {
  return value === undefined ? (null as T) : (JSON.parse(JSON.stringify(value)) as T);
}

/** `value` with the merge patch `document` applied (RFC 7396); `value` is left as it was. */
export function mergePatch(value: Json, document: Json): Json {
  return merge(copyJson(value), document);
}

function merge(target: Json, document: Json): Json {
  if (!isObject(document)) return copyJson(document);
  const out: JsonObject = isObject(target) ? target : {};
  for (const [name, member] of Object.entries(document)) {
    if (member === null) delete out[name];
    else out[name] = merge(Object.hasOwn(out, name) ? out[name] : undefined, member);
  }
  return out;
}

/** An operation that does not fit the value. */
class Failure extends Error {}

const FIELDS: Record<string, readonly string[]> = {
  add: ["path", "value"],
  remove: ["path"],
  replace: ["path", "value"],
  move: ["from", "path"],
  copy: ["from", "path"],
  test: ["path", "value"],
  increment: ["path", "value"],
};

const invalid = (message: string) => new InvalidRequest(message, "invalid_patch");

/** `value` with the JSON Patch `operations` applied in order, all or nothing; `value` is left as it was. */
export function jsonPatch(value: Json, operations: readonly unknown[]): Json {
  if (!Array.isArray(operations)) throw invalid("a JSON Patch is an array of operations");
  operations.forEach((op, index) => check(index, op));
  let doc = copyJson(value);
  operations.forEach((op, index) => {
    const operation = op as JsonObject;
    try {
      doc = apply(doc, operation);
    } catch (e) {
      if (!(e instanceof Failure)) throw e;
      const message = `operation ${index}: ${e.message}`;
      if (operation.op === "test") throw new PatchTestFailed(message, "patch_test_failed");
      throw new PatchConflict(message, "patch_conflict");
    }
  });
  return doc;
}

function check(index: number, op: unknown): void {
  if (!isObject(op)) throw invalid(`operation ${index}: not an object`);
  const kind = op.op;
  const fields = typeof kind === "string" ? FIELDS[kind] : undefined;
  if (fields === undefined) throw invalid(`operation ${index}: unknown op ${JSON.stringify(kind)}`);
  for (const name of fields) {
    if (!Object.hasOwn(op, name)) throw invalid(`operation ${index}: ${String(kind)} needs ${JSON.stringify(name)}`);
  }
  for (const name of ["path", "from"]) {
    if (!fields.includes(name)) continue;
    const pointer = op[name];
    if (typeof pointer !== "string" || !(pointer === "" || pointer.startsWith("/"))) {
      throw invalid(`operation ${index}: ${JSON.stringify(pointer)} is not a JSON Pointer`);
    }
  }
  if (kind === "increment") {
    const extra = Object.keys(op).find((k) => !["op", "path", "value"].includes(k));
    if (extra !== undefined) throw invalid(`operation ${index}: increment has no member ${JSON.stringify(extra)}`);
    if (typeof op.value !== "number" || !Number.isFinite(op.value)) {
      throw invalid(`operation ${index}: increment needs a number "value"`);
    }
  }
}

function tokens(pointer: string): string[] {
  return pointer
    .split("/")
    .slice(1)
    .map((t) => t.replace(/~1/g, "/").replace(/~0/g, "~"));
}

/** An array index as RFC 6901 writes it: digits without a leading zero, `-` for the end. */
function arrayIndex(token: string, length: number, endOk: boolean): number {
  if (token === "-" && endOk) return length;
  if (!/^(0|[1-9][0-9]*)$/.test(token)) throw new Failure(`${JSON.stringify(token)} is not an array index`);
  const i = Number(token);
  if (i > length || (i === length && !endOk)) throw new Failure(`index ${i} is out of bounds`);
  return i;
}

function get(doc: Json, pointer: string): Json {
  let at = doc;
  for (const token of tokens(pointer)) {
    if (isObject(at)) {
      if (!Object.hasOwn(at, token)) throw new Failure(`${pointer}: no member ${JSON.stringify(token)}`);
      at = at[token];
    } else if (Array.isArray(at)) {
      at = at[arrayIndex(token, at.length, false)];
    } else {
      throw new Failure(`${pointer}: a scalar has no member ${JSON.stringify(token)}`);
    }
  }
  return at;
}

function parentOf(doc: Json, pointer: string): [Json, string] {
  const cut = pointer.lastIndexOf("/");
  return [get(doc, pointer.slice(0, cut)), tokens(pointer).at(-1)!];
}

function add(doc: Json, pointer: string, value: Json): Json {
  if (pointer === "") return value;
  const [parent, last] = parentOf(doc, pointer);
  if (isObject(parent)) parent[last] = value;
  else if (Array.isArray(parent)) parent.splice(arrayIndex(last, parent.length, true), 0, value);
  else throw new Failure(`${pointer}: a scalar has no member ${JSON.stringify(last)}`);
  return doc;
}

function remove(doc: Json, pointer: string): Json {
  if (pointer === "") throw new Failure("the whole value cannot be removed");
  const [parent, last] = parentOf(doc, pointer);
  if (isObject(parent)) {
    if (!Object.hasOwn(parent, last)) throw new Failure(`${pointer}: no member ${JSON.stringify(last)}`);
    const removed = parent[last];
    delete parent[last];
    return removed;
  }
  if (Array.isArray(parent)) return parent.splice(arrayIndex(last, parent.length, false), 1)[0];
  throw new Failure(`${pointer}: a scalar has no member ${JSON.stringify(last)}`);
}

function apply(doc: Json, op: JsonObject): Json {
  const path = op.path as string;
  switch (op.op) {
    case "add":
      return add(doc, path, copyJson(op.value));
    case "remove":
      remove(doc, path);
      return doc;
    case "replace": {
      if (path === "") return copyJson(op.value);
      get(doc, path); // must exist
      const [parent, last] = parentOf(doc, path);
      if (Array.isArray(parent)) parent[arrayIndex(last, parent.length, false)] = copyJson(op.value);
      else (parent as JsonObject)[last] = copyJson(op.value);
      return doc;
    }
    case "move": {
      const from = op.from as string;
      if (path !== from && path.startsWith(from + "/")) throw new Failure(`${from} cannot move into itself (${path})`);
      if (path === from) {
        get(doc, from);
        return doc;
      }
      return add(doc, path, remove(doc, from));
    }
    case "copy":
      return add(doc, path, copyJson(get(doc, op.from as string)));
    case "test":
      if (!jsonEqual(get(doc, path), op.value)) throw new Failure(`${path}: the value differs`);
      return doc;
    default:
      return increment(doc, path, op.value as number);
  }
}

/** Adds `by` to the number at `pointer`, creating missing object members (0 at the end, `{}` on the way). */
function increment(doc: Json, pointer: string, by: number): Json {
  const path = tokens(pointer);
  if (path.length === 0) return addNumbers(doc, by, pointer);
  let at = doc;
  path.forEach((token, depth) => {
    const last = depth + 1 === path.length;
    if (isObject(at)) {
      if (!Object.hasOwn(at, token)) at[token] = last ? 0 : {};
      if (last) at[token] = addNumbers(at[token], by, pointer);
      else at = at[token];
    } else if (Array.isArray(at)) {
      if (!/^[0-9]+$/.test(token)) throw new Failure(`${pointer}: ${JSON.stringify(token)} is not an array index`);
      const i = Number(token);
      if (i >= at.length) throw new Failure(`${pointer}: index ${i} is past the array's end`);
      if (last) at[i] = addNumbers(at[i], by, pointer);
      else at = at[i];
    } else {
      throw new Failure(`${pointer}: a scalar has no member ${JSON.stringify(token)}`);
    }
  });
  return doc;
}

function addNumbers(current: Json, by: number, pointer: string): number {
  if (typeof current !== "number") throw new Failure(`${pointer} is not a number`);
  const sum = current + by;
  const past = `${pointer}: ${current} + ${by} is past the exact integer range (2^53) or not finite`;
  if (Number.isInteger(current) && Number.isInteger(by)) {
    if (!Number.isSafeInteger(current) || !Number.isSafeInteger(by) || !Number.isSafeInteger(sum)) throw new Failure(past);
    return sum;
  }
  if (!Number.isFinite(sum)) throw new Failure(past);
  return sum;
}

/** JSON equality: objects member by member, arrays element by element. */
export function jsonEqual(a: Json, b: Json): boolean {
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => jsonEqual(x, b[i]));
  }
  if (isObject(a) || isObject(b)) {
    if (!isObject(a) || !isObject(b)) return false;
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && jsonEqual(a[k], b[k]));
  }
  return a === b;
}
