/** The HTTP client: global `fetch`, no dependencies; Node 20+ and browsers. */

import {
  AliasBuilding,
  ConditionFailed,
  Conflict,
  NotFound,
  NotPathDB,
  OutcomeUnknown,
  PathDBError,
  Unavailable,
  errorFor,
  notPathDB,
  violationFromWire,
} from "./errors.js";
import { KeyPath, toPath, type PathLike } from "./keypath.js";
import {
  createTarget,
  fieldsParam,
  filterParam,
  incrementOperation,
  urlPath,
  type AliasBuild,
  type AliasState,
  type AliasTemplate,
  type Change,
  type ChangePage,
  type ChangesOptions,
  type CountOptions,
  type CreateOptions,
  type CreateTokenOptions,
  type DeleteChange,
  type Entry,
  type Fields,
  type GetManyOptions,
  type GetOptions,
  type IssuedToken,
  type Item,
  type ListAllOptions,
  type ListPageOptions,
  type NamespaceDefinition,
  type NamespaceListOptions,
  type NamespaceOptions,
  type NamespacePage,
  type NamespacePageOptions,
  type Op,
  type Page,
  type PatchOperation,
  type PatchOptions,
  type PutNamespaceOptions,
  type PutOptions,
  type PutRoleOptions,
  type Role,
  type Rule,
  type Schema,
  type SchemaCheck,
  type Session,
  type TokenInfo,
  type VarValue,
  type ViolatingItem,
  type ViolationsPage,
  type WaitForAliasesOptions,
  type WatchOptions,
  type Wire,
} from "./model.js";
import { MAX_TRANSACTION_ATTEMPTS, Transaction, backoffCeilingMs, stateOf } from "./transaction.js";

export interface ClientOptions {
  /** Sent as `Authorization: Bearer <token>`. */
  token?: string;
  /** How many times a single write that met a concurrent write, or a request answered 503, is retried (default 3). */
  retries?: number;
  /** The first backoff in milliseconds, doubled at each retry, with jitter (default 50). */
  backoffMs?: number;
  /** Per-request timeout in milliseconds (default 30000). */
  timeoutMs?: number;
  /** A `fetch` to use instead of the global one. */
  fetch?: typeof fetch;
}

function time(micros: number): Date {
  return new Date(Math.floor(micros / 1000));
}

function entryFromWire<T>(body: Wire): Entry<T> {
  if (body.node === true) return { path: KeyPath.parse(body.path as string), node: true };
  return itemFromWire<T>(body);
}

function itemFromWire<T>(body: Wire): Item<T> {
  const expires = body.expires_at as number | null | undefined;
  const item: Item<T> = {
    path: KeyPath.parse(body.path as string),
    version: body.version as number,
    value: body.value as T,
    createdAt: time(body.created_at as number),
    modifiedAt: time(body.modified_at as number),
    expiresAt: expires == null ? null : time(expires),
    createdAtMicros: body.created_at as number,
    modifiedAtMicros: body.modified_at as number,
    expiresAtMicros: expires ?? null,
  };
  return body.alias == null ? item : { ...item, alias: KeyPath.parse(body.alias as string) };
}

function aliasBuildFromWire(body: Wire): AliasBuild {
  return {
    path: body.path as string,
    state: body.state as AliasState,
    checked: (body.checked as number | undefined) ?? 0,
    written: (body.written as number | undefined) ?? 0,
    conflicts: ((body.conflicts as Wire[] | undefined) ?? []).map((c) => ({
      alias: KeyPath.parse(c.alias as string),
      items: ((c.items as string[] | undefined) ?? []).map((p) => KeyPath.parse(p)),
    })),
  };
}

function definitionFromWire(body: Wire): NamespaceDefinition {
  return {
    namespace: body.namespace as string,
    version: body.version as number,
    schema: (body.schema as Schema | null | undefined) ?? null,
    history: (body.history as number | null | undefined) ?? null,
    description: (body.description as string | null | undefined) ?? null,
    aliases: ((body.aliases as Wire[] | null | undefined) ?? []).map(aliasBuildFromWire),
    createdAt: time(body.created_at as number),
    modifiedAt: time(body.modified_at as number),
    createdAtMicros: body.created_at as number,
    modifiedAtMicros: body.modified_at as number,
  };
}

function violatingFromWire(body: Wire): ViolatingItem {
  return {
    path: KeyPath.parse(body.path as string),
    version: (body.version as number | null | undefined) ?? null,
    violations: ((body.violations as unknown[] | undefined) ?? []).map(violationFromWire),
  };
}

function ruleFromWire(body: Wire): Rule {
  return { path: body.path as string, allow: [...((body.allow as string[] | undefined) ?? [])] };
}

/** A rule as it goes on the wire, checked. */
function ruleWire(rule: Rule): { path: string; allow: string[] } {
  if (typeof rule?.path !== "string" || !Array.isArray(rule.allow)) {
    throw new TypeError(`a rule is { path: string, allow: string[] }, not ${JSON.stringify(rule)}`);
  }
  return { path: rule.path, allow: [...rule.allow] };
}

function varsFromWire(body: unknown): Record<string, VarValue> {
  return typeof body === "object" && body !== null && !Array.isArray(body) ? { ...(body as Record<string, VarValue>) } : {};
}

function roleFromWire(body: Wire): Role {
  return {
    name: body.name as string,
    rules: ((body.rules as Wire[] | undefined) ?? []).map(ruleFromWire),
    description: (body.description as string | null | undefined) ?? null,
    version: body.version as number,
    builtin: body.builtin === true,
    createdAt: time(body.created_at as number),
    modifiedAt: time(body.modified_at as number),
    createdAtMicros: body.created_at as number,
    modifiedAtMicros: body.modified_at as number,
  };
}

function tokenFromWire(body: Wire): TokenInfo {
  const expires = (body.expires_at as number | null | undefined) ?? null;
  const used = (body.last_used_at as number | null | undefined) ?? null;
  return {
    id: body.id as string,
    role: body.role as string,
    vars: varsFromWire(body.vars),
    description: (body.description as string | null | undefined) ?? null,
    createdAt: time(body.created_at as number),
    expiresAt: expires === null ? null : time(expires),
    lastUsedAt: used === null ? null : time(used),
    createdAtMicros: body.created_at as number,
    expiresAtMicros: expires,
    lastUsedAtMicros: used,
  };
}

/**
 * A session from its JSON shape. A server from before roles answers `auth_required` and `scope`
 * only: the rest is read from the scope.
 */
function sessionFromWire(body: Wire): Session {
  const scope = body.scope as string;
  const authRequired = body.auth_required === true;
  return {
    authRequired,
    scope,
    via: (body.via as string | undefined) ?? (authRequired ? "config" : "open"),
    role: (body.role as string | undefined) ?? scope,
    rules: ((body.rules as Wire[] | undefined) ?? []).map(ruleFromWire),
    vars: varsFromWire(body.vars),
    tokenId: (body.token_id as string | null | undefined) ?? null,
    admin: typeof body.admin === "boolean" ? body.admin : scope === "admin",
  };
}

/** `/v1/roles/{name}`, the name checked (1 to 64 letters, digits, `_`, `-`, `.`: nothing to escape). */
function roleRoute(name: string): string {
  if (typeof name !== "string" || !/^[A-Za-z0-9_.-]{1,64}$/.test(name) || name === "." || name === "..") {
    throw new RangeError(`a role name is 1 to 64 letters, digits, '_', '-', '.', not ${JSON.stringify(name)}`);
  }
  return "/v1/roles/" + name;
}

/** `/v1/tokens/{id}`, the id escaped. */
function tokenRoute(id: string): string {
  if (typeof id !== "string" || id === "") throw new RangeError(`a token id is a non-empty string, not ${JSON.stringify(id)}`);
  return "/v1/tokens/" + encodeURIComponent(id);
}

/** `/v1/namespaces/{namespace}`, the name checked (letters, digits and '_': nothing to escape). */
function namespaceRoute(namespace: string): string {
  new KeyPath().add(namespace, 1); // throws InvalidKeyPath for an invalid namespace
  return "/v1/namespaces/" + namespace;
}

function namespaceBody(options: NamespaceOptions): string {
  const body: Wire = {};
  if (options.schema !== undefined) body.schema = options.schema;
  if (options.history !== undefined) body.history = options.history;
  if (options.description !== undefined) body.description = options.description;
  // None: left out, which a server from before aliases also takes.
  if (options.aliases !== undefined && options.aliases.length > 0) body.aliases = options.aliases.map(aliasWire);
  return JSON.stringify(body);
}

function aliasWire(template: AliasTemplate): { path: string } {
  const path = typeof template === "string" ? template : template?.path;
  if (typeof path !== "string") throw new TypeError(`an alias template is a string or { path: string }, not ${JSON.stringify(template)}`);
  return { path };
}

/**
 * The definition when every alias template of it is ready, null to read it again. Throws
 * `AliasBuilding` for a build that stopped in conflict, or one still building at `deadline`, and
 * `NotFound` without a definition.
 */
function aliasesReady(namespace: string, definition: NamespaceDefinition | null, deadline: number | undefined): NamespaceDefinition | null {
  if (definition === null) throw new NotFound(`namespace ${namespace} has no definition`, "not_found");
  // A template being removed is already gone for reads: nothing to wait for.
  const waiting = definition.aliases.filter((b) => b.state !== "ready" && b.state !== "removing");
  if (waiting.length === 0) return definition;
  const stopped = waiting.filter((b) => b.state === "conflict");
  if (stopped.length === 0 && (deadline === undefined || Date.now() < deadline)) return null;
  const build = (stopped[0] ?? waiting[0])!;
  const message =
    build.state === "conflict"
      ? `the build of alias template ${build.path} of namespace ${namespace} stopped: items would share an alias (${
          build.conflicts.map((c) => `${c.alias} for ${c.items.join(", ")}`).join("; ") || "see getNamespace"
        }); fix them, then retryAliasBuild`
      : `the aliases of template ${build.path} of namespace ${namespace} are still being built (${build.checked} items checked)`;
  throw new AliasBuilding(message, { status: undefined, template: build.path, state: build.state, checked: build.checked });
}

function changeFromWire<T>(body: Wire): Change<T> {
  if (body.op === "put") {
    const item = itemFromWire<T>(body.item as Wire);
    return { op: "put", item, path: item.path, version: item.version };
  }
  if (body.op === "delete") {
    let change: DeleteChange = { op: "delete", path: KeyPath.parse(body.path as string), version: body.version as number };
    if (body.alias != null) change = { ...change, alias: KeyPath.parse(body.alias as string) };
    if (body.left === true) change = { ...change, left: true };
    return change;
  }
  throw new TypeError(`unknown change op ${JSON.stringify(body.op)}`);
}

interface Request {
  method: string;
  route: string;
  params?: Record<string, string>;
  headers?: Record<string, string>;
  body?: string;
  retryConflict?: boolean;
  /** Seconds the server may hold the answer back (a long poll), added to the timeout. */
  waitSeconds?: number;
  /** Takes as long as the work takes (a subtree job): no timeout. */
  unbounded?: boolean;
  /** The caller's signal: aborting it rejects with its reason. */
  signal?: AbortSignal | undefined;
}

/**
 * A signal that aborts when either does (`AbortSignal.any` is Node 20.3+), and `dispose`, which
 * removes its listener from the caller's signal (a long watch must not pile them up).
 */
function eitherSignal(timeout: AbortSignal, caller: AbortSignal): { signal: AbortSignal; dispose: () => void } {
  const controller = new AbortController();
  const listeners = new AbortController();
  for (const signal of [caller, timeout]) {
    if (signal.aborted) controller.abort(signal.reason);
    else signal.addEventListener("abort", () => controller.abort(signal.reason), { once: true, signal: listeners.signal });
  }
  return { signal: controller.signal, dispose: () => listeners.abort() };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Adds a listing's (or a read's) `filter`, `fields` and `max_scan` to `params`, where given. */
function filtered(params: Record<string, string>, options: { filter?: string; fields?: Fields; maxScan?: number }): Record<string, string> {
  if (options.filter !== undefined) params.filter = filterParam(options.filter);
  if (options.fields !== undefined) params.fields = fieldsParam(options.fields);
  if (options.maxScan !== undefined) params.max_scan = String(options.maxScan);
  return params;
}

/** A listing's range as query parameters. */
function rangeParams(options: { children?: boolean; gt?: PathLike; gte?: PathLike; lt?: PathLike; lte?: PathLike }): Record<string, string> {
  const params: Record<string, string> = {};
  if (options.children) params.children = "true";
  for (const name of ["gt", "gte", "lt", "lte"] as const) {
    const bound = options[name];
    if (bound !== undefined) params[name] = toPath(bound).toString();
  }
  return params;
}

/**
 * A client for a PathDB server.
 *
 * ```ts
 * const db = new Client("http://127.0.0.1:7070", { token: "secret" });
 * await db.put("/user-7/post-2", { title: "hello" });
 * ```
 */
export class Client {
  readonly url: string;
  readonly retries: number;
  readonly backoffMs: number;
  readonly #headers: Record<string, string>;
  readonly #timeoutMs: number;
  readonly #fetch: typeof fetch;

  constructor(url: string, options: ClientOptions = {}) {
    this.url = url.replace(/\/+$/, "");
    this.retries = options.retries ?? 3;
    this.backoffMs = options.backoffMs ?? 50;
    if (this.retries < 0 || this.backoffMs < 0) throw new RangeError("retries and backoffMs cannot be negative");
    this.#timeoutMs = options.timeoutMs ?? 30_000;
    this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.#headers = { Accept: "application/json" };
    if (options.token !== undefined) this.#headers.Authorization = `Bearer ${options.token}`;
  }

  async #send(request: Request): Promise<Response> {
    let url = this.url + request.route;
    const query = new URLSearchParams(request.params ?? {}).toString();
    if (query) url += "?" + query;
    let attempt = 0;
    let reconnected = false;
    for (;;) {
      let response: Response;
      try {
        const timeout = request.unbounded
          ? new AbortController().signal
          : AbortSignal.timeout(this.#timeoutMs + (request.waitSeconds ?? 0) * 1000);
        const signals = request.signal ? eitherSignal(timeout, request.signal) : { signal: timeout, dispose() {} };
        const init: RequestInit = {
          method: request.method,
          headers: { ...this.#headers, ...request.headers },
          signal: signals.signal,
        };
        if (request.body !== undefined) init.body = request.body;
        try {
          response = await this.#fetch(url, init);
        } finally {
          signals.dispose();
        }
      } catch (e) {
        if (request.signal?.aborted) throw request.signal.reason;
        // A kept-alive connection the server closed (it does after refusing a request whose body
        // it did not read) fails the next request before any answer: send it once more.
        if (!reconnected && e instanceof TypeError) {
          reconnected = true;
          continue;
        }
        const err = new Unavailable(`cannot reach ${this.url}: ${String(e)}`, "unreachable");
        (err as { cause?: unknown }).cause = e;
        throw err;
      }
      if (attempt < this.retries && (await this.#shouldRetry(request, response))) {
        await sleep(Math.random() * this.backoffMs * 2 ** attempt);
        attempt++;
        continue;
      }
      return response;
    }
  }

  async #shouldRetry(request: Request, response: Response): Promise<boolean> {
    if (response.status === 503) {
      // A write whose outcome is unknown may have been made: retrying could apply it twice. An
      // alias build takes longer than the backoff (and one in conflict waits for a retry):
      // `waitForAliases` is the way to wait for it.
      const error = await this.#error(response.clone());
      if (error instanceof OutcomeUnknown || error instanceof AliasBuilding) return false;
      await response.body?.cancel();
      return true;
    }
    if (response.status === 409 && request.retryConflict) {
      const error = await this.#error(response.clone());
      if (error instanceof Conflict) {
        await response.body?.cancel();
        return true;
      }
    }
    return false;
  }

  /** The error for an error answer: PathDB's own, or `NotPathDB` without its JSON error body. */
  async #error(response: Response): Promise<PathDBError> {
    const text = await response.text();
    try {
      const detail = (JSON.parse(text) as { error?: { code?: unknown; message?: unknown; index?: unknown } }).error;
      if (detail && typeof detail.code === "string" && typeof detail.message === "string") {
        const index = Number.isSafeInteger(detail.index) ? (detail.index as number) : undefined;
        return errorFor(response.status, detail.code, detail.message, index, detail as Record<string, unknown>);
      }
    } catch {
      // Not JSON: not PathDB's error shape either.
    }
    return this.#foreign(response, text);
  }

  #foreign(response: Response, text: string): NotPathDB {
    return notPathDB(this.url, response.status, response.headers.get("Content-Type") ?? "", text);
  }

  /** A success's JSON body; a success that is not JSON comes from another program. */
  async #json(response: Response): Promise<Wire> {
    if (response.status >= 400 || response.status === 304) throw await this.#error(response);
    const contentType = (response.headers.get("Content-Type") ?? "").split(";")[0]!.trim().toLowerCase();
    const text = await response.text();
    if (contentType !== "application/json") throw this.#foreign(response, text);
    try {
      return JSON.parse(text) as Wire;
    } catch {
      throw this.#foreign(response, text);
    }
  }

  async #itemOrNull<T>(response: Response): Promise<Item<T> | null> {
    if (response.status === 404) {
      const error = await this.#error(response);
      // Only PathDB's 404 means "no item"; another server's 404 page is not an answer.
      if (error instanceof NotFound) return null;
      throw error;
    }
    return itemFromWire<T>(await this.#json(response));
  }

  /** Creates or replaces the item at `path`. Throws `ConditionFailed` if `mustNotExist` or `ifVersion` does not hold. */
  async put<T = unknown>(path: PathLike, value: T, options: PutOptions = {}): Promise<Item<T>> {
    return this.#write<T>("PUT", "application/json", path, value, options, {});
  }

  /**
   * A put, or (PATCH, with the patch's media type) a patch: the conditions as headers, the options
   * as parameters; retried when it met a concurrent write, which it then did not change.
   */
  async #write<T>(
    method: "PUT" | "PATCH",
    contentType: string,
    path: PathLike,
    body: unknown,
    options: PutOptions,
    params: Record<string, string>,
  ): Promise<Item<T>> {
    if (options.mustNotExist && options.ifVersion !== undefined) {
      throw new TypeError("give at most one of mustNotExist and ifVersion");
    }
    const headers: Record<string, string> = { "Content-Type": contentType };
    if (options.mustNotExist) headers["If-None-Match"] = "*";
    if (options.ifVersion !== undefined) headers["If-Match"] = `"${options.ifVersion}"`;
    if (options.history) params.history = "true";
    if (options.ttlSeconds !== undefined) params.ttl_seconds = String(options.ttlSeconds);
    const response = await this.#send({
      method,
      route: "/v1/items/" + urlPath(toPath(path)),
      params,
      headers,
      body: JSON.stringify(body === undefined ? null : body),
      retryConflict: true,
    });
    return itemFromWire<T>(await this.#json(response));
  }

  /**
   * Applies a JSON Patch (RFC 6902 operations in order, plus `increment`) to the item at `path` on
   * the server, all or nothing, and returns the item written. With `create`, a missing item is
   * patched from `{}` (otherwise `NotFound`). Throws `PatchTestFailed` (a `test` did not hold),
   * `PatchConflict` (an operation does not fit the value), `ConditionFailed` (`mustNotExist`,
   * `ifVersion`) or `InvalidRequest` (`invalid_patch`: a bad document); nothing is written then.
   */
  async patch<T = unknown>(path: PathLike, operations: readonly PatchOperation[], options: PatchOptions = {}): Promise<Item<T>> {
    return this.#patch<T>("application/json-patch+json", path, [...operations], options);
  }

  /**
   * Applies a JSON Merge Patch (RFC 7396: objects merge member by member, `null` removes a member,
   * any other value replaces) to the item at `path` on the server, and returns the item written;
   * options and errors as {@link patch}.
   */
  async merge<T = unknown>(path: PathLike, document: unknown, options: PatchOptions = {}): Promise<Item<T>> {
    return this.#patch<T>("application/merge-patch+json", path, document, options);
  }

  /**
   * Adds `by` to the number at the JSON Pointer `pointer` (`"/views"`) in the item at `path`,
   * atomically on the server (concurrent increments all count), and returns the item written. A
   * missing member starts at 0, and `create` is true by default, so a counter that does not exist
   * yet starts at 0 as well (`{ create: false }` throws `NotFound` then). Integers stay integers;
   * past 2^53, or on a non-number, throws `PatchConflict`.
   */
  async increment<T = unknown>(path: PathLike, pointer: string, by = 1, options: PatchOptions = {}): Promise<Item<T>> {
    return this.patch<T>(path, [incrementOperation(pointer, by)], { ...options, create: options.create ?? true });
  }

  async #patch<T>(contentType: string, path: PathLike, document: unknown, options: PatchOptions): Promise<Item<T>> {
    const params: Record<string, string> = {};
    if (options.create) params.create = "true";
    return this.#write<T>("PATCH", contentType, path, document, options, params);
  }

  /**
   * The item at `path`, or null. `fields` (`["title", "author.name"]` or `"title,author.name"`) keeps
   * only those members of the value (its `version` is still the item's).
   */
  async get<T = unknown>(path: PathLike, options: GetOptions = {}): Promise<Item<T> | null> {
    const params: Record<string, string> = {};
    if (options.fields !== undefined) params.fields = fieldsParam(options.fields);
    return this.#itemOrNull<T>(await this.#send({ method: "GET", route: "/v1/items/" + urlPath(toPath(path)), params }));
  }

  /** A past version of the item at `path`, from its history. Throws `NotFound`. */
  async getVersion<T = unknown>(path: PathLike, version: number): Promise<Item<T>> {
    const response = await this.#send({
      method: "GET",
      route: "/v1/items/" + urlPath(toPath(path)),
      params: { version: String(version) },
    });
    return itemFromWire<T>(await this.#json(response));
  }

  /** Deletes the item at `path`: the deleted item, or null if there was none. */
  async delete<T = unknown>(path: PathLike, options: { ifVersion?: number } = {}): Promise<Item<T> | null> {
    const headers: Record<string, string> = {};
    if (options.ifVersion !== undefined) headers["If-Match"] = `"${options.ifVersion}"`;
    const response = await this.#send({
      method: "DELETE",
      route: "/v1/items/" + urlPath(toPath(path)),
      headers,
      retryConflict: true,
    });
    return this.#itemOrNull<T>(response);
  }

  /**
   * Deletes the item at `path`, if any, and every item below it; how many it deleted. `/a/p-1`
   * never touches `/a/p-10`. Each leaves a tombstone and history stays. Atomic when it fits in
   * one transaction, otherwise done in resumable batches (call again to finish one that was cut
   * off). Throws `NotFound` when there is nothing to delete.
   */
  async deleteSubtree(path: PathLike, options: { signal?: AbortSignal } = {}): Promise<number> {
    const response = await this.#send({
      method: "DELETE",
      route: "/v1/items/" + urlPath(toPath(path)),
      params: { recursive: "true" },
      unbounded: true,
      signal: options.signal,
    });
    return (await this.#json(response)).deleted as number;
  }

  /**
   * Moves the item at `path` and every item below it to `to` (its elements replace `path`'s),
   * with values, times and history; how many it moved. `to` may be in another group. Throws
   * `DestinationNotEmpty`, `NotFound` (nothing at `path`) or `InvalidRequest` (one path inside
   * the other). Call again to finish a move that was cut off.
   */
  async move(path: PathLike, to: PathLike, options: { signal?: AbortSignal } = {}): Promise<number> {
    return (await this.#relocate("/v1/move", path, to, options.signal)).moved as number;
  }

  /** Like `move`, but the source stays as it is; how many items it copied. */
  async copy(path: PathLike, to: PathLike, options: { signal?: AbortSignal } = {}): Promise<number> {
    return (await this.#relocate("/v1/copy", path, to, options.signal)).copied as number;
  }

  async #relocate(route: string, path: PathLike, to: PathLike, signal: AbortSignal | undefined): Promise<Wire> {
    const response = await this.#send({
      method: "POST",
      route,
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ from: toPath(path).toString(), to: toPath(to).toString() }),
      unbounded: true,
      signal,
    });
    return this.#json(response);
  }

  /**
   * The items at `paths` (at most 100), read from one snapshot, null where missing. With `filter`
   * (a CEL expression, see {@link list}), an item it does not match is null too, as if missing;
   * `fields` projects each value, as in {@link get}.
   */
  async getMany<T = unknown>(paths: Iterable<PathLike>, options: GetManyOptions = {}): Promise<(Item<T> | null)[]> {
    const keyPaths = [...paths].map(toPath);
    const params: Record<string, string> = {};
    if (options.filter !== undefined) params.filter = filterParam(options.filter);
    if (options.fields !== undefined) params.fields = fieldsParam(options.fields);
    const response = await this.#send({
      method: "POST",
      route: "/v1/get",
      params,
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ paths: keyPaths.map(String) }),
    });
    const found = new Map<string, Item<T>>();
    for (const body of (await this.#json(response)).items as Wire[]) {
      const item = itemFromWire<T>(body);
      found.set((item.alias ?? item.path).toString(), item); // read through an alias: that path
    }
    return keyPaths.map((p) => found.get(p.toString()) ?? null);
  }

  /**
   * One page of the items under `prefix` (the item at `prefix`, then its subtree, in key order);
   * with `children: true`, the children of `prefix`: each as its item, or as a {@link Node} when
   * only items below it exist. `filter`, `fields` and `maxScan` as in {@link list}: a filtered page
   * reads at most `maxScan` items, so it may hold fewer than `pageSize`, even none, and still have a
   * `nextPageToken` (its `scanned` says how many it read).
   */
  listPage<T = unknown>(prefix: PathLike, options: ListPageOptions & { children: true }): Promise<Page<T, Entry<T>>>;
  listPage<T = unknown>(prefix: PathLike, options?: ListPageOptions & { children?: false }): Promise<Page<T>>;
  listPage<T = unknown>(prefix: PathLike, options?: ListPageOptions): Promise<Page<T, Entry<T>>>;
  async listPage<T = unknown>(prefix: PathLike, options: ListPageOptions = {}): Promise<Page<T, Entry<T>>> {
    const params = rangeParams(options);
    if (options.reverse) params.reverse = "true";
    filtered(params, options);
    if (options.pageSize !== undefined) params.limit = String(options.pageSize);
    if (options.pageToken != null) params.page_token = options.pageToken;
    const response = await this.#send({ method: "GET", route: "/v1/list/" + urlPath(toPath(prefix)), params });
    const body = await this.#json(response);
    return {
      items: (body.items as Wire[]).map((i) => entryFromWire<T>(i)),
      nextPageToken: (body.next_page_token as string | null | undefined) ?? null,
      changesToken: (body.changes_token as string | null | undefined) ?? null,
      scanned: (body.scanned as number | null | undefined) ?? null,
    };
  }

  /**
   * How many items under `prefix` (in the range `children` and the bounds give, as in {@link list})
   * match `filter` (every item without one), without reading them here. The server counts up to
   * `maxScan` items per request (default 1000, at most 100000); a longer range takes several
   * requests, which this follows and adds up. Like a listing followed page by page, it is not one
   * snapshot: items written meanwhile may or may not count.
   */
  async count(prefix: PathLike, options: CountOptions = {}): Promise<number> {
    const route = "/v1/list/" + urlPath(toPath(prefix));
    const base = rangeParams(options);
    if (options.filter !== undefined) base.filter = filterParam(options.filter);
    if (options.maxScan !== undefined) base.max_scan = String(options.maxScan);
    let total = 0;
    let pageToken: string | null = null;
    do {
      options.signal?.throwIfAborted();
      const params: Record<string, string> = { count: "true", ...base };
      if (pageToken !== null) params.page_token = pageToken;
      const body = await this.#json(await this.#send({ method: "GET", route, params, signal: options.signal }));
      total += body.count as number;
      pageToken = (body.next_page_token as string | null | undefined) ?? null;
    } while (pageToken !== null);
    return total;
  }

  /**
   * Every item under `prefix` (or the first `limit`), following page tokens:
   * `for await (const item of db.list(p))`. With `children: true`, entries as {@link listPage}.
   *
   * `filter` is a CEL expression over each item (docs/filters.md): `value` (its JSON value), `path`
   * (its text), `ids` (namespace to id), `version`, `created_at` and `modified_at` (microseconds);
   * only the items it is true for are listed: `{ filter: 'value.status == "open" && value.total > 100' }`.
   * An invalid one throws `InvalidFilter` (with its `position`). `fields` keeps only those members
   * of each value (`["title", "author.name"]`). `maxScan` is how many items each page reads at most
   * (default 1000): a filtered page may come back with fewer items, even none; this follows the page
   * tokens across such pages to the end.
   */
  list<T = unknown>(prefix: PathLike, options: ListAllOptions & { children: true }): AsyncGenerator<Entry<T>, void, undefined>;
  list<T = unknown>(prefix: PathLike, options?: ListAllOptions & { children?: false }): AsyncGenerator<Item<T>, void, undefined>;
  list<T = unknown>(prefix: PathLike, options?: ListAllOptions): AsyncGenerator<Entry<T>, void, undefined>;
  async *list<T = unknown>(prefix: PathLike, options: ListAllOptions = {}): AsyncGenerator<Entry<T>, void, undefined> {
    const { limit, pageSize, ...rest } = options;
    let remaining = limit;
    let pageToken: string | null = null;
    while (remaining === undefined || remaining > 0) {
      const size = remaining === undefined ? pageSize : Math.min(pageSize ?? 100, remaining, 1000);
      const pageOptions: ListPageOptions = { ...rest, pageToken };
      if (size !== undefined) pageOptions.pageSize = size;
      const page: Page<T, Entry<T>> = await this.listPage<T>(prefix, pageOptions);
      const items = remaining === undefined ? page.items : page.items.slice(0, remaining);
      yield* items;
      if (remaining !== undefined) remaining -= page.items.length;
      pageToken = page.nextPageToken;
      if (pageToken === null) return;
    }
  }

  /**
   * Creates an item at `{parent}/{namespace}-{id}` with an id the server generates, at a path never
   * used before, and returns it (its `path` holds the id). `parent` null makes a new group
   * `/{namespace}-{id}`. `id`: `uuid` (default, random), `rand53` (a random integer in [1, 2^53))
   * or `sequence` (1, 2, 3, ... per parent and namespace, never reused).
   */
  async create<T = unknown>(parent: PathLike | null, namespace: string, value: T, options: CreateOptions = {}): Promise<Item<T>> {
    const target = createTarget(parent, namespace);
    const params: Record<string, string> = { id: options.id ?? "uuid" };
    if (options.history) params.history = "true";
    if (options.ttlSeconds !== undefined) params.ttl_seconds = String(options.ttlSeconds);
    const response = await this.#send({
      method: "POST",
      route: "/v1/items/" + target.url,
      params,
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(value === undefined ? null : value),
      retryConflict: true, // a create that met a concurrent write wrote nothing; again draws a new id
    });
    return itemFromWire<T>(await this.#json(response));
  }

  /**
   * The changes under `prefix` (at least a group) after the token `since` (a listing's
   * `changesToken` or a page's `nextToken`), in commit order. With `waitSeconds` and no change yet,
   * the server answers as soon as one commits, or with none after the wait. Without `since`: no
   * changes, and the current position as `nextToken`. Throws `TokenExpired` for a token older than
   * the server keeps changes, `InvalidRequest` (`invalid_change_token`) for one that is not a token
   * of this prefix's group.
   *
   * With `filter` (a CEL expression, as in {@link list}), only the changes that matter to the
   * filtered result: an item that enters it or changes while matching is a `"put"`, one that leaves
   * it (it matched before the change, not after) a `"delete"` with `left: true`; changes of items
   * that match neither before nor after are left out.
   */
  async changes<T = unknown>(prefix: PathLike, options: ChangesOptions = {}): Promise<ChangePage<T>> {
    const params: Record<string, string> = {};
    if (options.filter !== undefined) params.filter = filterParam(options.filter);
    const request: Request = { method: "GET", route: "/v1/changes/" + urlPath(toPath(prefix)), params, signal: options.signal };
    if (options.since != null) {
      params.since = options.since;
      if (options.waitSeconds !== undefined) {
        params.wait = String(options.waitSeconds);
        request.waitSeconds = options.waitSeconds;
      }
    }
    if (options.limit !== undefined) params.limit = String(options.limit);
    const body = await this.#json(await this.#send(request));
    return { changes: (body.changes as Wire[]).map((c) => changeFromWire<T>(c)), nextToken: body.next_token as string };
  }

  /**
   * Every change under `prefix` after `since` (from where iterating starts without it), as it
   * commits: an endless async iterator that long-polls `changes`. `for await (const change of
   * db.watch(prefix, { since }))`; `break` (or the `signal`) stops it. Errors (`TokenExpired`,
   * `Unavailable`, ...) end it; resume from its `token`. With `filter`, only the changes that
   * matter to the filtered result, as in {@link changes}.
   */
  watch<T = unknown>(prefix: PathLike, options: WatchOptions = {}): Watch<T> {
    return new Watch<T>(this, toPath(prefix), options);
  }

  /** The kept revisions of `path`, newest first (100 by default, at most 1000). */
  async history<T = unknown>(path: PathLike, options: { limit?: number } = {}): Promise<Item<T>[]> {
    const params: Record<string, string> = {};
    if (options.limit !== undefined) params.limit = String(options.limit);
    const response = await this.#send({ method: "GET", route: "/v1/history/" + urlPath(toPath(path)), params });
    return ((await this.#json(response)).items as Wire[]).map((i) => itemFromWire<T>(i));
  }

  /**
   * Applies `Put`, `Delete`, `Check`, `CheckList`, `Create`, `Patch`, `Merge` and `Increment`
   * operations all or nothing. One result per operation: the item written, patched or created, the
   * item deleted (or null), null for a check. Throws `ConditionFailed` (its `index` names the
   * operation), `NotFound` (a patch without `create` found no item), `PatchTestFailed` or
   * `PatchConflict` (not retried: retry your unit of work, or use {@link transaction}).
   */
  async transact(ops: Iterable<Op>): Promise<(Item | null)[]> {
    const response = await this.#send({
      method: "POST",
      route: "/v1/transact",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ ops: [...ops].map((op) => op.toWire()) }),
    });
    return ((await this.#json(response)).results as Wire[]).map((r) => {
      if (r.op === "put") return itemFromWire(r.item as Wire);
      if (r.op === "delete" && r.deleted != null) return itemFromWire(r.deleted as Wire);
      return null;
    });
  }

  /**
   * Runs `fn(tx)` as an interactive transaction and resolves to what it returned.
   *
   * `fn` reads (`tx.get`, `tx.getMany`, `tx.list`, `tx.listPage`) and writes (`tx.put`, `tx.patch`, `tx.create`,
   * `tx.delete`) through `tx`; the writes commit together, all or nothing, in one `transact`, and
   * only if nothing `fn` read through `tx` (items, their absence, listings) changed meanwhile. When
   * something did, `fn` runs again from the start, on what is there now, after a random pause below
   * min(2^runs ms, 64 ms): at most `maxAttempts` runs (default 16), then `ConditionFailed` is
   * thrown. So `fn` may run more than once and must have no effects outside `tx`. An error thrown
   * by `fn` rejects as is and nothing is written; a callback that neither read nor wrote sends
   * nothing. Every path read and every listing is one of the transaction's 100 operations.
   *
   * ```ts
   * const moved = await db.transaction(async (tx) => {
   *   const [a, b] = await tx.getMany<{ balance: number }>(["/bank-1/account-1", "/bank-1/account-2"]);
   *   if (!a || !b || a.value.balance < 30) return false;
   *   tx.put(a.path, { balance: a.value.balance - 30 });
   *   tx.put(b.path, { balance: b.value.balance + 30 });
   *   return true;
   * });
   * ```
   */
  async transaction<R>(fn: (tx: Transaction) => Promise<R> | R, options: { maxAttempts?: number } = {}): Promise<R> {
    const maxAttempts = options.maxAttempts ?? MAX_TRANSACTION_ATTEMPTS;
    if (!(maxAttempts >= 1)) throw new RangeError("maxAttempts is at least 1");
    for (let runs = 1; ; runs++) {
      const tx = new Transaction(this);
      const state = stateOf(tx);
      let value: R;
      try {
        value = await fn(tx);
      } finally {
        state.done = true;
      }
      const ops = state.ops();
      if (ops.length === 0) return value;
      try {
        state.committed(await this.transact(ops));
        return value;
      } catch (e) {
        if (!(e instanceof ConditionFailed) || runs >= maxAttempts) throw e;
        await sleep(Math.random() * backoffCeilingMs(runs));
      }
    }
  }

  /** One page of the namespace definitions, in name order. */
  async listNamespacesPage(options: NamespacePageOptions = {}): Promise<NamespacePage> {
    const params: Record<string, string> = {};
    if (options.pageSize !== undefined) params.limit = String(options.pageSize);
    if (options.pageToken != null) params.page_token = options.pageToken;
    const body = await this.#json(await this.#send({ method: "GET", route: "/v1/namespaces", params }));
    return {
      namespaces: (body.namespaces as Wire[]).map(definitionFromWire),
      nextPageToken: (body.next_page_token as string | null | undefined) ?? null,
    };
  }

  /** Every namespace definition (or the first `limit`), in name order, following page tokens: `for await (const d of db.listNamespaces())`. */
  async *listNamespaces(options: NamespaceListOptions = {}): AsyncGenerator<NamespaceDefinition, void, undefined> {
    yield* this.#pages(options, async (page) => {
      const p = await this.listNamespacesPage(page);
      return { items: p.namespaces, nextPageToken: p.nextPageToken };
    });
  }

  /** The definition of `namespace`, or null when it has none. */
  async getNamespace(namespace: string): Promise<NamespaceDefinition | null> {
    return this.#definitionOrNull(await this.#send({ method: "GET", route: namespaceRoute(namespace) }));
  }

  async #definitionOrNull(response: Response): Promise<NamespaceDefinition | null> {
    if (response.status === 404) {
      const error = await this.#error(response);
      if (error instanceof NotFound) return null;
      throw error;
    }
    return definitionFromWire(await this.#json(response));
  }

  /**
   * Creates or replaces the definition of `namespace` (all of it: what is left out is removed) and
   * returns it. `schema` is a JSON Schema that every write into the namespace is checked against from
   * now on (items already stored are not: see `checkNamespace` and `namespaceViolations`); `history`
   * how many revisions a put with history keeps; `aliases` its alias templates (at most 8:
   * `"/email-{email}"`, see {@link AliasTemplate}), whose aliases every write keeps from now on, and
   * which the server builds for the items stored before (the definition's `aliases` tell their
   * state; see {@link waitForAliases}). `mustNotExist` and `ifVersion` are conditions as on an
   * item's `put` (the definition's `version`). Needs an `admin` token on a server with tokens (else
   * `Forbidden`). Throws `InvalidRequest` with code `invalid_schema` for a schema that is not one
   * (or needs a remote `$ref`), `invalid_request` for an invalid template, `ConditionFailed` for a
   * condition that does not hold.
   */
  async putNamespace(namespace: string, options: PutNamespaceOptions = {}): Promise<NamespaceDefinition> {
    if (options.mustNotExist && options.ifVersion !== undefined) {
      throw new TypeError("give at most one of mustNotExist and ifVersion");
    }
    const headers: Record<string, string> = { "Content-Type": "application/json" };
    if (options.mustNotExist) headers["If-None-Match"] = "*";
    if (options.ifVersion !== undefined) headers["If-Match"] = `"${options.ifVersion}"`;
    const response = await this.#send({ method: "PUT", route: namespaceRoute(namespace), headers, body: namespaceBody(options) });
    return definitionFromWire(await this.#json(response));
  }

  /**
   * Removes the definition of `namespace` (its items stay, unchecked from now on): true, or false
   * when there was none. Needs an `admin` token; throws `ConditionFailed` if `ifVersion` does not hold.
   */
  async deleteNamespace(namespace: string, options: { ifVersion?: number } = {}): Promise<boolean> {
    const headers: Record<string, string> = {};
    if (options.ifVersion !== undefined) headers["If-Match"] = `"${options.ifVersion}"`;
    const response = await this.#send({ method: "DELETE", route: namespaceRoute(namespace), headers });
    if (response.status === 404) {
      const error = await this.#error(response);
      if (error instanceof NotFound) return false;
      throw error;
    }
    if (response.status >= 400) throw await this.#error(response);
    await response.body?.cancel();
    return true;
  }

  /**
   * Starts the build of the alias template `template` of `namespace` again, from the beginning,
   * after it stopped in `conflict` (two items would share an alias: fix them first), and resolves to
   * the definition. Needs an `admin` token. Throws `InvalidRequest` for a template that is not in
   * conflict, `NotFound` for a namespace without a definition.
   */
  async retryAliasBuild(namespace: string, template: string): Promise<NamespaceDefinition> {
    if (typeof template !== "string") throw new TypeError(`an alias template is a string, not ${typeof template}`);
    const response = await this.#send({
      method: "POST",
      route: namespaceRoute(namespace) + "/aliases/retry",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ path: template }),
    });
    return definitionFromWire(await this.#json(response));
  }

  /**
   * Waits until every alias template of `namespace` is `ready` (reads through its aliases are
   * served), reading the definition every `intervalMs` (default 500), and resolves to it. Throws
   * `AliasBuilding` (`status` undefined, `state` `conflict`) when a build stopped in conflict, and
   * (`state` `building`) when `timeoutMs` passed first; `NotFound` when the namespace has no
   * definition.
   */
  async waitForAliases(namespace: string, options: WaitForAliasesOptions = {}): Promise<NamespaceDefinition> {
    const interval = options.intervalMs ?? 500;
    if (!(interval > 0)) throw new RangeError("intervalMs is more than 0");
    const deadline = options.timeoutMs === undefined ? undefined : Date.now() + options.timeoutMs;
    for (;;) {
      options.signal?.throwIfAborted();
      const response = await this.#send({ method: "GET", route: namespaceRoute(namespace), signal: options.signal });
      const definition = await this.#definitionOrNull(response);
      const ready = aliasesReady(namespace, definition, deadline === undefined ? undefined : deadline - interval);
      if (ready !== null) return ready;
      await sleep(interval);
    }
  }

  /**
   * A dry run of `putNamespace`: what the definition would say about the items of `namespace`
   * already stored (how many it checked, how many violate it, the first 20), storing nothing; it
   * refuses what `putNamespace` would (an invalid template, say). It reads every item of the
   * namespace (on DynamoDB, a Scan). Needs an `admin` token, like `putNamespace`.
   */
  async checkNamespace(namespace: string, options: NamespaceOptions = {}): Promise<SchemaCheck> {
    const response = await this.#send({
      method: "PUT",
      route: namespaceRoute(namespace),
      params: { dry_run: "true" },
      headers: { "Content-Type": "application/json" },
      body: namespaceBody(options),
    });
    const body = await this.#json(response);
    return {
      checked: body.checked as number,
      violating: body.violating as number,
      first: (body.first as Wire[]).map(violatingFromWire),
    };
  }

  /**
   * One page of the stored items of `namespace` that its current schema refuses. A page may hold
   * fewer than `pageSize` items, even none, and still have a `nextPageToken`: follow it until null.
   */
  async namespaceViolationsPage(namespace: string, options: NamespacePageOptions = {}): Promise<ViolationsPage> {
    const params: Record<string, string> = {};
    if (options.pageSize !== undefined) params.limit = String(options.pageSize);
    if (options.pageToken != null) params.page_token = options.pageToken;
    const response = await this.#send({ method: "GET", route: namespaceRoute(namespace) + "/violations", params });
    const body = await this.#json(response);
    return {
      items: (body.items as Wire[]).map(violatingFromWire),
      checked: (body.checked as number | undefined) ?? 0,
      nextPageToken: (body.next_page_token as string | null | undefined) ?? null,
    };
  }

  /**
   * Every stored item of `namespace` that its current schema refuses (or the first `limit`),
   * following page tokens. It reads every item of the namespace (on DynamoDB, a Scan).
   */
  async *namespaceViolations(namespace: string, options: NamespaceListOptions = {}): AsyncGenerator<ViolatingItem, void, undefined> {
    yield* this.#pages(options, async (page) => this.namespaceViolationsPage(namespace, page));
  }

  /**
   * What this client's token (or, on a server without tokens, anyone) may do: its role, the role's
   * rules and the vars they are bound to, whether it may administer the database (`admin`), and how
   * it was recognized (`via`). Throws `Unauthorized` for a token the server does not accept.
   */
  async session(): Promise<Session> {
    return sessionFromWire(await this.#json(await this.#send({ method: "GET", route: "/v1/session" })));
  }

  /** Every role, by name, the built-in ones (`read`, `read-write`, `admin`) included. Needs an `admin` token (else `Forbidden`). */
  async listRoles(): Promise<Role[]> {
    const body = await this.#json(await this.#send({ method: "GET", route: "/v1/roles" }));
    return (body.roles as Wire[]).map(roleFromWire);
  }

  /** The role `name`, or null when there is none. Needs an `admin` token. */
  async getRole(name: string): Promise<Role | null> {
    const response = await this.#send({ method: "GET", route: roleRoute(name) });
    if (response.status === 404) {
      const error = await this.#error(response);
      if (error instanceof NotFound) return null;
      throw error;
    }
    return roleFromWire(await this.#json(response));
  }

  /**
   * Creates or replaces the role `name` (1 to 64 letters, digits, `_`, `-`, `.`) and resolves to it.
   * `rules` are `{ path: "/team-{team}/**", allow: ["read", "write"] }` (at most 100); a path is
   * allowed an operation when any rule allows it there. Its tokens have the new rules from their
   * next request. `mustNotExist` and `ifVersion` (the role's `version`) are conditions as on an
   * item's `put`. Needs an `admin` token. Throws `InvalidRole` for a rule that is not valid (the
   * message names it), `BuiltinRole` for `read`, `read-write` and `admin`, `ConditionFailed` for a
   * condition that does not hold.
   */
  async putRole(name: string, rules: readonly Rule[], options: PutRoleOptions = {}): Promise<Role> {
    if (options.mustNotExist && options.ifVersion !== undefined) {
      throw new TypeError("give at most one of mustNotExist and ifVersion");
    }
    if (!Array.isArray(rules)) throw new TypeError("rules is an array of rules");
    const body: Wire = { rules: rules.map(ruleWire) };
    if (options.description !== undefined) body.description = options.description;
    const headers: Record<string, string> = { "Content-Type": "application/json" };
    if (options.mustNotExist) headers["If-None-Match"] = "*";
    if (options.ifVersion !== undefined) headers["If-Match"] = `"${options.ifVersion}"`;
    const response = await this.#send({ method: "PUT", route: roleRoute(name), headers, body: JSON.stringify(body) });
    return roleFromWire(await this.#json(response));
  }

  /**
   * Deletes the role `name`: true, or false when there was none. Needs an `admin` token. Throws
   * `BuiltinRole` for a built-in role, `ConditionFailed` if `ifVersion` does not hold.
   */
  async deleteRole(name: string, options: { ifVersion?: number } = {}): Promise<boolean> {
    const headers: Record<string, string> = {};
    if (options.ifVersion !== undefined) headers["If-Match"] = `"${options.ifVersion}"`;
    return this.#deleted(await this.#send({ method: "DELETE", route: roleRoute(name), headers }));
  }

  /**
   * Issues a token of `role`, whose rules' variables `vars` binds (`{ team: 7 }`: integers or
   * strings, read as key path ids), that stops working at `expiresAt` (default: when revoked). The
   * `IssuedToken`'s `token` is the secret, shown only this once. Needs an `admin` token. Throws
   * `UnknownRole` for a role that does not exist, `InvalidRequest` for vars that are not ids or an
   * `expiresAt` in the past.
   */
  async createToken(role: string, options: CreateTokenOptions = {}): Promise<IssuedToken> {
    const body: Wire = { role };
    if (options.vars !== undefined) body.vars = options.vars;
    if (options.expiresAt != null) {
      const ms = options.expiresAt.getTime();
      if (!Number.isFinite(ms)) throw new RangeError("expiresAt is an invalid Date");
      body.expires_at = ms * 1000;
    }
    if (options.description !== undefined) body.description = options.description;
    const response = await this.#send({
      method: "POST",
      route: "/v1/tokens",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
    const issued = await this.#json(response);
    return { ...tokenFromWire(issued), token: issued.token as string };
  }

  /** Every issued token, by id, without its secret (expired ones too, until revoked). Needs an `admin` token. */
  async listTokens(): Promise<TokenInfo[]> {
    const body = await this.#json(await this.#send({ method: "GET", route: "/v1/tokens" }));
    return (body.tokens as Wire[]).map(tokenFromWire);
  }

  /** The issued token `id`, without its secret, or null when there is none. Needs an `admin` token. */
  async getToken(id: string): Promise<TokenInfo | null> {
    const response = await this.#send({ method: "GET", route: tokenRoute(id) });
    if (response.status === 404) {
      const error = await this.#error(response);
      if (error instanceof NotFound) return null;
      throw error;
    }
    return tokenFromWire(await this.#json(response));
  }

  /**
   * Revokes the issued token `id`: true, or false when there was none. This server refuses it
   * (`Unauthorized`) from its next request, other servers sharing the database within seconds.
   * Needs an `admin` token.
   */
  async revokeToken(id: string): Promise<boolean> {
    return this.#deleted(await this.#send({ method: "DELETE", route: tokenRoute(id) }));
  }

  /** A delete's answer: true, false for PathDB's 404. */
  async #deleted(response: Response): Promise<boolean> {
    if (response.status === 404) {
      const error = await this.#error(response);
      if (error instanceof NotFound) return false;
      throw error;
    }
    if (response.status >= 400) throw await this.#error(response);
    await response.body?.cancel();
    return true;
  }

  /** Follows page tokens: every entry (or the first `limit`) of the pages `read` returns. */
  async *#pages<E>(
    options: NamespaceListOptions,
    read: (page: NamespacePageOptions) => Promise<{ items: E[]; nextPageToken: string | null }>,
  ): AsyncGenerator<E, void, undefined> {
    let remaining = options.limit;
    let pageToken: string | null = null;
    while (remaining === undefined || remaining > 0) {
      const size = remaining === undefined ? options.pageSize : Math.min(options.pageSize ?? 100, remaining, 1000);
      const page: NamespacePageOptions = { pageToken };
      if (size !== undefined) page.pageSize = size;
      const { items, nextPageToken } = await read(page);
      yield* remaining === undefined ? items : items.slice(0, remaining);
      if (remaining !== undefined) remaining -= items.length;
      pageToken = nextPageToken;
      if (pageToken === null) return;
    }
  }
}

/**
 * The changes under a prefix, as they commit (see `Client.watch`): an async iterable that
 * long-polls. `token` is where to resume after the changes handed out so far (it may repeat some
 * of them when the loop stopped inside a page, never skip one).
 */
export class Watch<T = unknown> implements AsyncIterable<Change<T>> {
  readonly #client: Client;
  readonly #prefix: KeyPath;
  readonly #options: WatchOptions;
  #token: string | null;

  constructor(client: Client, prefix: KeyPath, options: WatchOptions) {
    if ((options.waitSeconds ?? 30) < 1) throw new RangeError("a watch's long polls wait 1 second or more (60 at most)");
    this.#client = client;
    this.#prefix = prefix;
    this.#options = options;
    this.#token = options.since ?? null;
  }

  /** Where to resume from (null before the first read when started without `since`). */
  get token(): string | null {
    return this.#token;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Change<T>, void, undefined> {
    const { waitSeconds = 30, limit, signal, filter } = this.#options;
    const filtering: ChangesOptions = filter === undefined ? {} : { filter };
    for (;;) {
      signal?.throwIfAborted();
      const since = this.#token ?? (await this.#client.changes(this.#prefix, { ...filtering, signal })).nextToken;
      this.#token = since;
      const options: ChangesOptions = { ...filtering, since, waitSeconds, signal };
      if (limit !== undefined) options.limit = limit;
      const page = await this.#client.changes<T>(this.#prefix, options);
      for (const [i, change] of page.changes.entries()) {
        if (i === page.changes.length - 1) this.#token = page.nextToken;
        yield change;
      }
      this.#token = page.nextToken;
    }
  }
}
