/**
 * PathDB client: typed key paths that parse and format exactly like the Rust codec, and an HTTP
 * client for `pathdb serve` over the global `fetch`.
 */

export { Client, Watch } from "./client.js";
export type { ClientOptions } from "./client.js";
export { Check, CheckList, Create, Created, Delete, Increment, Merge, Patch, Put, urlPath } from "./model.js";
export { MAX_TRANSACTION_ATTEMPTS, PendingCreate, Transaction } from "./transaction.js";
export type { TxPatch } from "./transaction.js";
export type {
  AliasBuild,
  AliasConflict,
  AliasState,
  AliasTemplate,
  Change,
  ChangePage,
  CheckListOptions,
  ChangesOptions,
  CreateOptions,
  CreateTokenOptions,
  DeleteChange,
  Entry,
  IdKind,
  IssuedToken,
  Item,
  ListAllOptions,
  ListOptions,
  ListPageOptions,
  NamespaceDefinition,
  NamespaceListOptions,
  NamespaceOptions,
  NamespacePage,
  NamespacePageOptions,
  Node,
  Op,
  Operation,
  Page,
  PatchOperation,
  PatchOptions,
  PutChange,
  PutNamespaceOptions,
  PutOptions,
  PutRoleOptions,
  Role,
  Rule,
  Schema,
  SchemaCheck,
  Session,
  TokenInfo,
  VarValue,
  ViolatingItem,
  ViolationsPage,
  WaitForAliasesOptions,
  WatchOptions,
} from "./model.js";
export {
  AliasBuilding,
  AliasInvalid,
  AliasTaken,
  BuiltinRole,
  ConditionFailed,
  Conflict,
  DestinationNotEmpty,
  Forbidden,
  InsufficientStorage,
  InvalidRequest,
  InvalidRole,
  NotFound,
  NotPathDB,
  OutcomeUnknown,
  PatchConflict,
  PatchTestFailed,
  PathDBError,
  PathIsAlias,
  SchemaViolation,
  TokenExpired,
  Unauthorized,
  Unavailable,
  UnknownRole,
} from "./errors.js";
export type { Violation } from "./errors.js";
export { Desc, INT_MAX, INT_MIN, InvalidKeyPath, KeyPath, Uuid, formatId, toPath } from "./keypath.js";
export type { Descendable, Element, Id, PathId, PathLike } from "./keypath.js";
