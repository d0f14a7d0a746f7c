// A small program against the types openapi-typescript generates from PathDB's OpenAPI
// document; scripts/openapi-clients.sh checks it with `tsc --strict --noEmit`. The transaction
// op is one tagged union: narrowing on `op` must reach each variant's own fields.

import type { components, operations, paths } from "./pathdb.js";

type TxOp = components["schemas"]["TxOpIn"];
type TxResult = components["schemas"]["TxResultOut"];
type Item = components["schemas"]["ItemOut"];
type PutItemOk = operations["putItem"]["responses"][201]["content"]["application/json"];
type ListItemsQuery = NonNullable<paths["/v1/list/{prefix}"]["get"]["parameters"]["query"]>;
type ChangesOk = operations["getChanges"]["responses"][200]["content"]["application/json"];
type Change = components["schemas"]["ChangeOut"];

const ops: TxOp[] = [
    { op: "check", path: "/user-7/post-2", if_version: 1 },
    { op: "put", path: "/user-7/post-10", value: [1, 2], history: true },
    { op: "delete", path: "/user-7/post-3" },
    { op: "create", path: "/user-7/post", id: "sequence", value: { title: "new" } },
    { op: "patch", path: "/user-7/post-10", patch: [{ op: "increment", path: "/views", value: 1 }] },
];

function describe(op: TxOp): string {
    switch (op.op) {
        case "put":
            return `put ${op.path} = ${JSON.stringify(op.value)}`;
        case "delete":
            return `delete ${op.path}${op.if_version === undefined ? "" : ` at ${op.if_version}`}`;
        case "check":
            return `check ${op.path} must_exist=${String(op.must_exist ?? false)}`;
        case "check_list":
            return `check the listing of ${op.prefix} since ${op.changes_token}`;
        case "create":
            return `create ${op.path}-{${op.id}}`;
        case "patch":
            return `patch ${op.path} with ${JSON.stringify(op.merge ?? op.patch)}`;
    }
}

function written(result: TxResult): Item | null {
    switch (result.op) {
        case "put":
            return result.item;
        case "delete":
            return result.deleted ?? null;
        case "check":
        case "check_list":
            return null;
    }
}

const created: PutItemOk = {
    path: "/user-7/post-2",
    version: 1,
    created_at: 0,
    modified_at: 0,
    expires_at: null,
    value: { title: "hello" },
};
const query: ListItemsQuery = { children: true, limit: 10 };
const etag: string | undefined = undefined as
    | operations["getItem"]["responses"][200]["headers"]["ETag"]
    | undefined;

// The change feed's changes are a tagged union too.
function changed(change: Change): string {
    switch (change.op) {
        case "put":
            return `${change.item.path} v${change.item.version}`;
        case "delete":
            return `${change.path} deleted at v${change.version}`;
    }
}
const page: ChangesOk = {
    changes: [{ op: "put", item: created }, { op: "delete", path: "/user-7/post-2", version: 1 }],
    next_token: "AQ",
};

export const summary: string[] = [
    ...page.changes.map(changed),
    ...ops.map(describe),
    String(written({ op: "put", item: created })?.version),
    JSON.stringify(query),
    String(etag),
];
