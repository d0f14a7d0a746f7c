/** The errors the client throws: one class per kind of failure, each with the server's code. */

import { KeyPath } from "./keypath.js";

/**
 * Base of every error the server answers, or of a failure to reach it. `status` is the HTTP
 * status (undefined when there was no answer), `code` the server's stable error code
 * (`condition_failed`, `invalid_path`, ...), `message` its text for people, and `index` the
 * transaction operation it is about, when the server names one (a failed condition).
 */
export class PathDBError extends Error {
  override name = "PathDBError";
  readonly code: string;
  readonly status: number | undefined;
  readonly index: number | undefined;

  constructor(message: string, code = "", status?: number, index?: number) {
    super(message);
    this.code = code;
    this.status = status;
    this.index = index;
  }
}

/**
 * A condition did not hold: `mustNotExist`, `ifVersion`, or a transaction's check or listing check
 * (HTTP 412, or 409 `condition_failed` with the operation's `index`). Also what `transaction`
 * throws when what its callback read kept changing for `maxAttempts` runs.
 */
export class ConditionFailed extends PathDBError {
  override name = "ConditionFailed";
}

/**
 * A concurrent write got there first (HTTP 409 `conflict`); single writes are retried before this
 * is thrown. Current servers no longer answer it (a write that loses a race is planned again
 * there); older ones may.
 */
export class Conflict extends PathDBError {
  override name = "Conflict";
}

/** A move or copy found an item at or below its destination (HTTP 409 `destination_not_empty`); nothing was written. */
export class DestinationNotEmpty extends PathDBError {
  override name = "DestinationNotEmpty";
}

/** A JSON Patch's `test` operation did not hold (HTTP 409 `patch_test_failed`); nothing was written. */
export class PatchTestFailed extends PathDBError {
  override name = "PatchTestFailed";
}

/**
 * A patch operation does not fit the item's value (HTTP 409 `patch_conflict`): an increment of a
 * non-number or past 2^53, a remove or replace of a missing member, an add under a missing parent,
 * ...; nothing was written. The same patch would fail again, so it is not retried.
 */
export class PatchConflict extends PathDBError {
  override name = "PatchConflict";
}

/** The item (or revision) a method promises, or a patch without `create` changes, does not exist (HTTP 404). */
export class NotFound extends PathDBError {
  override name = "NotFound";
}

/**
 * No token, or one the server does not accept (HTTP 401 `unauthorized`): `reason` says why when the
 * server tells (`missing`, `unknown_token` (also a revoked token), `expired`, and for a JWT
 * `not_yet_valid`, `wrong_issuer`, `wrong_audience`, `unknown_key`, `algorithm_not_allowed`,
 * `bad_signature`, `malformed`, `no_role`), else undefined.
 */
export class Unauthorized extends PathDBError {
  override name = "Unauthorized";
  readonly reason: string | undefined;

  constructor(message: string, code = "", status?: number, index?: number, options: { reason?: string | undefined } = {}) {
    super(message, code, status, index);
    this.reason = options.reason;
  }
}

/**
 * The token's role may not do this (HTTP 403 `forbidden`), or the server refused it for another
 * reason (`read_only`: the server is read-only; `origin_not_allowed`, `host_not_allowed`). With
 * `forbidden`, `operation` is what was refused (`read`, `write`, `admin`) and `path` where
 * (undefined for `admin`, which concerns the whole database); both are undefined for the other
 * codes. It never carries a value.
 */
export class Forbidden extends PathDBError {
  override name = "Forbidden";
  readonly operation: string | undefined;
  readonly path: KeyPath | undefined;

  constructor(
    message: string,
    code = "",
    status?: number,
    index?: number,
    options: { operation?: string | undefined; path?: KeyPath | undefined } = {},
  ) {
    super(message, code, status, index);
    this.operation = options.operation;
    this.path = options.path;
  }
}

/** A change to a built-in role, `read`, `read-write` or `admin` (HTTP 409 `builtin_role`): they cannot be replaced or deleted. */
export class BuiltinRole extends PathDBError {
  override name = "BuiltinRole";
}

/**
 * The server refused the request as invalid: path, JSON, patch document (`invalid_patch`, its
 * message naming the operation: "operation 2: ..."), page or change token (`invalid_change_token`:
 * not a token, or one of another group), size, option (HTTP 400, 413, 415).
 */
export class InvalidRequest extends PathDBError {
  override name = "InvalidRequest";
}

/**
 * A listing's, a read's, a change feed's or a listing check's `filter` is not a valid filter (HTTP
 * 400 `invalid_filter`): it does not parse, uses a name other than the item's (`value`, `path`,
 * `ids`, `version`, `created_at`, `modified_at`), is empty, too long or nests too deep.
 * `position` is the character offset in the filter where the problem is (undefined when the server
 * names none); the message says what it is. Nothing was read or written.
 */
export class InvalidFilter extends InvalidRequest {
  override name = "InvalidFilter";
  readonly position: number | undefined;

  constructor(
    message: string,
    code = "invalid_filter",
    status: number | undefined = 400,
    index?: number,
    options: { position?: number | undefined } = {},
  ) {
    super(message, code, status, index);
    this.position = options.position;
  }
}

/**
 * The `Schema-Version` the client speaks (`schemaVersions`) names a version a namespace does not
 * have, or a namespace with no definition (HTTP 400 `unknown_schema_version`): the message names it.
 * Nothing was read or written.
 */
export class UnknownSchemaVersion extends InvalidRequest {
  override name = "UnknownSchemaVersion";
}

/**
 * A value written in an older definition version (`schemaVersions`) that its migration steps cannot
 * bring to the newest, such as a rename onto a member the value has as well (HTTP 422
 * `migration_failed`). `path` is the item's path (undefined when not named). Nothing was written.
 */
export class MigrationFailed extends InvalidRequest {
  override name = "MigrationFailed";
  readonly path: KeyPath | undefined;

  constructor(
    message: string,
    code = "migration_failed",
    status: number | undefined = 422,
    index?: number,
    options: { path?: KeyPath | undefined } = {},
  ) {
    super(message, code, status, index);
    this.path = options.path;
  }
}

/**
 * A new namespace definition that would break stored items or clients of older versions, not forced
 * (HTTP 409 `incompatible_schema`): `problems` lists each one, a sentence (`/plan is required, ...`).
 * Nothing was stored. Not retried: add `migrate` steps (a default for the new member, say), or force it.
 */
export class IncompatibleSchema extends PathDBError {
  override name = "IncompatibleSchema";
  readonly problems: readonly string[];

  constructor(
    message: string,
    code = "incompatible_schema",
    status: number | undefined = 409,
    index?: number,
    options: { problems?: readonly string[] } = {},
  ) {
    super(message, code, status, index);
    this.problems = [...(options.problems ?? [])];
  }
}

/** A token issued for a role that does not exist (HTTP 422 `unknown_role`): create the role first (`putRole`). Nothing was issued. */
export class UnknownRole extends InvalidRequest {
  override name = "UnknownRole";
}

/**
 * A role's rules are not valid (HTTP 422 `invalid_role`): a path template that is not one, an
 * operation other than `read`, `write`, `admin`, or `admin` elsewhere than on `/**`. The message
 * names the rule. Nothing was stored.
 */
export class InvalidRole extends InvalidRequest {
  override name = "InvalidRole";
}

/**
 * One way a value does not fit a namespace's schema: `instancePath`, a JSON Pointer into the value
 * (`""` is the whole value), `schemaPath`, a JSON Pointer into the schema (the keyword that
 * failed), and `message`, for people.
 */
export interface Violation {
  readonly instancePath: string;
  readonly schemaPath: string;
  readonly message: string;
}

/** A violation from its JSON shape (`{instance_path, schema_path, message}`). */
export function violationFromWire(body: unknown): Violation {
  const v = (typeof body === "object" && body !== null ? body : {}) as Record<string, unknown>;
  return {
    instancePath: typeof v.instance_path === "string" ? v.instance_path : "",
    schemaPath: typeof v.schema_path === "string" ? v.schema_path : "",
    message: typeof v.message === "string" ? v.message : "",
  };
}

/**
 * The value does not fit its namespace's schema (HTTP 422 `schema_violation`); nothing was
 * written, in a transaction or an import none of the other operations either. `violations` lists
 * what failed (at most 20); `path` is the item's path, `index` the transaction operation and `line`
 * the import line (1-based), each undefined when the server names none.
 */
export class SchemaViolation extends PathDBError {
  override name = "SchemaViolation";
  readonly violations: readonly Violation[];
  readonly path: KeyPath | undefined;
  readonly line: number | undefined;

  constructor(
    message: string,
    options: {
      status?: number;
      index?: number | undefined;
      violations?: readonly Violation[];
      path?: KeyPath | undefined;
      line?: number | undefined;
    } = {},
  ) {
    super(message, "schema_violation", options.status ?? 422, options.index);
    this.violations = [...(options.violations ?? [])];
    this.path = options.path;
    this.line = options.line;
  }
}

/**
 * A write would give an item an alias path that another item holds, or at which an item is stored
 * (HTTP 409 `alias_taken`): an alias belongs to one item. Nothing was written (in a transaction,
 * none of the other operations either). `alias` is the alias path, `holder` the item that holds
 * it, `index` the transaction operation (each undefined when not named). Not retried: the same
 * write would be refused again.
 */
export class AliasTaken extends PathDBError {
  override name = "AliasTaken";
  readonly alias: KeyPath | undefined;
  readonly holder: KeyPath | undefined;

  constructor(
    message: string,
    options: { status?: number; index?: number | undefined; alias?: KeyPath | undefined; holder?: KeyPath | undefined } = {},
  ) {
    super(message, "alias_taken", options.status ?? 409, options.index);
    this.alias = options.alias;
    this.holder = options.holder;
  }
}

/**
 * A put or create at a path that is an alias of an item (HTTP 409 `path_is_alias`): an alias is not
 * a place to store a second item; write the item at its own path, `item`. `path` is the path
 * written. Nothing was written.
 */
export class PathIsAlias extends PathDBError {
  override name = "PathIsAlias";
  readonly path: KeyPath | undefined;
  readonly item: KeyPath | undefined;

  constructor(
    message: string,
    options: { status?: number; index?: number | undefined; path?: KeyPath | undefined; item?: KeyPath | undefined } = {},
  ) {
    super(message, "path_is_alias", options.status ?? 409, options.index);
    this.path = options.path;
    this.item = options.item;
  }
}

/**
 * A member of the value that an alias template of its namespace names cannot fill an alias id: it
 * is an object, an array, a boolean or a number that is not an integer (HTTP 422 `alias_invalid`).
 * Nothing was written (in a transaction, none of the other operations either). `path` is the
 * item's path, `member` the member as the template names it (`address.city`), `index` the
 * transaction operation (each undefined when not named).
 */
export class AliasInvalid extends PathDBError {
  override name = "AliasInvalid";
  readonly path: KeyPath | undefined;
  readonly member: string | undefined;

  constructor(
    message: string,
    options: { status?: number; index?: number | undefined; path?: KeyPath | undefined; member?: string | undefined } = {},
  ) {
    super(message, "alias_invalid", options.status ?? 422, options.index);
    this.path = options.path;
    this.member = options.member;
  }
}

/**
 * A change token is older than the server's retention window (default 7 days), so changes after it
 * may be gone (HTTP 410 `token_expired`): list the prefix again and follow from its `changesToken`.
 */
export class TokenExpired extends PathDBError {
  override name = "TokenExpired";
}

/**
 * The server could not be reached or could not serve the request (HTTP 503 and other 5xx); 503 is
 * retried first, except `outcome_unknown` and `alias_building`.
 */
export class Unavailable extends PathDBError {
  override name = "Unavailable";
}

/**
 * The server's disk is full (HTTP 507 `insufficient_storage`): nothing was written. Not retried:
 * space has to be freed first; the server recovers on its own once it is.
 */
export class InsufficientStorage extends Unavailable {
  override name = "InsufficientStorage";
}

/**
 * The storage failed after the write was sent, so it may or may not have been made (HTTP 503
 * `outcome_unknown`). Not retried by the client, since a retried increment or create could apply
 * twice: read the item to find out.
 */
export class OutcomeUnknown extends Unavailable {
  override name = "OutcomeUnknown";
}

/**
 * A read through an alias path whose template's aliases are not all written yet (HTTP 503
 * `alias_building`): `template` is the template, `state` `building` (its build is under way) or
 * `conflict` (its build stopped: two items would share an alias), and `checked` how many items the
 * build has checked. Not retried by the client: a build outlasts the client's backoff, and one in
 * conflict waits for `retryAliasBuild`. `waitForAliases(namespace)` waits for a namespace's builds
 * (and throws this, with the state `conflict`, for one that stopped).
 */
export class AliasBuilding extends Unavailable {
  override name = "AliasBuilding";
  readonly template: string | undefined;
  readonly state: string | undefined;
  readonly checked: number | undefined;

  constructor(
    message: string,
    options: {
      status?: number | undefined;
      index?: number | undefined;
      template?: string | undefined;
      state?: string | undefined;
      checked?: number | undefined;
    } = {},
  ) {
    super(message, "alias_building", "status" in options ? options.status : 503, options.index);
    this.template = options.template;
    this.state = options.state;
    this.checked = options.checked;
  }
}

/**
 * The address answered, but not as PathDB does: an error without PathDB's JSON error body
 * (`{"error": {"code", "message"}}`), or a success that is not JSON. Another program listens there
 * (a web server, a proxy's own error page). The message names the server and quotes the start of
 * its answer; `status` is its HTTP status.
 */
export class NotPathDB extends Unavailable {
  override name = "NotPathDB";
}

/** The error for an answer that is not PathDB's. */
export function notPathDB(server: string, status: number, contentType: string, body: string): NotPathDB {
  const flat = body.split(/\s+/).filter((w) => w).join(" ");
  const shown = flat.length > 60 ? flat.slice(0, 60) + "..." : flat;
  const kind = contentType || "no content type";
  return new NotPathDB(`${server} is not a PathDB server (it answered HTTP ${status}, ${kind}: ${JSON.stringify(shown)})`, "", status);
}

function parsedOrUndefined(text: string): KeyPath | undefined {
  try {
    return KeyPath.parse(text);
  } catch {
    return undefined;
  }
}

/** A key path the server named, or undefined (not named, or not one). */
function pathOf(value: unknown): KeyPath | undefined {
  return typeof value === "string" ? parsedOrUndefined(value) : undefined;
}

function stringOf(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

function integerOf(value: unknown): number | undefined {
  return typeof value === "number" && Number.isSafeInteger(value) ? value : undefined;
}

/**
 * The error for an error answer; `detail` is the whole `error` object, for the members of a kind's
 * own (a schema violation's, an alias error's).
 */
export function errorFor(status: number, code: string, message: string, index?: number, detail: Record<string, unknown> = {}): PathDBError {
  if (code === "schema_violation") {
    return new SchemaViolation(message, {
      status,
      index,
      violations: Array.isArray(detail.violations) ? detail.violations.map(violationFromWire) : [],
      path: pathOf(detail.path),
      line: integerOf(detail.line),
    });
  }
  if (code === "alias_taken") return new AliasTaken(message, { status, index, alias: pathOf(detail.alias), holder: pathOf(detail.holder) });
  if (code === "path_is_alias") return new PathIsAlias(message, { status, index, path: pathOf(detail.path), item: pathOf(detail.item) });
  if (code === "alias_invalid") return new AliasInvalid(message, { status, index, path: pathOf(detail.path), member: stringOf(detail.member) });
  if (code === "alias_building") {
    return new AliasBuilding(message, {
      status,
      index,
      template: stringOf(detail.template),
      state: stringOf(detail.state),
      checked: integerOf(detail.checked),
    });
  }
  if (code === "invalid_filter") return new InvalidFilter(message, code, status, index, { position: integerOf(detail.position) });
  if (code === "migration_failed") return new MigrationFailed(message, code, status, index, { path: pathOf(detail.path) });
  if (code === "incompatible_schema") {
    const problems = Array.isArray(detail.problems) ? detail.problems.filter((p): p is string => typeof p === "string") : [];
    return new IncompatibleSchema(message, code, status, index, { problems });
  }
  if (status === 401) return new Unauthorized(message, code, status, index, { reason: stringOf(detail.reason) });
  if (status === 403) {
    return new Forbidden(message, code, status, index, { operation: stringOf(detail.operation), path: pathOf(detail.path) });
  }
  if (code === "condition_failed" || status === 412) return new ConditionFailed(message, code, status, index);
  if (code === "conflict") return new Conflict(message, code, status, index);
  if (code === "destination_not_empty") return new DestinationNotEmpty(message, code, status, index);
  if (code === "patch_test_failed") return new PatchTestFailed(message, code, status, index);
  if (code === "patch_conflict") return new PatchConflict(message, code, status, index);
  if (code === "token_expired" || status === 410) return new TokenExpired(message, code, status, index);
  if (code === "builtin_role") return new BuiltinRole(message, code, status, index);
  if (code === "unknown_role") return new UnknownRole(message, code, status, index);
  if (code === "invalid_role") return new InvalidRole(message, code, status, index);
  if (code === "unknown_schema_version") return new UnknownSchemaVersion(message, code, status, index);
  if (status === 404) return new NotFound(message, code, status, index);
  if (status === 400 || status === 413 || status === 415 || status === 422) {
    return new InvalidRequest(message, code, status, index);
  }
  if (code === "insufficient_storage" || status === 507) return new InsufficientStorage(message, code, status, index);
  if (code === "outcome_unknown") return new OutcomeUnknown(message, code, status, index);
  if (status >= 500) return new Unavailable(message, code, status, index);
  return new PathDBError(message, code, status, index);
}
