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

/** No token, or one the server does not know (HTTP 401). */
export class Unauthorized extends PathDBError {
  override name = "Unauthorized";
}

/** The token may not do this, or the server is read-only (HTTP 403). */
export class Forbidden extends PathDBError {
  override name = "Forbidden";
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
 * A change token is older than the server's retention window (default 7 days), so changes after it
 * may be gone (HTTP 410 `token_expired`): list the prefix again and follow from its `changesToken`.
 */
export class TokenExpired extends PathDBError {
  override name = "TokenExpired";
}

/**
 * The server could not be reached or could not serve the request (HTTP 503 and other 5xx); 503 is
 * retried first, except `outcome_unknown`.
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

/**
 * The error for an error answer; `detail` is the whole `error` object, for the members of a kind's
 * own (a schema violation's).
 */
export function errorFor(status: number, code: string, message: string, index?: number, detail: Record<string, unknown> = {}): PathDBError {
  if (code === "schema_violation") {
    const line = detail.line;
    return new SchemaViolation(message, {
      status,
      index,
      violations: Array.isArray(detail.violations) ? detail.violations.map(violationFromWire) : [],
      path: typeof detail.path === "string" ? parsedOrUndefined(detail.path) : undefined,
      line: typeof line === "number" && Number.isSafeInteger(line) ? line : undefined,
    });
  }
  if (code === "condition_failed" || status === 412) return new ConditionFailed(message, code, status, index);
  if (code === "conflict") return new Conflict(message, code, status, index);
  if (code === "destination_not_empty") return new DestinationNotEmpty(message, code, status, index);
  if (code === "patch_test_failed") return new PatchTestFailed(message, code, status, index);
  if (code === "patch_conflict") return new PatchConflict(message, code, status, index);
  if (code === "token_expired" || status === 410) return new TokenExpired(message, code, status, index);
  if (status === 401) return new Unauthorized(message, code, status, index);
  if (status === 403) return new Forbidden(message, code, status, index);
  if (status === 404) return new NotFound(message, code, status, index);
  if (status === 400 || status === 413 || status === 415 || status === 422) {
    return new InvalidRequest(message, code, status, index);
  }
  if (code === "insufficient_storage" || status === 507) return new InsufficientStorage(message, code, status, index);
  if (code === "outcome_unknown") return new OutcomeUnknown(message, code, status, index);
  if (status >= 500) return new Unavailable(message, code, status, index);
  return new PathDBError(message, code, status, index);
}
