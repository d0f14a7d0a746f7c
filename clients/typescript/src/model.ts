/**
 * The values the client and the transaction both speak of: items, pages, changes, namespace
 * definitions, the options of requests, and the operations of a transaction (`Put`, `Delete`,
 * `Check`, `CheckList`, `Create`, `Patch`, `Merge`, `Increment`) with their wire form. No I/O;
 * below both `client.ts` and `transaction.ts`, so that neither imports the other.
 */

import type { Violation } from "./errors.js";
import { KeyPath, formatId, toPath, type PathLike } from "./keypath.js";

/**
 * A JSON document at a key path, with its metadata (times UTC; `*Micros` exact, in µs since the
 * epoch). `alias` is there when the item was read through an alias path (a `get` of one), or
 * listed or fed under one (a listing or change feed of an alias prefix): that alias. `path` is
 * always the item's own (docs/aliases.md).
 */
export interface Item<T = unknown> {
  readonly path: KeyPath;
  readonly version: number;
  readonly value: T;
  readonly createdAt: Date;
  readonly modifiedAt: Date;
  readonly expiresAt: Date | null;
  readonly createdAtMicros: number;
  readonly modifiedAtMicros: number;
  readonly expiresAtMicros: number | null;
  readonly alias?: KeyPath;
  /**
   * The definition version of its namespace the value is in: the one the client speaks
   * (`schemaVersions`), else the newest; absent for a namespace without a definition
   * (docs/migrations.md).
   */
  readonly schemaVersion?: number;
}

/**
 * A child in a children listing that has items below it and no item of its own (a folder):
 * `{"path": ..., "node": true}` on the wire. Tell it from an item with `"node" in entry`.
 */
export interface Node {
  readonly path: KeyPath;
  readonly node: true;
}

/** One entry of a listing: an item, or (in a children listing) a node. */
export type Entry<T = unknown> = Item<T> | Node;

/**
 * One page of a listing; pass `nextPageToken` as `pageToken` to continue (null at the end). A
 * first page (no `pageToken`) also has `changesToken`: the change feed's position at this
 * listing, to follow the prefix from with `changes` or `watch` without a gap (null on later pages).
 * A children listing's page holds entries (`Page<T, Entry<T>>`); a subtree listing's, items.
 * `scanned` is how many items the server read for this page: those on it and those a `filter` left
 * out (null from a server that does not say). A filtered page stops after `maxScan` items read, so
 * it may hold fewer items than asked for, even none, and still have a `nextPageToken`: follow it
 * until it is null.
 */
export interface Page<T = unknown, E = Item<T>> {
  readonly items: E[];
  readonly nextPageToken: string | null;
  readonly changesToken: string | null;
  readonly scanned: number | null;
}

/** A change of the feed: the item was created or replaced; `item` is as that commit wrote it. */
export interface PutChange<T = unknown> {
  readonly op: "put";
  readonly item: Item<T>;
  /** The item's path. */
  readonly path: KeyPath;
  /** The version written. */
  readonly version: number;
}

/**
 * A change of the feed: the item at `path` was deleted or expired; `version` is the version removed.
 * In the feed of an alias prefix, `alias` is the alias path the item left (it was deleted, or its
 * member changed). In a filtered feed (`changes(prefix, { filter })`), `left` is true when the item
 * was not deleted but no longer matches the filter (it matched before this change): `version` is
 * then the version that stopped matching. Either way, drop it from what you hold.
 */
export interface DeleteChange {
  readonly op: "delete";
  readonly path: KeyPath;
  readonly version: number;
  readonly alias?: KeyPath;
  readonly left?: boolean;
}

/**
 * One change of the feed, told apart by `op`. Both kinds have `path` and `version`: apply a change
 * only if its `version` is not older than the one you hold (docs/changes.md).
 */
export type Change<T = unknown> = PutChange<T> | DeleteChange;

/** Changes after a token, in commit order; pass `nextToken` as `since` to continue. */
export interface ChangePage<T = unknown> {
  readonly changes: Change<T>[];
  readonly nextToken: string;
}

export interface ChangesOptions {
  /** A listing's `changesToken` or a page's `nextToken`; without it, no changes and the current position. */
  since?: string | null;
  /**
   * Only the changes that matter to this filter's result (a CEL expression, see {@link ListOptions}):
   * an item entering it or changing while it matches is a `"put"`, one leaving it a `"delete"`
   * with `left: true`.
   */
  filter?: string;
  /** At most this many changes, 1..=1000 (default 100); a page never ends inside a transaction. */
  limit?: number;
  /** With `since` and no change yet: wait up to this many seconds (0..=60) for one to commit. */
  waitSeconds?: number;
  /** Aborts the request (a long poll included); the call rejects with the signal's reason. */
  signal?: AbortSignal | undefined;
}

export interface WatchOptions {
  /** Where to start; without it, the position when iterating starts. */
  since?: string | null;
  /** Only the changes that matter to this filter's result, as in {@link ChangesOptions}. */
  filter?: string;
  /** How long each long poll waits for a change, 1..=60 seconds (default 30). */
  waitSeconds?: number;
  /** Changes per request, 1..=1000 (default 100). */
  limit?: number;
  /** Ends the watch, even during a long poll: the loop throws the signal's reason. */
  signal?: AbortSignal | undefined;
}

/**
 * How a create generates its id: a random version 4 UUID (`uuid`), a random integer in [1, 2^53)
 * (`rand53`), or the parent's next integer for that namespace, 1, 2, 3, ..., never issued twice,
 * even after deletes (`sequence`).
 */
export type IdKind = "uuid" | "rand53" | "sequence";

export interface CreateOptions {
  /** How the id is generated (default `uuid`). */
  id?: IdKind;
  history?: boolean;
  ttlSeconds?: number;
}

export interface PutOptions {
  mustNotExist?: boolean;
  ifVersion?: number;
  history?: boolean;
  ttlSeconds?: number;
}

/**
 * Options of `patch`, `merge` and `increment` (and of the `Patch`, `Merge` and `Increment`
 * transaction operations): `mustNotExist`, `ifVersion`, `history` and `ttlSeconds` as on a put.
 */
export interface PatchOptions extends PutOptions {
  /**
   * With no item at the path, apply the patch to `{}` and create it, instead of failing with
   * `NotFound`. Default false, except for `increment` (a counter that does not exist yet starts at 0).
   */
  create?: boolean;
}

/**
 * One operation of a JSON Patch (RFC 6902, plus PathDB's `increment`), told apart by `op`. Paths
 * are JSON Pointers (RFC 6901) into the item's value: `/tags/0`, `/tags/-` (an array's end).
 * - `add`: set a member, or insert into an array;
 * - `remove`, `replace`: of a value that must exist;
 * - `move`, `copy`: the value at `from` to `path`;
 * - `test`: the value at `path` must equal `value`, or the patch fails with `PatchTestFailed`;
 * - `increment`: add `value` to the number at `path` (a missing member starts at 0; integers stay
 *   integers, within 2^53).
 */
export type PatchOperation =
  | { readonly op: "add"; readonly path: string; readonly value: unknown }
  | { readonly op: "remove"; readonly path: string }
  | { readonly op: "replace"; readonly path: string; readonly value: unknown }
  | { readonly op: "move"; readonly from: string; readonly path: string }
  | { readonly op: "copy"; readonly from: string; readonly path: string }
  | { readonly op: "test"; readonly path: string; readonly value: unknown }
  | { readonly op: "increment"; readonly path: string; readonly value: number };

export interface ListOptions {
  /** Only the direct children of the prefix. */
  children?: boolean;
  /** Descending key order. */
  reverse?: boolean;
  gt?: PathLike;
  gte?: PathLike;
  lt?: PathLike;
  lte?: PathLike;
  /**
   * Only the items this CEL expression is true for (docs/filters.md): it sees `value` (the item's
   * JSON value), `path` (its text), `ids` (namespace to id), `version`, `created_at` and
   * `modified_at` (microseconds): `'value.status == "open" && value.total > 100'`. An error (a
   * missing member) is no match; a children listing's nodes never match. An invalid filter throws
   * `InvalidFilter`.
   */
  filter?: string;
  /** Items a page reads at most, 1..=100000 (default 1000): a filtered page may hold fewer items, even none. */
  maxScan?: number;
}

/**
 * The members of a value a read keeps: dotted member paths, as an array (`["title", "author.name"]`)
 * or their comma-separated text (`"title,author.name"`).
 */
export type Fields = string | readonly string[];

export interface ListAllOptions extends ListOptions {
  /** At most this many items in all. */
  limit?: number;
  /** Items per request, 1..=1000 (default 100). */
  pageSize?: number;
  /** Only these members of each value (see {@link Fields}). */
  fields?: Fields;
}

export interface ListPageOptions extends ListOptions {
  /** Items in this page, 1..=1000 (default 100). */
  pageSize?: number;
  pageToken?: string | null;
  /** Only these members of each value (see {@link Fields}). */
  fields?: Fields;
}

/** A transaction's `listPage`: a range, a filter, a page (no `fields`: the transaction's view is of whole values). */
export interface TransactionListPageOptions extends ListOptions {
  /** Items in this page, 1..=1000 (default 100). */
  pageSize?: number;
  pageToken?: string | null;
}

/** A transaction's `list`: a range, a filter, how many in all and per request. */
export interface TransactionListOptions extends ListOptions {
  /** At most this many entries in all. */
  limit?: number;
  /** Entries per request, 1..=1000 (default 100). */
  pageSize?: number;
  /** @deprecated Start at this page: use `tx.listPage(prefix, { pageToken })` for pages. */
  pageToken?: string | null;
}

/** What `count` counts: a listing's range and filter. */
export interface CountOptions {
  /** Only the items this filter matches (see {@link ListOptions}); every item without one. */
  filter?: string;
  /** The direct children of the prefix. */
  children?: boolean;
  gt?: PathLike;
  gte?: PathLike;
  lt?: PathLike;
  lte?: PathLike;
  /** Items a request counts at most, 1..=100000 (default 1000); a longer range takes more requests. */
  maxScan?: number;
  /** Aborts the count: the call rejects with the signal's reason. */
  signal?: AbortSignal | undefined;
}

export interface GetOptions {
  /** Only these members of the value (see {@link Fields}); the version stays the item's. */
  fields?: Fields;
}

export interface GetManyOptions extends GetOptions {
  /** An item this filter (see {@link ListOptions}) does not match is null, like a missing one. */
  filter?: string;
}

/** `fields` as the `fields` query parameter: the member paths joined by commas, checked. */
export function fieldsParam(fields: Fields): string {
  if (typeof fields === "string") return fields;
  if (!Array.isArray(fields) || fields.length === 0) throw new RangeError("fields names at least one member");
  for (const name of fields as readonly unknown[]) {
    if (typeof name !== "string") throw new TypeError(`a field is a string (a dotted member path), not ${typeof name}`);
    if (name === "" || name.includes(",")) throw new RangeError(`a field is a non-empty dotted member path without ',': ${JSON.stringify(name)}`);
  }
  return fields.join(",");
}

/** A filter as the wire takes it, checked to be a string (the server checks the expression). */
export function filterParam(filter: unknown): string {
  if (typeof filter !== "string") throw new TypeError(`a filter is a string (a CEL expression), not ${typeof filter}`);
  return filter;
}

/**
 * A JSON Schema (draft 2020-12 unless its `$schema` names 2019-09 or draft 7): an object, or
 * `true` (anything) or `false` (nothing).
 */
export type Schema = { readonly [member: string]: unknown } | boolean;

/**
 * Where an alias template's aliases stand: `ready` (every item has its alias: reads through it are
 * served), `building` (the aliases of the items stored before the template are being written:
 * reads through it throw `AliasBuilding`), `conflict` (the build found two items with one alias and
 * stopped: see `conflicts`, fix the items, then `retryAliasBuild`), `removing` (the template was
 * removed from the definition: its aliases are being deleted).
 */
export type AliasState = "ready" | "building" | "conflict" | "removing";

/** An alias that a build found for more than one item: the `alias` path and the `items` that would share it. */
export interface AliasConflict {
  readonly alias: KeyPath;
  readonly items: KeyPath[];
}

/**
 * An alias template of a namespace (`path`, such as `/email-{email}`) and where its aliases stand:
 * its `state`, how many items its build (or removal) has `checked`, how many alias records it has
 * `written` (or removed), and with `conflict` the `conflicts` it found (at most 20).
 */
export interface AliasBuild {
  readonly path: string;
  readonly state: AliasState;
  readonly checked: number;
  readonly written: number;
  readonly conflicts: AliasConflict[];
}

/**
 * An alias template as `putNamespace` takes it: its text (`"/email-{email}"`), or `{ path: text }`
 * as the wire has it. A template is a key path whose ids may be `{member}` (a member of the value,
 * dotted for a nested one: `{address.city}`), `{!member}` (the same as a descending id) or `{@ns}`
 * (the id of the item path's element of namespace `ns`).
 */
export type AliasTemplate = string | { readonly path: string };

/**
 * A migration step of a namespace definition version (docs/migrations.md), as the wire has it: the
 * changes from the previous version's values to this one's. Paths are JSON pointers:
 *
 * - `{ op: "rename", from: "/name", to: "/full_name" }`: a member renamed;
 * - `{ op: "add", path: "/tier", default: "free" }`: a member added, older items get `default`;
 * - `{ op: "remove", path: "/legacy", read_default: 0 }`: a member removed, older readers see
 *   `read_default` (optional);
 * - `{ op: "rename_value", path: "/status", from: "shipped", to: "sent" }`: a string value renamed.
 *
 * The client sends each step as given; the server checks them (`InvalidRequest`).
 */
export type MigrationStep = { readonly op: string; readonly [member: string]: unknown };

/**
 * How a definition treats the schema's `format`s: `assert` checks them (`email`, `date-time`, ...)
 * in every draft, `annotate` never does; left out, as the schema's draft says (2020-12 and 2019-09:
 * an annotation, not checked).
 */
export type Formats = "assert" | "annotate";

/**
 * Where the rewrite of a namespace's stored items stands (docs/migrations.md): a version with
 * migration steps starts one, in the background, bringing every stored item to version `to`; it
 * has read `checked` items of the namespace and rewritten `rewritten` of them, and is `done` when
 * it has read them all. Items read the same whether or not they are rewritten.
 */
export interface Rewrite {
  readonly to: number;
  readonly checked: number;
  readonly rewritten: number;
  readonly done: boolean;
}

/**
 * What items of one namespace look like (the namespace of an item is its path's last element's:
 * `/user-7/post-2` is a `post`): its `schema` (null: any value), how many revisions a put with
 * history keeps (`history`, null: the server's default), a `description`, and its alias templates
 * with where their aliases stand (`aliases`: the definition's own, in its order, then those being
 * removed). `version` counts its changes (1, 2, ...): pass it as `ifVersion` to `putNamespace` or
 * `deleteNamespace` to change only what you read. It is also the definition's schema version, the
 * one `schemaVersions` names and an item's `schemaVersion` counts (docs/migrations.md).
 *
 * Since migrations: `migrate`, the steps from the previous version's values to this one's (empty:
 * none); `formats` (null: as the schema's draft says); and `rewrite`, where the background rewrite
 * of stored items to the newest version with steps stands (`getNamespace` only; null when there
 * has been none, or from an older server).
 *
 * `changes` is false when the groups of the namespace (the paths whose first element is of it)
 * keep no change log, for good (docs/changes.md, "Groups without a change log"); null when they
 * keep one (true if the definition says so explicitly; null from an older server).
 */
export interface NamespaceDefinition {
  readonly namespace: string;
  readonly version: number;
  readonly schema: Schema | null;
  readonly history: number | null;
  readonly description: string | null;
  readonly aliases: AliasBuild[];
  readonly createdAt: Date;
  readonly modifiedAt: Date;
  readonly createdAtMicros: number;
  readonly modifiedAtMicros: number;
  readonly migrate: MigrationStep[];
  readonly formats: Formats | null;
  readonly rewrite: Rewrite | null;
  readonly changes: boolean | null;
}

/** One page of namespace definitions, in name order; pass `nextPageToken` as `pageToken` to continue (null at the end). */
export interface NamespacePage {
  readonly namespaces: NamespaceDefinition[];
  readonly nextPageToken: string | null;
}

/** A definition as `putNamespace` and `checkNamespace` take it: what is left out is not in the definition. */
export interface NamespaceOptions {
  schema?: Schema;
  /** Revisions a put with history keeps, 1 or more. */
  history?: number;
  description?: string;
  /** Alias templates (at most 8), whose aliases every write keeps: `["/email-{email}"]`. */
  aliases?: readonly AliasTemplate[];
  /**
   * The new version's migration steps from the previous version's values (at most 256; see
   * {@link MigrationStep}): `[{ op: "rename", from: "/name", to: "/full_name" }]`. With them every
   * version stays readable and writable (`schemaVersions`, docs/migrations.md). Steps never carry
   * over from the version before. Left out (or empty): none.
   */
  migrate?: readonly MigrationStep[];
  /** `assert`: check the schema's `format`s in every draft; `annotate`: never. Left out: as the schema's draft says. */
  formats?: Formats;
  /**
   * `false`: the groups of the namespace (the paths whose first element is of it: `/session-7/...`
   * for `session`) keep no change log, so a write there is the item alone (on DynamoDB one
   * `PutItem`), and the group has no change feed, listing `changesToken` or listing checks. For
   * good: a definition without it is then refused, as is `deleteNamespace` (docs/changes.md,
   * "Groups without a change log"). Left out: they keep one.
   */
  changes?: boolean;
}

export interface WaitForAliasesOptions {
  /** Give up after this many milliseconds, throwing `AliasBuilding` (default: no limit). */
  timeoutMs?: number;
  /** Read the definition every this many milliseconds (default 500). */
  intervalMs?: number;
  /** Stops waiting: the call rejects with the signal's reason. */
  signal?: AbortSignal | undefined;
}

export interface PutNamespaceOptions extends NamespaceOptions {
  /** Only if the namespace has no definition yet (`If-None-Match: *`). */
  mustNotExist?: boolean;
  /** Only if the definition's version is this one (`If-Match`). */
  ifVersion?: number;
  /**
   * Store a definition the server calls incompatible with the previous version (a new required
   * member without an `add` step, say; `force=true`), which otherwise throws `IncompatibleSchema`
   * with its `problems`.
   */
  force?: boolean;
}

/**
 * A stored item that a schema refuses: its `path`, what does not fit, and its `version` (null if
 * the server leaves it out).
 */
export interface ViolatingItem {
  readonly path: KeyPath;
  readonly version: number | null;
  readonly violations: Violation[];
}

/**
 * What a schema would say about the items already stored (`checkNamespace`, a dry run that stores
 * nothing): how many items of the namespace it `checked` (each read through the new version's
 * `migrate` steps first), how many are `violating` it, the `first` of those (at most 20), and the
 * `problems` that `putNamespace` would throw `IncompatibleSchema` for without `force` (empty: none,
 * or a server from before migrations).
 */
export interface SchemaCheck {
  readonly checked: number;
  readonly violating: number;
  readonly first: ViolatingItem[];
  readonly problems: string[];
}

/**
 * One page of the stored items that a namespace's current schema refuses. `checked` is how many
 * items of the namespace this page read. A page may hold fewer items than asked for (even none)
 * and still have a `nextPageToken`: the server reads a bounded number of items per page. Null at
 * the end.
 */
export interface ViolationsPage {
  readonly items: ViolatingItem[];
  readonly checked: number;
  readonly nextPageToken: string | null;
}

export interface NamespacePageOptions {
  /** Entries in this page, 1..=1000 (default 100). */
  pageSize?: number;
  pageToken?: string | null;
}

export interface NamespaceListOptions {
  /** At most this many in all. */
  limit?: number;
  /** Entries per request, 1..=1000 (default 100). */
  pageSize?: number;
}

/** What a rule allows, and what a `Forbidden` names: `read`, `write`, or `admin` (definitions, roles, tokens, backups: the whole database). */
export type Operation = "read" | "write" | "admin";

/**
 * The value of a rule's variable (a token's `vars`): an id, typed as in key paths (`7` matches
 * `/team-7`, `"alice"` matches `/user-alice`).
 */
export type VarValue = number | string;

/**
 * One rule of a role: the key paths it covers (`path`, a template: `/team-{team}/**`,
 * `/public-1/doc-*`, `/**`) and the operations it allows there (`allow`: `read`, `write`, `admin`;
 * `admin` only on `/**`). A `{var}` id is bound by the token's `vars` (or a JWT's claims). A path
 * is allowed an operation when any rule of the role allows it there. The same shape as on the wire.
 */
export interface Rule {
  readonly path: string;
  readonly allow: readonly string[];
}

/**
 * A named set of rules that tokens are issued for (`putRole`, `createToken`). `version` counts its
 * changes (1, 2, ...): pass it as `ifVersion` to `putRole` or `deleteRole` to change only what you
 * read. The built-in roles `read`, `read-write` and `admin` (`builtin`) cannot change; their
 * `version` is 0 and their times the epoch.
 */
export interface Role {
  readonly name: string;
  readonly rules: Rule[];
  readonly description: string | null;
  readonly version: number;
  readonly builtin: boolean;
  readonly createdAt: Date;
  readonly modifiedAt: Date;
  readonly createdAtMicros: number;
  readonly modifiedAtMicros: number;
}

export interface PutRoleOptions {
  /** For people. */
  description?: string;
  /** Only if there is no role of this name yet (`If-None-Match: *`). */
  mustNotExist?: boolean;
  /** Only if the role's version is this one (`If-Match`). */
  ifVersion?: number;
}

/**
 * An issued token, without its secret (safe to show and log): its `id` (the part of the token
 * after `pdb_`, up to the next `_`), its `role`, the values of the role's variables (`vars`), a
 * `description`, and when it was created, stops working (`expiresAt`, null: when revoked) and was
 * last presented (`lastUsedAt`, to the minute; null: never).
 */
export interface TokenInfo {
  readonly id: string;
  readonly role: string;
  readonly vars: Record<string, VarValue>;
  readonly description: string | null;
  readonly createdAt: Date;
  readonly expiresAt: Date | null;
  readonly lastUsedAt: Date | null;
  readonly createdAtMicros: number;
  readonly expiresAtMicros: number | null;
  readonly lastUsedAtMicros: number | null;
}

/**
 * A token just issued (`createToken`): its information, and `token`, the secret to pass as
 * `new Client(url, { token })`. The server shows the secret only this once (and keeps only its
 * hash): keep it now.
 */
export interface IssuedToken extends TokenInfo {
  readonly token: string;
}

export interface CreateTokenOptions {
  /** The values of the role's variables: `{ team: 7 }` (integers or strings, read as key path ids). */
  vars?: Record<string, VarValue>;
  /** When it stops working (default: when revoked). */
  expiresAt?: Date | null;
  /** For people. */
  description?: string;
}

/**
 * What the client's credentials allow (`session()`): whether the server requires a token
 * (`authRequired`), how the request proved who it is (`via`: `open` without tokens configured,
 * `config`, `token` for an issued token, `jwt`), its `role` and the role's `rules` as written,
 * with the `vars` they are bound to, the issued token's `tokenId` (else null), and whether it may
 * administer the database (`admin`). `scope` is the built-in role's name (`read`, `read-write`,
 * `admin`), else `custom`, as servers before roles told.
 */
export interface Session {
  readonly authRequired: boolean;
  readonly scope: string;
  readonly via: string;
  readonly role: string;
  readonly rules: Rule[];
  readonly vars: Record<string, VarValue>;
  readonly tokenId: string | null;
  readonly admin: boolean;
}

/** A JSON object as it goes on the wire. */
export type Wire = Record<string, unknown>;

function conditions(ifVersion: number | undefined, mustExist: boolean, mustNotExist: boolean): Wire {
  if (Number(ifVersion !== undefined) + Number(mustExist) + Number(mustNotExist) > 1) {
    throw new TypeError("give at most one of ifVersion, mustExist, mustNotExist");
  }
  const out: Wire = {};
  if (ifVersion !== undefined) out.if_version = ifVersion;
  if (mustExist) out.must_exist = true;
  if (mustNotExist) out.must_not_exist = true;
  return out;
}

/** A transaction operation: create or replace the item at `path`. */
export class Put {
  readonly path: KeyPath;
  readonly #wire: Wire;
  constructor(path: PathLike, value: unknown, options: PutOptions = {}) {
    this.path = toPath(path);
    this.#wire = {
      op: "put",
      path: this.path.toString(),
      value: value === undefined ? null : value,
      ...conditions(options.ifVersion, false, options.mustNotExist ?? false),
    };
    if (options.history) this.#wire.history = true;
    if (options.ttlSeconds !== undefined) this.#wire.ttl_seconds = options.ttlSeconds;
  }
  toWire(): Wire {
    return { ...this.#wire };
  }
}

/** A transaction operation: delete the item at `path` (its result is the deleted item, or null). */
export class Delete {
  readonly path: KeyPath;
  readonly #wire: Wire;
  constructor(path: PathLike, options: { ifVersion?: number } = {}) {
    this.path = toPath(path);
    this.#wire = { op: "delete", path: this.path.toString(), ...conditions(options.ifVersion, false, false) };
  }
  toWire(): Wire {
    return { ...this.#wire };
  }
}

/** A transaction operation: a condition that must hold for the transaction to apply. */
export class Check {
  readonly path: KeyPath;
  readonly #wire: Wire;
  constructor(path: PathLike, options: { ifVersion?: number; mustExist?: boolean; mustNotExist?: boolean }) {
    this.path = toPath(path);
    const c = conditions(options.ifVersion, options.mustExist ?? false, options.mustNotExist ?? false);
    if (Object.keys(c).length === 0) throw new TypeError("a check needs ifVersion, mustExist or mustNotExist");
    this.#wire = { op: "check", path: this.path.toString(), ...c };
  }
  toWire(): Wire {
    return { ...this.#wire };
  }
}

/** The range options of a listing, and what it showed, for a {@link CheckList}. */
export interface CheckListOptions {
  /** The listing's filter: only a change to its filtered result (an item entering, changing in or leaving it) fails the check. */
  filter?: string;
  children?: boolean;
  gt?: PathLike;
  gte?: PathLike;
  lt?: PathLike;
  lte?: PathLike;
  /**
   * What the listing's pages showed, path to version: on DynamoDB a listing token starts a margin
   * before the listing, and `seen` lets the server ignore the changes of that margin the listing
   * already reflects (`transaction` always sends it).
   */
  seen?: Iterable<readonly [PathLike, number]> | Record<string, number>;
}

/**
 * A transaction operation: a listing's check. The transaction fails (`ConditionFailed`, 409
 * `condition_failed`) if anything in the listing's range (`prefix` with `children` and the bounds,
 * as `listPage` takes them) was put, patched, deleted, expired, moved or copied after the listing
 * whose first page returned `changesToken`.
 */
export class CheckList {
  readonly prefix: KeyPath;
  readonly changesToken: string;
  readonly #wire: Wire;
  constructor(prefix: PathLike, changesToken: string, options: CheckListOptions = {}) {
    this.prefix = toPath(prefix);
    this.changesToken = changesToken;
    this.#wire = { op: "check_list", prefix: this.prefix.toString(), changes_token: changesToken };
    if (options.children) this.#wire.children = true;
    for (const name of ["gt", "gte", "lt", "lte"] as const) {
      const bound = options[name];
      if (bound !== undefined) this.#wire[name] = toPath(bound).toString();
    }
    if (options.seen !== undefined) {
      const seen: Record<string, number> = {};
      const entries = Symbol.iterator in options.seen ? options.seen : Object.entries(options.seen);
      for (const [path, version] of entries as Iterable<readonly [PathLike, number]>) seen[toPath(path).toString()] = version;
      this.#wire.seen = seen;
    }
    if (options.filter !== undefined) this.#wire.filter = filterParam(options.filter);
  }
  toWire(): Wire {
    return { ...this.#wire };
  }
}

/** In a transaction, the path operation `index` (a `Create`) creates, as a later `Create`'s parent. */
export class Created {
  constructor(readonly index: number) {
    if (!Number.isSafeInteger(index) || index < 0) throw new RangeError(`Created takes an operation's index, not ${index}`);
  }
}

/**
 * `{parent}/{namespace}`, checked (just `/{namespace}` without a parent): what a create completes
 * with an id, as text and as it goes in a URL. (Not a `KeyPath`: a group without an id is none.)
 */
export function createTarget(parent: PathLike | null, namespace: string): { text: string; url: string } {
  if (parent === null || parent === "" || parent === "/" || (parent instanceof KeyPath && parent.elements.length === 0)) {
    new KeyPath().add(namespace, 1); // throws InvalidKeyPath for an invalid namespace
    return { text: `/${namespace}`, url: namespace }; // ASCII letters, digits and '_' only
  }
  const path = toPath(parent).add(namespace);
  return { text: path.toString(), url: urlPath(path) };
}

/**
 * A transaction operation: create an item at `{parent}/{namespace}-{id}` with a generated id (see
 * `Client.create`). `parent` is a path, null for a new group, or `new Created(n)` for the item
 * operation `n` creates. Its result is the item created.
 */
export class Create {
  readonly parent: PathLike | Created | null;
  readonly namespace: string;
  readonly #wire: Wire;
  constructor(parent: PathLike | Created | null, namespace: string, value: unknown, options: CreateOptions = {}) {
    this.parent = parent;
    this.namespace = namespace;
    const path = parent instanceof Created ? `$${parent.index}${createTarget(null, namespace).text}` : createTarget(parent, namespace).text;
    this.#wire = { op: "create", path, id: options.id ?? "uuid", value: value === undefined ? null : value };
    if (options.history) this.#wire.history = true;
    if (options.ttlSeconds !== undefined) this.#wire.ttl_seconds = options.ttlSeconds;
  }
  toWire(): Wire {
    return { ...this.#wire };
  }
}

export function incrementOperation(pointer: string, by: number): PatchOperation {
  if (typeof pointer !== "string") throw new TypeError(`a JSON Pointer is a string, not ${typeof pointer}`);
  if (typeof by !== "number" || !Number.isFinite(by)) throw new TypeError(`an increment is a finite number, not ${String(by)}`);
  return { op: "increment", path: pointer, value: by };
}

function patchWire(path: KeyPath, kind: "patch" | "merge", document: unknown, options: PatchOptions): Wire {
  const wire: Wire = {
    op: "patch",
    path: path.toString(),
    [kind]: document === undefined ? null : document,
    ...conditions(options.ifVersion, false, options.mustNotExist ?? false),
  };
  if (options.create) wire.create = true;
  if (options.history) wire.history = true;
  if (options.ttlSeconds !== undefined) wire.ttl_seconds = options.ttlSeconds;
  return wire;
}

/**
 * A transaction operation: apply a JSON Patch (operations in order) to the item at `path`; with
 * `create`, to `{}` when there is no item (otherwise the transaction fails with `NotFound`). After a
 * `Put` of the same path in the transaction it applies to the value put. Its result is the item written.
 */
export class Patch {
  readonly path: KeyPath;
  readonly operations: readonly PatchOperation[];
  readonly #wire: Wire;
  constructor(path: PathLike, operations: readonly PatchOperation[], options: PatchOptions = {}) {
    this.path = toPath(path);
    this.operations = [...operations];
    this.#wire = patchWire(this.path, "patch", this.operations, options);
  }
  toWire(): Wire {
    return { ...this.#wire };
  }
}

/**
 * A transaction operation: apply a JSON Merge Patch (RFC 7396: objects merge member by member,
 * `null` removes a member, anything else replaces) to the item at `path`, with the options of
 * `Patch`. Its result is the item written.
 */
export class Merge {
  readonly path: KeyPath;
  readonly document: unknown;
  readonly #wire: Wire;
  constructor(path: PathLike, document: unknown, options: PatchOptions = {}) {
    this.path = toPath(path);
    this.document = document;
    this.#wire = patchWire(this.path, "merge", document, options);
  }
  toWire(): Wire {
    return { ...this.#wire };
  }
}

/**
 * A transaction operation: add `by` to the number at the JSON Pointer `pointer` in the item at
 * `path` (a `Patch` of one `increment`). A missing member starts at 0; `create` defaults to true,
 * so a counter that does not exist yet starts at 0 too.
 */
export class Increment extends Patch {
  constructor(path: PathLike, pointer: string, by = 1, options: PatchOptions = {}) {
    super(path, [incrementOperation(pointer, by)], { ...options, create: options.create ?? true });
  }
}

/** A transaction operation (an `Increment` is a `Patch`). */
export type Op = Put | Delete | Check | CheckList | Create | Patch | Merge;

/**
 * The path as it goes in a URL: each element percent-encoded on its own, so `/` and `%` inside
 * ids become `%2F` and `%25`, and only the separators stay `/`.
 */
export function urlPath(path: KeyPath): string {
  return path.elements
    .map((e) => {
      const text = e.id === null ? e.namespace : `${e.namespace}-${formatId(e.id)}`;
      return encodeURIComponent(text).replace(
        /[*'()]/g,
        (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase(),
      );
    })
    .join("/");
}

/**
 * The reads a transaction makes through its client (`Client` is one): the transaction's module
 * knows them by this shape, not by the client's module.
 */
export interface TransactionReads {
  get<T = unknown>(path: PathLike): Promise<Item<T> | null>;
  getMany<T = unknown>(paths: Iterable<PathLike>): Promise<(Item<T> | null)[]>;
  listPage<T = unknown>(prefix: PathLike, options?: ListPageOptions): Promise<Page<T, Entry<T>>>;
}
