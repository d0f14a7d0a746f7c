/**
 * Interactive transactions: `Client.transaction(async (tx) => ...)`.
 *
 * The callback reads and writes through a {@link Transaction}, which records what it read (each
 * path's version or absence, each listing's range, `changesToken` and the items its pages showed)
 * and buffers its writes, which its own reads then see. The commit is one `POST /v1/transact`: the
 * creates, then the writes in the order made, each conditional on what was read at its path, then
 * a `check` for every other path read and a `check_list` for every listing. When one of them no
 * longer holds (409 `condition_failed`), the callback runs again from the start. docs/transactions.md
 * has the design; this follows the Rust `Store::transaction` (crates/pathdb-store/src/interactive.rs).
 */

import { Check, CheckList, Create, Delete, Put, filterParam } from "./model.js";
import type {
  Entry,
  IdKind,
  Item,
  ListPageOptions,
  Node,
  Op,
  Page,
  PatchOperation,
  TransactionListOptions,
  TransactionListPageOptions,
  TransactionReads,
} from "./model.js";
import { InvalidRequest, NotFound } from "./errors.js";
import { KeyPath, covers, toPath, type PathLike } from "./keypath.js";
import { copyJson, jsonPatch, mergePatch } from "./patch.js";

/** How many times `transaction` runs its callback at most (its `maxAttempts` by default). */
export const MAX_TRANSACTION_ATTEMPTS = 16;

/** Milliseconds below which the pause after `failedRuns` failed runs is drawn: 2^failedRuns, at most 64. */
export function backoffCeilingMs(failedRuns: number): number {
  return Math.min(2 ** failedRuns, 64);
}

type Pending = { readonly kind: "put"; readonly value: unknown } | { readonly kind: "delete" };

/** A change of part of an item: a JSON Merge Patch (RFC 7396) or a JSON Patch (RFC 6902, plus `increment`). */
export type TxPatch = { readonly merge: unknown } | { readonly patch: readonly PatchOperation[] };

function compareKeys(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i]! < b[i]! ? -1 : 1;
  return a.length - b.length;
}

/** The first `length` elements of `p`. */
function truncate(p: KeyPath, length: number): KeyPath {
  let out: KeyPath = p;
  while (out.length > length) out = out.parent!;
  return out;
}

/** A listing read in the transaction: its range and filter, its first page's token, what it showed. */
export class Listing {
  readonly seen = new Map<string, { path: KeyPath; version: number }>();
  /** A page token -> the key of the last entry of the page that returned it (the next page starts after it). */
  readonly after = new Map<string, Uint8Array>();

  constructor(
    readonly prefix: KeyPath,
    readonly children: boolean,
    readonly bounds: { gt?: KeyPath; gte?: KeyPath; lt?: KeyPath; lte?: KeyPath },
    readonly token: string,
    readonly filter: string | null = null,
  ) {}

  /** The prefix's child that `path` is or lies under (null for the prefix itself). */
  childOf(path: KeyPath): KeyPath | null {
    const depth = this.prefix.length + 1;
    return path.length < depth ? null : truncate(path, depth);
  }

  /** Whether a write at `path` changes what the listing shows (ListRange::covers). */
  covers(path: KeyPath): boolean {
    if (!covers(this.prefix, path)) return false;
    const entry = this.children ? this.childOf(path) : path;
    if (entry === null) return false;
    const key = entry.encode();
    const { gt, gte, lt, lte } = this.bounds;
    return (
      (gt === undefined || compareKeys(key, gt.encode()) > 0) &&
      (gte === undefined || compareKeys(key, gte.encode()) >= 0) &&
      (lt === undefined || compareKeys(key, lt.encode()) < 0) &&
      (lte === undefined || compareKeys(key, lte.encode()) <= 0)
    );
  }

  op(): CheckList {
    return new CheckList(this.prefix, this.token, {
      children: this.children,
      ...this.bounds,
      seen: [...this.seen.values()].map(({ path, version }) => [path, version] as const),
      ...(this.filter !== null && { filter: this.filter }),
    });
  }
}

/**
 * What `tx.create` resolves to: the item it creates, once the transaction committed (its id, and
 * so its path, is generated at the commit). `path` and `item` are null until then, and stay null
 * when the run that made it did not commit.
 */
export class PendingCreate<T = unknown> {
  item: Item<T> | null = null;

  constructor(
    readonly parent: KeyPath | null,
    readonly namespace: string,
    readonly value: T,
    readonly id: IdKind,
  ) {}

  /** The created item's path, after the commit. */
  get path(): KeyPath | null {
    return this.item?.path ?? null;
  }
}

const GROUP_NAMESPACE = /^\/[A-Za-z_][A-Za-z0-9_]{0,63}$/;

/** `/user-1/order` -> [`/user-1`, "order"]; `/user` (a new group) -> [null, "user"]. */
function createTarget(target: PathLike): [KeyPath | null, string] {
  if (typeof target === "string" && GROUP_NAMESPACE.test(target)) return [null, target.slice(1)];
  const path = toPath(target);
  const last = path.elements[path.length - 1]!;
  if (last.id !== null) {
    throw new TypeError(`create takes the parent and the new item's namespace (/user-1/order), not a full path: ${path}`);
  }
  return [path.parent, last.namespace];
}

interface Read {
  readonly path: KeyPath;
  readonly item: Item | null;
}

/** What one run of the callback read and wrote; no I/O (internal: not exported from the package). */
export class RunState {
  readonly reads = new Map<string, Read>();
  readonly listings = new Map<string, Listing>();
  /** In the order made; a path written again keeps its place and takes the new write. */
  readonly writes = new Map<string, { path: KeyPath; pending: Pending }>();
  readonly creates: PendingCreate[] = [];
  done = false;

  checkOpen(): void {
    if (this.done) {
      throw new Error("this transaction's run is over: use the transaction object only inside the callback it was given to");
    }
  }

  unread(paths: Iterable<KeyPath>): KeyPath[] {
    const out = new Map<string, KeyPath>();
    for (const p of paths) if (!this.reads.has(p.toString())) out.set(p.toString(), p);
    return [...out.values()];
  }

  record(path: KeyPath, item: Item | null): void {
    if (!this.reads.has(path.toString())) this.reads.set(path.toString(), { path, item });
  }

  /** The item at a path read before, as this transaction sees it (its own write, if any). */
  view<T>(path: KeyPath): Item<T> | null {
    const read = this.reads.get(path.toString())!.item as Item<T> | null;
    const pending = this.writes.get(path.toString())?.pending;
    if (pending === undefined) return read === null ? null : { ...read, value: copyJson(read.value) };
    if (pending.kind === "delete") return null;
    const now = Date.now();
    return {
      path,
      version: read === null ? 1 : read.version + 1,
      value: copyJson(pending.value) as T,
      createdAt: read === null ? new Date(now) : read.createdAt,
      modifiedAt: new Date(now),
      expiresAt: null,
      createdAtMicros: read === null ? now * 1000 : read.createdAtMicros,
      modifiedAtMicros: now * 1000,
      expiresAtMicros: null,
    };
  }

  write(path: PathLike, pending: Pending): void {
    this.checkOpen();
    const key = toPath(path);
    const at = this.writes.get(key.toString());
    if (at) at.pending = pending;
    else this.writes.set(key.toString(), { path: key, pending });
  }

  /** The listing of this range read before; a next page of one never read is refused. */
  listingBefore(key: string, prefix: KeyPath, pageToken: string | null): Listing | undefined {
    this.checkOpen();
    const known = this.listings.get(key);
    if (known === undefined && pageToken !== null) {
      throw new InvalidRequest(
        `list ${prefix}'s first page in the transaction before its next pages: the commit checks the listing from its first page's changesToken`,
        "invalid_request",
      );
    }
    return known;
  }

  /** Records a page: a first page starts its listing's check, every page adds to what it showed. */
  listed(
    key: string,
    known: Listing | undefined,
    page: Page<unknown, Entry<unknown>>,
    bounds: Listing["bounds"],
    prefix: KeyPath,
    children: boolean,
    filter: string | null = null,
  ): Listing {
    let listing = known;
    if (listing === undefined) {
      if (page.changesToken === null) {
        throw new InvalidRequest("the server gave the listing's first page no changesToken: it cannot check listings (an older server?)", "invalid_request");
      }
      listing = new Listing(prefix, children, bounds, page.changesToken, filter);
      this.listings.set(key, listing);
    }
    for (const entry of page.items) {
      if ("node" in entry) continue;
      // Where the listing shows it: under an alias, the alias (docs/aliases.md).
      const at = entry.alias ?? entry.path;
      const held = listing.seen.get(at.toString());
      // Shown twice (read again): the older version is what a decision may rest on.
      listing.seen.set(at.toString(), { path: at, version: held === undefined ? entry.version : Math.min(held.version, entry.version) });
    }
    return listing;
  }

  /** Whether a key is this page's share of the range: after the previous page's last entry, up to its own last when more follow. */
  within(listing: Listing, page: Page<unknown, Entry<unknown>>, reverse: boolean, pageToken: string | null): (key: Uint8Array) => boolean {
    // An empty page with a next one (a filtered page stops after maxScan items): where it stopped is
    // the server's secret, so what would join it joins a later page.
    if (page.nextPageToken !== null && page.items.length === 0) return () => false;
    const start = pageToken === null ? undefined : listing.after.get(pageToken);
    const last = page.items[page.items.length - 1];
    const end = page.nextPageToken !== null && last !== undefined ? position(last).encode() : undefined;
    return (key) =>
      reverse
        ? (start === undefined || compareKeys(key, start) < 0) && (end === undefined || compareKeys(key, end) >= 0)
        : (start === undefined || compareKeys(key, start) > 0) && (end === undefined || compareKeys(key, end) <= 0);
  }

  #overlaid(listing: Listing): { path: KeyPath; pending: Pending }[] {
    return [...this.writes.values()].filter((w) => listing.covers(w.path));
  }

  /**
   * The paths the overlay reads first: items put here that join the page (their view's version is
   * the read + 1). A filtered listing cannot show them: whether a value put here matches the filter
   * is the server's to say (the client does not evaluate filters), so such a page is refused rather
   * than shown wrong.
   */
  overlayReads(listing: Listing, page: Page<unknown, Entry<unknown>>, reverse: boolean, pageToken: string | null): KeyPath[] {
    const within = this.within(listing, page, reverse, pageToken);
    const joining = this.#overlaid(listing)
      .filter(({ path, pending }) => pending.kind === "put" && !(listing.children && path.length > listing.prefix.length + 1) && within(path.encode()))
      .map(({ path }) => path);
    if (listing.filter !== null && joining.length > 0) {
      throw new InvalidRequest(
        `a filtered listing of ${listing.prefix} cannot show what this transaction put in its range (${joining[0]}): ` +
          "the client cannot tell whether a value put here matches the filter. List before writing there, or list without a filter",
        "invalid_request",
      );
    }
    return this.unread(joining);
  }

  /**
   * `page` with this transaction's writes in the listing's range applied: items put replace or join
   * the entries (in key order), items deleted leave. A children listing shows a child deleted here
   * as gone even when items remain below it, and a child with a put below it at least as a node.
   */
  overlay<T>(listing: Listing, page: Page<T, Entry<T>>, reverse: boolean, pageToken: string | null): Page<T, Entry<T>> {
    const within = this.within(listing, page, reverse, pageToken);
    const last = page.items[page.items.length - 1];
    if (page.nextPageToken !== null && last !== undefined) listing.after.set(page.nextPageToken, position(last).encode());
    else if (page.nextPageToken !== null && pageToken !== null && listing.after.has(pageToken)) {
      // An empty page: the next starts where this one did, as far as the overlay knows.
      listing.after.set(page.nextPageToken, listing.after.get(pageToken)!);
    }
    const writes = this.#overlaid(listing);
    if (writes.length === 0) return page;
    let entries: Entry<T>[] = [...page.items];
    for (const { path, pending } of writes) {
      if (listing.children && path.length > listing.prefix.length + 1) {
        const child = listing.childOf(path);
        // A node never matches a filter.
        const shown = child !== null && entries.some((e) => e.path.equals(child));
        if (child !== null && listing.filter === null && pending.kind === "put" && within(child.encode()) && !shown) {
          const node: Node = { path: child, node: true };
          insertSorted(entries, node, reverse);
        }
        continue;
      }
      entries = entries.filter((e) => !e.path.equals(path));
      if (pending.kind === "put" && within(path.encode())) {
        const item = this.view<T>(path);
        if (item !== null) insertSorted(entries, item, reverse);
      }
    }
    return { items: entries, nextPageToken: page.nextPageToken, changesToken: page.changesToken, scanned: page.scanned };
  }

  /** The transaction to commit (empty when the callback neither read nor wrote). */
  ops(): Op[] {
    const ops: Op[] = this.creates.map((c) => new Create(c.parent, c.namespace, c.value, { id: c.id }));
    for (const [key, { path, pending }] of this.writes) {
      const read = this.reads.get(key);
      if (pending.kind === "put") {
        if (read === undefined) ops.push(new Put(path, pending.value));
        else if (read.item === null) ops.push(new Put(path, pending.value, { mustNotExist: true }));
        else ops.push(new Put(path, pending.value, { ifVersion: read.item.version }));
      } else if (read === undefined) {
        ops.push(new Delete(path));
      } else if (read.item === null) {
        // Nothing to delete, and the commit must find it still absent.
        ops.push(new Check(path, { mustNotExist: true }));
      } else {
        ops.push(new Delete(path, { ifVersion: read.item.version }));
      }
    }
    // In key order: the same reads give the same transaction.
    const checked = [...this.reads.entries()].filter(([key]) => !this.writes.has(key)).map(([, read]) => read);
    checked.sort((a, b) => compareKeys(a.path.encode(), b.path.encode()));
    for (const { path, item } of checked) {
      ops.push(item === null ? new Check(path, { mustNotExist: true }) : new Check(path, { ifVersion: item.version }));
    }
    for (const listing of this.listings.values()) ops.push(listing.op());
    return ops;
  }

  committed(results: readonly (Item | null)[]): void {
    this.creates.forEach((handle, i) => {
      handle.item = results[i] ?? null;
    });
  }
}

function insertSorted<T>(entries: Entry<T>[], entry: Entry<T>, reverse: boolean): void {
  const key = entry.path.encode();
  let at = entries.findIndex((other) => {
    const c = compareKeys(other.path.encode(), key);
    return reverse ? c <= 0 : c >= 0;
  });
  if (at < 0) at = entries.length;
  entries.splice(at, 0, entry);
}

const states = new WeakMap<Transaction, RunState>();

/** A transaction's run state (for `Client.transaction`; not exported from the package). */
export function stateOf(tx: Transaction): RunState {
  return states.get(tx)!;
}

function rangeKey(prefix: KeyPath, children: boolean, bounds: Listing["bounds"], filter: string | null): string {
  const b = (p: KeyPath | undefined) => (p === undefined ? null : p.toString());
  return JSON.stringify([prefix.toString(), children, b(bounds.gt), b(bounds.gte), b(bounds.lt), b(bounds.lte), filter]);
}

const warned = new Set<string>();

/** Warns once per message: a Node `DeprecationWarning`, or `console.warn` where there is no `process`. */
function deprecated(code: string, message: string): void {
  if (warned.has(code)) return;
  warned.add(code);
  const proc = (globalThis as { process?: { emitWarning?: (warning: string, options: { type: string; code: string }) => void } }).process;
  if (typeof proc?.emitWarning === "function") proc.emitWarning(message, { type: "DeprecationWarning", code });
  else console.warn(`DeprecationWarning: ${message}`);
}

const PAGE_OF_LIST =
  "tx.list(...) iterates the listing's items now, as Client.list does (for await (const item of tx.list(prefix))); " +
  "awaiting it gives its first page, which is deprecated: use tx.listPage(...) for one page";

/**
 * What `tx.list` returns: an async iterable over the listing's entries (its items, and with
 * `children` its nodes), with the transaction's own writes applied, that reads the listing's pages
 * through the transaction as the loop goes (so each is checked at the commit):
 * `for await (const item of tx.list(prefix))`. Iterate it inside the callback.
 *
 * It is also a `PromiseLike` of the listing's first page, for code from when `tx.list` resolved to
 * one page (`(await tx.list(prefix)).items`): deprecated, with a `DeprecationWarning`; use
 * `tx.listPage`. (So returning `tx.list(...)` from an async function resolves to that page.)
 */
export class TransactionListing<T = unknown, E = Item<T>> implements AsyncIterable<E>, PromiseLike<Page<T, E>> {
  readonly #read: (pageSize: number | undefined, pageToken: string | null) => Promise<Page<T, Entry<T>>>;
  readonly #pending: E[] = [];
  #remaining: number | undefined;
  readonly #pageSize: number | undefined;
  #token: string | null;
  #done: boolean;
  #first: Promise<Page<T, E>> | undefined;

  constructor(
    read: (pageSize: number | undefined, pageToken: string | null) => Promise<Page<T, Entry<T>>>,
    options: { limit?: number | undefined; pageSize?: number | undefined; pageToken?: string | null | undefined },
  ) {
    this.#read = read;
    this.#remaining = options.limit;
    this.#pageSize = options.pageSize;
    this.#token = options.pageToken ?? null;
    this.#done = options.limit !== undefined && options.limit <= 0;
  }

  /** Reads the next page and queues its entries (those within the limit). */
  async #next(): Promise<Page<T, E>> {
    const remaining = this.#remaining;
    const size = remaining === undefined ? this.#pageSize : Math.min(this.#pageSize ?? 100, remaining, 1000);
    const page = (await this.#read(size, this.#token)) as unknown as Page<T, E>;
    this.#pending.push(...(remaining === undefined ? page.items : page.items.slice(0, remaining)));
    if (remaining !== undefined) this.#remaining = remaining - page.items.length;
    this.#token = page.nextPageToken;
    this.#done = this.#token === null || (this.#remaining !== undefined && this.#remaining <= 0);
    return page;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<E, void, undefined> {
    if (this.#first !== undefined) await this.#first;
    for (;;) {
      while (this.#pending.length > 0) yield this.#pending.shift()!;
      if (this.#done) return;
      await this.#next();
    }
  }

  /** @deprecated `await tx.list(prefix)` resolves to its first page: use `tx.listPage(prefix)`, or iterate `tx.list`. */
  then<R1 = Page<T, E>, R2 = never>(
    onfulfilled?: ((page: Page<T, E>) => R1 | PromiseLike<R1>) | null,
    onrejected?: ((reason: unknown) => R2 | PromiseLike<R2>) | null,
  ): Promise<R1 | R2> {
    deprecated("PATHDB_TX_LIST_PAGE", PAGE_OF_LIST);
    this.#first ??= this.#done ? Promise.resolve({ items: [], nextPageToken: null, changesToken: null, scanned: null }) : this.#next();
    return this.#first.then(onfulfilled, onrejected);
  }
}

/**
 * The callback's handle in `Client.transaction`: reads that the commit checks, and writes that
 * commit together, all or nothing. `get`, `getMany`, `listPage` and `patch` read (await them),
 * `list` iterates (`for await (const item of tx.list(prefix))`); `put`, `create` and `delete`
 * only record a write.
 */
export class Transaction {
  readonly #client: TransactionReads;

  constructor(client: TransactionReads) {
    this.#client = client;
    states.set(this, new RunState());
  }

  get #state(): RunState {
    return states.get(this)!;
  }

  /**
   * The item at `path` as this transaction sees it, or null. The first read of a path is the one
   * the commit checks (its version, or that there was no item); later reads repeat it. After a
   * `put` here: the value put, at the version it will have (the version read + 1); after a
   * `delete`: null.
   */
  async get<T = unknown>(path: PathLike): Promise<Item<T> | null> {
    this.#state.checkOpen();
    const key = toPath(path);
    if (!this.#state.reads.has(key.toString())) this.#state.record(key, await this.#client.get(key));
    return this.#state.view<T>(key);
  }

  /** The items at `paths` as `get` sees them, null where there is none; the paths not read before are read together (at most 100). */
  async getMany<T = unknown>(paths: Iterable<PathLike>): Promise<(Item<T> | null)[]> {
    this.#state.checkOpen();
    const keys = [...paths].map(toPath);
    const unread = this.#state.unread(keys);
    if (unread.length > 0) {
      const items = await this.#client.getMany(unread);
      unread.forEach((key, i) => this.#state.record(key, items[i] ?? null));
    }
    return keys.map((k) => this.#state.view<T>(k));
  }

  /**
   * One page of a listing (as `Client.listPage`), with this transaction's writes in its range
   * applied. The commit fails if anything in the listing's range (with `filter`: in its filtered
   * result) changes after its first page: read the first page here, then the next ones with its page
   * tokens (a `pageToken` of a listing whose first page this transaction did not read throws
   * `InvalidRequest`). A filtered page may be empty and still have a `nextPageToken`; a filtered
   * listing cannot show what this transaction put in its range (`InvalidRequest`: the client does
   * not evaluate filters), so list it before writing there.
   */
  listPage<T = unknown>(prefix: PathLike, options: TransactionListPageOptions & { children: true }): Promise<Page<T, Entry<T>>>;
  listPage<T = unknown>(prefix: PathLike, options?: TransactionListPageOptions & { children?: false }): Promise<Page<T>>;
  listPage<T = unknown>(prefix: PathLike, options?: TransactionListPageOptions): Promise<Page<T, Entry<T>>>;
  async listPage<T = unknown>(prefix: PathLike, options: TransactionListPageOptions = {}): Promise<Page<T, Entry<T>>> {
    return this.#listPage<T>(toPath(prefix), options, options.pageSize, options.pageToken ?? null);
  }

  /**
   * Every entry of a listing (or the first `limit`), as `Client.list` iterates them, with this
   * transaction's writes in its range applied: `for await (const item of tx.list(prefix))`. It
   * reads the pages through the transaction as the loop goes (`pageSize` each), and the commit
   * fails if anything in the listing's range changes after its first page (with `filter`, only a
   * change to the filtered result: an item entering, changing in or leaving it). `filter` and
   * `maxScan` as in `Client.list`; a filtered listing cannot show items this transaction put in its
   * range (see {@link listPage}).
   *
   * Awaiting it (`await tx.list(prefix)`, from when it resolved to one page) still gives the first
   * page, deprecated: use {@link listPage}.
   */
  list<T = unknown>(prefix: PathLike, options: TransactionListOptions & { children: true }): TransactionListing<T, Entry<T>>;
  list<T = unknown>(prefix: PathLike, options?: TransactionListOptions & { children?: false }): TransactionListing<T, Item<T>>;
  list<T = unknown>(prefix: PathLike, options?: TransactionListOptions): TransactionListing<T, Entry<T>>;
  list<T = unknown>(prefix: PathLike, options: TransactionListOptions = {}): TransactionListing<T, Entry<T>> {
    const path = toPath(prefix);
    if (options.pageToken != null) {
      deprecated("PATHDB_TX_LIST_PAGE_TOKEN", "tx.list(prefix, { pageToken }) is deprecated: use tx.listPage(prefix, { pageToken }) for one page");
    }
    return new TransactionListing<T, Entry<T>>((pageSize, pageToken) => this.#listPage<T>(path, options, pageSize, pageToken), {
      limit: options.limit,
      pageSize: options.pageSize,
      pageToken: options.pageToken,
    });
  }

  async #listPage<T>(
    path: KeyPath,
    options: TransactionListPageOptions,
    pageSize: number | undefined,
    pageToken: string | null,
  ): Promise<Page<T, Entry<T>>> {
    const state = this.#state;
    const children = options.children ?? false;
    const reverse = options.reverse ?? false;
    const filter = options.filter === undefined ? null : filterParam(options.filter);
    const bounds: Listing["bounds"] = {};
    for (const name of ["gt", "gte", "lt", "lte"] as const) {
      const bound = options[name];
      if (bound !== undefined) bounds[name] = toPath(bound);
    }
    const key = rangeKey(path, children, bounds, filter);
    const known = state.listingBefore(key, path, pageToken);
    const request: ListPageOptions = { children, reverse, ...bounds, pageToken };
    if (filter !== null) request.filter = filter;
    if (options.maxScan !== undefined) request.maxScan = options.maxScan;
    if (pageSize !== undefined) request.pageSize = pageSize;
    const page = await this.#client.listPage<T>(path, request);
    const listing = state.listed(key, known, page, bounds, path, children, filter);
    await this.getMany(state.overlayReads(listing, page, reverse, pageToken));
    return state.overlay(listing, page, reverse, pageToken);
  }

  /** Writes `value` at `path` when the transaction commits (if `path` was read, only if it is still as read). */
  put(path: PathLike, value: unknown): void {
    this.#state.write(path, { kind: "put", value: copyJson(value) });
  }

  /**
   * Changes the item at `path` as this transaction sees it: reads it (`get`), applies a JSON Merge
   * Patch (`{ merge }`, RFC 7396) or a JSON Patch (`{ patch: [...] }`, RFC 6902 plus `increment`)
   * here, in the client, and puts the result; resolves to the item as it will be. Throws `NotFound`
   * for no item, and `PatchTestFailed`, `PatchConflict` or `InvalidRequest` (`invalid_patch`) as the
   * server would.
   */
  async patch<T = unknown>(path: PathLike, change: TxPatch): Promise<Item<T>> {
    const key = toPath(path);
    const current = await this.get(key);
    if (current === null) throw new NotFound(`no item at ${key} to patch`, "not_found");
    const value = "merge" in change ? mergePatch(current.value, change.merge) : jsonPatch(current.value, change.patch);
    this.put(key, value);
    return this.#state.view<T>(key)!;
  }

  /**
   * Creates an item with a generated id at `{parent}/{namespace}-{id}` when the transaction
   * commits: `tx.create("/user-1/order", {...})` (`"/user"` makes a new group). Returns a
   * {@link PendingCreate} whose `path` and `item` are filled in by the commit.
   */
  create<T = unknown>(parentAndNamespace: PathLike, value: T, options: { id?: IdKind } = {}): PendingCreate<T> {
    const state = this.#state;
    state.checkOpen();
    const [parent, namespace] = createTarget(parentAndNamespace);
    const id = options.id ?? "uuid";
    new Create(parent, namespace, null, { id }); // checks the namespace now
    const handle = new PendingCreate<T>(parent, namespace, copyJson(value), id);
    state.creates.push(handle as PendingCreate);
    return handle;
  }

  /** Deletes the item at `path` when the transaction commits (if read, only if still as read; read as absent, it only checks it still is). */
  delete(path: PathLike): void {
    this.#state.write(path, { kind: "delete" });
  }
}

/** Where a listing shows an entry: an item listed under an alias is at the alias. */
function position(entry: { path: KeyPath; alias?: KeyPath }): KeyPath {
  return entry.alias ?? entry.path;
}
