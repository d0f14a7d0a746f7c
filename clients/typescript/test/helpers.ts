/** What the client's tests share besides the server: a fresh group, and awaiting outcomes. */

import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";

import { KeyPath, Uuid } from "../src/index.js";

/** A group of its own for each test. */
export const group = () => new KeyPath().add("t", new Uuid(randomUUID()));

/** Every item an async iterable yields, in order. */
export async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

/** The error `promise` rejects with, asserted to be a `kind`. */
export async function rejects<E extends Error>(promise: Promise<unknown>, kind: new (...a: never[]) => E): Promise<E> {
  try {
    await promise;
  } catch (e) {
    assert.ok(e instanceof kind, `expected ${kind.name}, got ${String(e)}`);
    return e;
  }
  assert.fail(`expected ${kind.name}`);
}
