/** The HTTP client: global `fetch`, no dependencies; Node 20+ and browsers. */

import { Conflict, PathDBError, Unavailable, errorFor } from "./errors.js";
import { KeyPath, formatId, toPath, type PathLike } from "./keypath.js";

/** A JSON document at a key path, with its metadata (times UTC; `*Micros` exact, in µs since the epoch). */
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
}

/** One page of a listing; pass `nextPageToken` as `pageToken` to continue (null at the end). */
export interface Page<T = unknown> {
  readonly items: Item<T>[];
  readonly nextPageToken: string | null;
}

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

export interface PutOptions {
  mustNotExist?: boolean;
  ifVersion?: number;
  history?: boolean;
  ttlSeconds?: number;
}

export interface ListOptions {
  /** Only the direct children of the prefix. */
  children?: boolean;
  /** Descending key order. */
  reverse?: boolean;
  gt?: PathLike;
  gte?: PathLike;
  lt?: PathLike;
  lte?: PathLike;
}

export interface ListAllOptions extends ListOptions {
  /** At most this many items in all. */
  limit?: number;
  /** Items per request, 1..=1000 (default 100). */
  pageSize?: number;
}

export interface ListPageOptions extends ListOptions {
  /** Items in this page, 1..=1000 (default 100). */
  pageSize?: number;
  pageToken?: string | null;
}

type Wire = Record<string, unknown>;

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

/** A transaction operation. */
export type Op = Put | Delete | Check;

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

function time(micros: number): Date {
  return new Date(Math.floor(micros / 1000));
}

function itemFromWire<T>(body: Wire): Item<T> {
  const expires = body.expires_at as number | null | undefined;
  return {
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
}

interface Request {
  method: string;
  route: string;
  params?: Record<string, string>;
  headers?: Record<string, string>;
  body?: string;
  retryConflict?: boolean;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

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
        const init: RequestInit = {
          method: request.method,
          headers: { ...this.#headers, ...request.headers },
          signal: AbortSignal.timeout(this.#timeoutMs),
        };
        if (request.body !== undefined) init.body = request.body;
        response = await this.#fetch(url, init);
      } catch (e) {
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
      await response.body?.cancel();
      return true;
    }
    if (response.status === 409 && request.retryConflict) {
      const error = await Client.#error(response.clone());
      if (error instanceof Conflict) {
        await response.body?.cancel();
        return true;
      }
    }
    return false;
  }

  static async #error(response: Response): Promise<PathDBError> {
    const text = await response.text();
    let code = "";
    let message = text || response.statusText || `HTTP ${response.status}`;
    try {
      const detail = (JSON.parse(text) as { error?: { code?: unknown; message?: unknown } }).error;
      if (detail && typeof detail.code === "string" && typeof detail.message === "string") {
        code = detail.code;
        message = detail.message;
      }
    } catch {
      // Not our error shape: keep the text.
    }
    return errorFor(response.status, code, message);
  }

  static async #json(response: Response): Promise<Wire> {
    if (response.status >= 400 || response.status === 304) throw await Client.#error(response);
    return (await response.json()) as Wire;
  }

  async #itemOrNull<T>(response: Response): Promise<Item<T> | null> {
    if (response.status === 404) {
      await response.body?.cancel();
      return null;
    }
    return itemFromWire<T>(await Client.#json(response));
  }

  /** Creates or replaces the item at `path`. Throws `ConditionFailed` if `mustNotExist` or `ifVersion` does not hold. */
  async put<T = unknown>(path: PathLike, value: T, options: PutOptions = {}): Promise<Item<T>> {
    if (options.mustNotExist && options.ifVersion !== undefined) {
      throw new TypeError("give at most one of mustNotExist and ifVersion");
    }
    const headers: Record<string, string> = { "Content-Type": "application/json" };
    if (options.mustNotExist) headers["If-None-Match"] = "*";
    if (options.ifVersion !== undefined) headers["If-Match"] = `"${options.ifVersion}"`;
    const params: Record<string, string> = {};
    if (options.history) params.history = "true";
    if (options.ttlSeconds !== undefined) params.ttl_seconds = String(options.ttlSeconds);
    const response = await this.#send({
      method: "PUT",
      route: "/v1/items/" + urlPath(toPath(path)),
      params,
      headers,
      body: JSON.stringify(value === undefined ? null : value),
      retryConflict: true,
    });
    return itemFromWire<T>(await Client.#json(response));
  }

  /** The item at `path`, or null. */
  async get<T = unknown>(path: PathLike): Promise<Item<T> | null> {
    return this.#itemOrNull<T>(await this.#send({ method: "GET", route: "/v1/items/" + urlPath(toPath(path)) }));
  }

  /** A past version of the item at `path`, from its history. Throws `NotFound`. */
  async getVersion<T = unknown>(path: PathLike, version: number): Promise<Item<T>> {
    const response = await this.#send({
      method: "GET",
      route: "/v1/items/" + urlPath(toPath(path)),
      params: { version: String(version) },
    });
    return itemFromWire<T>(await Client.#json(response));
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

  /** The items at `paths` (at most 100), read from one snapshot, null where missing. */
  async getMany<T = unknown>(paths: Iterable<PathLike>): Promise<(Item<T> | null)[]> {
    const keyPaths = [...paths].map(toPath);
    const response = await this.#send({
      method: "POST",
      route: "/v1/get",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ paths: keyPaths.map(String) }),
    });
    const found = new Map<string, Item<T>>();
    for (const body of (await Client.#json(response)).items as Wire[]) {
      const item = itemFromWire<T>(body);
      found.set(item.path.toString(), item);
    }
    return keyPaths.map((p) => found.get(p.toString()) ?? null);
  }

  /** One page of the items under `prefix` (the item at `prefix`, then its subtree, in key order). */
  async listPage<T = unknown>(prefix: PathLike, options: ListPageOptions = {}): Promise<Page<T>> {
    const params: Record<string, string> = {};
    if (options.children) params.children = "true";
    if (options.reverse) params.reverse = "true";
    for (const name of ["gt", "gte", "lt", "lte"] as const) {
      const bound = options[name];
      if (bound !== undefined) params[name] = toPath(bound).toString();
    }
    if (options.pageSize !== undefined) params.limit = String(options.pageSize);
    if (options.pageToken != null) params.page_token = options.pageToken;
    const response = await this.#send({ method: "GET", route: "/v1/list/" + urlPath(toPath(prefix)), params });
    const body = await Client.#json(response);
    return {
      items: (body.items as Wire[]).map((i) => itemFromWire<T>(i)),
      nextPageToken: (body.next_page_token as string | null | undefined) ?? null,
    };
  }

  /** Every item under `prefix` (or the first `limit`), following page tokens: `for await (const item of db.list(p))`. */
  async *list<T = unknown>(prefix: PathLike, options: ListAllOptions = {}): AsyncGenerator<Item<T>, void, undefined> {
    const { limit, pageSize, ...rest } = options;
    let remaining = limit;
    let pageToken: string | null = null;
    while (remaining === undefined || remaining > 0) {
      const size = remaining === undefined ? pageSize : Math.min(pageSize ?? 100, remaining, 1000);
      const pageOptions: ListPageOptions = { ...rest, pageToken };
      if (size !== undefined) pageOptions.pageSize = size;
      const page: Page<T> = await this.listPage<T>(prefix, pageOptions);
      const items = remaining === undefined ? page.items : page.items.slice(0, remaining);
      yield* items;
      if (remaining !== undefined) remaining -= page.items.length;
      pageToken = page.nextPageToken;
      if (pageToken === null) return;
    }
  }

  /** The kept revisions of `path`, newest first (100 by default, at most 1000). */
  async history<T = unknown>(path: PathLike, options: { limit?: number } = {}): Promise<Item<T>[]> {
    const params: Record<string, string> = {};
    if (options.limit !== undefined) params.limit = String(options.limit);
    const response = await this.#send({ method: "GET", route: "/v1/history/" + urlPath(toPath(path)), params });
    return ((await Client.#json(response)).items as Wire[]).map((i) => itemFromWire<T>(i));
  }

  /**
   * Applies `Put`, `Delete` and `Check` operations all or nothing. One result per operation: the
   * item written, the item deleted (or null), null for a check. Throws `ConditionFailed` or
   * `Conflict` (not retried: retry your unit of work).
   */
  async transact(ops: Iterable<Op>): Promise<(Item | null)[]> {
    const response = await this.#send({
      method: "POST",
      route: "/v1/transact",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ ops: [...ops].map((op) => op.toWire()) }),
    });
    return ((await Client.#json(response)).results as Wire[]).map((r) => {
      if (r.op === "put") return itemFromWire(r.item as Wire);
      if (r.op === "delete" && r.deleted != null) return itemFromWire(r.deleted as Wire);
      return null;
    });
  }
}
