/** Key path text and subtrees: the vectors the Rust codec generates, the builder, and fast-check round trips. */

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import fc from "fast-check";

import { Desc, InvalidKeyPath, KeyPath, Uuid, urlPath, type Element, type Id, type PathId } from "../src/index.js";
import { covers } from "../src/keypath.js";
import { REPO } from "./server.js";

interface IdSpec {
  type: "int" | "string" | "bytes" | "uuid";
  desc: boolean;
  value: string;
}
interface Case {
  text: string;
  canonical?: string;
  elements?: { namespace: string; id: IdSpec | null }[];
  error?: { offset: number; rule: string; message: string };
  encoded?: string;
}

const vectors = JSON.parse(readFileSync(join(REPO, "clients/vectors/keypath-text.json"), "utf8")) as {
  cases: Case[];
};

const coversVectors = JSON.parse(readFileSync(join(REPO, "clients/vectors/keypath-covers.json"), "utf8")) as {
  cases: { prefix: string; path: string; covers: boolean }[];
};

function hexBytes(hex: string): Uint8Array {
  return Uint8Array.from(hex.match(/../g) ?? [], (h) => parseInt(h, 16));
}

function typedId(spec: IdSpec | null): PathId | null {
  if (spec === null) return null;
  let plain: bigint | string | Uint8Array;
  switch (spec.type) {
    case "int":
      plain = BigInt(spec.value);
      break;
    case "string":
      plain = spec.value;
      break;
    case "bytes":
      plain = hexBytes(spec.value);
      break;
    case "uuid":
      return new Uuid(spec.value);
  }
  return spec.desc ? new Desc(plain) : plain;
}

test("key order follows the binary key", () => {
  // docs/key-format.md section 4: no id < integer < desc integer < string < desc string < desc
  // bytes, a parent right before its subtree.
  const texts = ["/x-1/y", "/x-1/y--3", "/x-1/y-5", "/x-1/y-!5", "/x-1/y-a", "/x-1/y-!a", "/x-1/y-~_w", "/x-1/y-!~YQ"];
  const paths = texts.map((t) => KeyPath.parse(t));
  assert.deepEqual([...paths].reverse().sort(KeyPath.compare).map(String), texts);
  assert.ok(KeyPath.parse("/u-1/p-2").compare("/u-1/p-10") < 0 && KeyPath.parse("/u-1/p-10").compare("/u-1/p-10/c-1") < 0);
  assert.ok(KeyPath.parse("/u-1/p-!10").compare("/u-1/p-!2") < 0);
  assert.equal(KeyPath.parse("/u-1").compare("/u-1"), 0);
});

describe("vectors from the Rust codec", () => {
  test("cover valid and invalid texts", () => {
    assert.ok(vectors.cases.length > 100);
    assert.ok(vectors.cases.some((c) => c.error) && vectors.cases.some((c) => c.canonical));
  });
  for (const c of vectors.cases) {
    test(JSON.stringify(c.text), () => {
      if (c.error) {
        const error = c.error;
        assert.throws(
          () => KeyPath.parse(c.text),
          (e: unknown) => {
            assert.ok(e instanceof InvalidKeyPath);
            assert.deepEqual([e.rule, e.offset], [error.rule, error.offset]);
            if (error.rule !== "Base64") assert.equal(e.message, error.message);
            return true;
          },
        );
        return;
      }
      const path = KeyPath.parse(c.text);
      assert.equal(path.toString(), c.canonical);
      const elements: Element[] = (c.elements ?? []).map((e) => ({ namespace: e.namespace, id: typedId(e.id) }));
      assert.deepEqual(path.elements, elements);
      let built = new KeyPath();
      for (const e of elements) built = built.add(e.namespace, e.id);
      assert.ok(built.equals(path));
      assert.equal(built.toString(), c.canonical);
      assert.ok(KeyPath.parse(c.canonical!).equals(path));
      if (c.encoded !== undefined) {
        // The binary key, whose byte order is the key order.
        assert.equal(Buffer.from(path.encode()).toString("hex"), c.encoded);
      }
    });
  }
});

describe("covers vectors from the Rust codec", () => {
  test("cover both answers", () => {
    assert.ok(coversVectors.cases.length > 100);
    assert.ok(coversVectors.cases.some((c) => c.covers) && coversVectors.cases.some((c) => !c.covers));
  });
  for (const c of coversVectors.cases) {
    test(`${JSON.stringify(c.prefix)} covers ${JSON.stringify(c.path)}: ${c.covers}`, () => {
      assert.equal(covers(KeyPath.parse(c.prefix), KeyPath.parse(c.path)), c.covers);
    });
  }
});

describe("builder", () => {
  test("types and canonical text", () => {
    const u = new Uuid("4C9D36E5-6B19-4E6A-828C-226ED667458A");
    const path = new KeyPath().add("user", u).add("post", 2n ** 64n - 1n).add("tag", "7").add("b", Uint8Array.of(0, 1));
    assert.equal(path.toString(), "/user-4c9d36e5-6b19-4e6a-828c-226ed667458a/post-18446744073709551615/tag-%7/b-~AAE");
    const desc = new KeyPath().add("s", new Desc(-3)).add("n", new Desc("a/b")).add("x", new Desc(Uint8Array.of(255)));
    assert.equal(desc.toString(), "/s-!-3/n-!a%/b/x-!~_w");
    assert.ok(new KeyPath().add("a", 7).equals(new KeyPath().add("a", 7n)));
    assert.ok(!new KeyPath().add("a", 1).equals(new KeyPath().add("a", "1")));
    assert.ok(!new KeyPath().add("a", 1).equals(new KeyPath().add("a", new Desc(1))));
    assert.ok(KeyPath.parse("/a-1/b-2").parent?.equals("/a-1"));
    assert.equal(new KeyPath().add("a", -(2n ** 64n - 1n)).toString(), "/a--18446744073709551615");
    assert.equal(JSON.stringify({ p: KeyPath.parse("/a-1") }), '{"p":"/a-1"}');
  });

  const refusals: [string, () => unknown, string][] = [
    ["2^64", () => new KeyPath().add("a", 2n ** 64n), "IntegerOutOfRange"],
    ["-2^64", () => new KeyPath().add("a", -(2n ** 64n)), "IntegerOutOfRange"],
    ["unsafe number", () => new KeyPath().add("a", 2 ** 53), "UnsupportedType"],
    ["fraction", () => new KeyPath().add("a", 1.5), "UnsupportedType"],
    ["empty string", () => new KeyPath().add("a", ""), "EmptyId"],
    ["empty bytes", () => new KeyPath().add("a", new Uint8Array()), "EmptyBytes"],
    ["control", () => new KeyPath().add("a", "x\ny"), "ControlCharacter"],
    ["lone surrogate", () => new KeyPath().add("a", "\ud800"), "InvalidUtf8"],
    ["desc uuid", () => new KeyPath().add("a", new Desc(new Uuid("4c9d36e5-6b19-4e6a-828c-226ed667458a") as never)), "DescendingUuid"],
    ["group without id", () => new KeyPath().add("a"), "GroupWithoutId"],
    ["missing id", () => new KeyPath().add("a", 1).add("b").add("c", 1), "MissingId"],
    ["namespace start", () => new KeyPath().add("1a", 1), "NamespaceStart"],
    ["namespace char", () => new KeyPath().add("a-b", 1), "NamespaceChar"],
    ["empty namespace", () => new KeyPath().add("", 1), "EmptyNamespace"],
    ["long namespace", () => new KeyPath().add("n".repeat(65), 1), "NamespaceTooLong"],
    ["parse lone surrogate", () => KeyPath.parse("/a-\udc00"), "InvalidUtf8"],
  ];
  for (const [name, build, rule] of refusals) {
    test(`refuses ${name}`, () => {
      assert.throws(build, (e: unknown) => e instanceof InvalidKeyPath && e.rule === rule);
    });
  }

  test("parse offsets count UTF-8 bytes", () => {
    assert.throws(
      () => KeyPath.parse("/a-\u00e9\u{1f600}%"),
      (e: unknown) => e instanceof InvalidKeyPath && e.offset === 9 && e.rule === "DanglingEscape",
    );
  });

  test("urlPath encodes each element on its own", () => {
    const path = new KeyPath().add("a", 1).add("s", "x/y%z!~.").add("t", "caf\u00e9 ?#*");
    assert.equal(urlPath(path), "a-1/s-x%25%2Fy%25%25z!~./t-caf%C3%A9%20%3F%23%2A");
  });
});

// ---------------------------------------------------------------------------------------------
// Properties

const namespaceArb = fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,10}$/);
const plainString = fc
  .fullUnicodeString({ minLength: 1, maxLength: 12 })
  .filter((s) => [...s].every((c) => c.charCodeAt(0) >= 0x20 && c !== "\x7f"));
const tricky = fc.constantFrom("%", "/", "-", "!", "~", "-1", "0", "01", "!x", "~x", "%/", "a-b");
const stringArb = fc.oneof(plainString, fc.array(fc.oneof(tricky, plainString), { minLength: 1, maxLength: 4 }).map((a) => a.join("")));
const intArb = fc.bigInt({ min: -(2n ** 64n - 1n), max: 2n ** 64n - 1n });
const bytesArb = fc.uint8Array({ minLength: 1, maxLength: 20 });
const idArb: fc.Arbitrary<Id> = fc.oneof(
  intArb,
  fc.integer(),
  stringArb,
  bytesArb,
  fc.uuid().map((u) => new Uuid(u)),
  intArb.map((v) => new Desc(v)),
  stringArb.map((v) => new Desc(v)),
  bytesArb.map((v) => new Desc(v)),
);
const pathArb = fc
  .tuple(
    fc.array(fc.tuple(namespaceArb, idArb), { minLength: 1, maxLength: 5 }),
    fc.option(namespaceArb, { nil: undefined }),
  )
  .map(([elements, last]) => {
    let path = new KeyPath();
    for (const [ns, id] of elements) path = path.add(ns, id);
    return last === undefined ? path : path.add(last);
  });

describe("properties", () => {
  test("format then parse is the same path", () => {
    fc.assert(
      fc.property(pathArb, (path) => {
        const text = path.toString();
        const parsed = KeyPath.parse(text);
        assert.deepEqual(parsed.elements, path.elements);
        assert.equal(parsed.toString(), text);
      }),
      { numRuns: 400 },
    );
  });

  test("parse is canonical or names an offset inside the text", () => {
    const alphabet = fc.constantFrom(..."/-_%!~aZ09\u00e9\n=");
    fc.assert(
      fc.property(fc.array(alphabet, { maxLength: 14 }).map((a) => a.join("")), (text) => {
        let path: KeyPath;
        try {
          path = KeyPath.parse(text);
        } catch (e) {
          assert.ok(e instanceof InvalidKeyPath);
          assert.ok(e.offset !== undefined && e.offset >= 0 && e.offset <= new TextEncoder().encode(text).length);
          return;
        }
        const again = KeyPath.parse(path.toString());
        assert.ok(again.equals(path));
        assert.equal(again.toString(), path.toString());
      }),
      { numRuns: 400 },
    );
  });
});
