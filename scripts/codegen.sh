#!/usr/bin/env bash
# Typed clients generated from namespace definitions (issue 34), end to end: a `pathdb serve` on a
# new database gets three definitions (`user` and `post` with schemas, `post` a 10-member object
# with a nested object, an enum, arrays, a $ref and optional members; `audit` with history and no
# schema), then `pathdb codegen typescript` (running clients/typescript's `pathdb-codegen`, i.e.
# json-schema-to-typescript) and `pathdb codegen python` (running clients/python's
# `python -m pathdb.codegen`, i.e. datamodel-code-generator) write their code from it. For each
# language a sample program that uses the generated types and key path builders with the client
# must type-check (tsc --strict, mypy --strict) and run against the server, and a program with one
# wrong member type must fail to type-check, naming the member.
#
# Then two schema versions side by side (docs/migrations.md): on a second, new database `user` is
# defined (v1: a required `name`, an enum `status`), clients are generated from it (python and
# typescript), v2 is defined with migration steps (rename /name -> /full_name, add /tier with a
# default, rename_value on /status) and clients are generated from it. The v1 clients (which speak
# `Schema-Version: user=1` through the generated SCHEMA_VERSIONS and create_client/createClient)
# and the v2 ones then run at once for $CODEGEN_SIDE_BY_SIDE_SECONDS seconds (default 30: CI's) of
# mixed gets, listings, puts, merge patches and deletes on shared items
# (scripts/codegen-versions/side_by_side.{py,ts}): every value each reads must fit its own
# version's schema, and no answer may be an error but the deliberate ones (404 for an item another
# client deleted, 422 for a value without a required member), all counted and printed at the end.
#
#   bash scripts/codegen.sh
#   CODEGEN_SIDE_BY_SIDE_SECONDS=5 bash scripts/codegen.sh   # a shorter side-by-side run
#
# The binary is $PATHDB_BIN (default target/debug/pathdb, built here with `cargo build -p
# pathdb-cli --features dynamodb` when PATHDB_BIN is unset, as scripts/clients.sh does). Needs node 20+ with npm, and python3 3.10+ with venv (the generator's minimum); the
# Python tools are clients/python/requirements-test.txt in target/clients-venv, shared with
# scripts/clients.sh. Outside CI a missing node or python3 skips that language with a message;
# with CI=true it fails.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$PWD"

. scripts/lib.sh

target_dir="${CARGO_TARGET_DIR:-target}"
[[ "$target_dir" = /* ]] || target_dir="$root/$target_dir"
started=$SECONDS

missing() {
    if [[ "${CI:-}" == "true" ]]; then
        echo "error: $1" >&2
        exit 1
    fi
    echo "skipping: $1" >&2
}

fail() {
    echo "error: $*" >&2
    exit 1
}

if [[ -z "${PATHDB_BIN:-}" ]]; then
    # The features of scripts/clients.sh and `cargo test --workspace`: a no-op after them.
    step "cargo build -p pathdb-cli --features dynamodb"
    cargo build -p pathdb-cli --features dynamodb
    PATHDB_BIN="$target_dir/debug/pathdb"
fi
[[ -x "$PATHDB_BIN" ]] || fail "no pathdb binary at $PATHDB_BIN"
pathdb="$PATHDB_BIN"

have_node=false
if command -v node >/dev/null && command -v npm >/dev/null \
    && node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)'; then
    have_node=true
else
    missing "TypeScript codegen needs node 20+ and npm"
fi
have_python=false
if command -v python3 >/dev/null \
    && python3 -c 'import sys, venv; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
    have_python=true
else
    missing "Python codegen needs python3 (3.10 or newer, with venv)"
fi

make_work_dir codegen

# --- the clients, built as scripts/clients.sh builds them -------------------------------------

venv="$target_dir/clients-venv"
if $have_python; then
    requirements="clients/python/requirements-test.txt"
    step "python: venv $venv, the client's wheel installed"
    # Recreated when the pins change (as scripts/clients.sh does); otherwise reused as is.
    if ! cmp -s "$requirements" "$venv/requirements-test.txt" 2>/dev/null; then
        rm -rf "$venv"
        python3 -m venv "$venv"
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
        cp "$requirements" "$venv/requirements-test.txt"
    fi
    rm -rf clients/python/build
    "$venv/bin/python" -m pip wheel --quiet --disable-pip-version-check --no-deps \
        --no-build-isolation --wheel-dir "$work/wheels" ./clients/python
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps \
        --force-reinstall "$work"/wheels/pathdb-*.whl
    rm -rf clients/python/build clients/python/src/pathdb.egg-info
fi
if $have_node; then
    step "typescript: npm ci, tsc (node $(node --version))"
    (cd clients/typescript && npm ci --no-audit --no-fund --loglevel=error \
        && rm -rf dist && ./node_modules/.bin/tsc -p tsconfig.json)
fi

# --- a database with definitions --------------------------------------------------------------

step "starting pathdb serve on a free loopback port"
RUST_LOG=warn start_pathdb_serve "$pathdb" "$work"
url="$server_url"

# PUT BODY to URL; fails unless the answer's status is STATUS.
expect() {
    local status="$1" method="$2" path="$3" body="$4" got
    got="$(curl -sS -o "$work/answer" -w '%{http_code}' -X "$method" \
        -H 'Content-Type: application/json' --data-binary "$body" "$url$path")"
    if [[ "$got" != "$status" ]]; then
        fail "$method $path answered $got, not $status: $(cat "$work/answer")"
    fi
}

step "defining user, post and audit"
expect 201 PUT /v1/namespaces/user '{
  "description": "A person who writes posts.",
  "schema": {
    "type": "object",
    "properties": {
      "name": {"type": "string", "minLength": 1},
      "email": {"type": "string", "format": "email"},
      "joined": {"type": "integer"}
    },
    "required": ["name"],
    "additionalProperties": false
  }
}'
expect 201 PUT /v1/namespaces/post '{
  "description": "A blog post, under its author: /user-7/post-1.",
  "schema": {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
      "title": {"type": "string", "minLength": 1},
      "body": {"type": "string"},
      "views": {"type": "integer", "minimum": 0},
      "score": {"type": "number"},
      "published": {"type": "boolean"},
      "status": {"enum": ["draft", "published", "archived"]},
      "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true},
      "author": {
        "type": "object",
        "properties": {"name": {"type": "string"}, "email": {"type": "string"}},
        "required": ["name"],
        "additionalProperties": false
      },
      "published_at": {"type": ["integer", "null"]},
      "links": {"type": "array", "items": {"$ref": "#/$defs/link"}}
    },
    "required": ["title", "views", "status", "author"],
    "additionalProperties": false,
    "$defs": {
      "link": {
        "type": "object",
        "properties": {"href": {"type": "string"}, "rel": {"type": "string"}},
        "required": ["href"]
      }
    }
  }
}'
expect 201 PUT /v1/namespaces/audit '{"history": 5, "description": "Audit entries: any JSON."}'
# The definitions are live: a post that does not fit is refused.
expect 422 PUT /v1/items/user-1/post-1 '{"title": "no views, no status, no author"}'
grep -q '"schema_violation"' "$work/answer" || fail "a 422 without schema_violation: $(cat "$work/answer")"

# expect_type_error WHAT NAMED LOG COMMAND...: runs a type checker that must fail on WHAT, a
# program with one wrong member type, with an error naming the member as the fixed string NAMED
# (not just the program's line quoted back).
expect_type_error() {
    local what="$1" named="$2" log="$3"
    shift 3
    if "$@" >"$log" 2>&1; then
        cat "$log"
        fail "$what type-checked, but it gives a string to the number member views"
    fi
    # Without colours (tsc --pretty colours its output).
    sed -i 's/\x1b\[[0-9;]*m//g' "$log"
    if ! grep -qF "$named" "$log"; then
        cat "$log"
        fail "$what failed to type-check, but no error says $named"
    fi
    echo "$what: refused as expected:"
    grep -E "error|$named" "$log" | sed 's/^/    /'
}

# What a sample program prints (compact JSON) when its user is /user-ID.
expected_run() {
    echo '{"path":"/user-'"$1"'/post-1","views":0,"status":"draft","author":"Ann","tags":["intro"],"titles":["Hello"],"refused":["","/title"],"audit":1}'
}

# --- TypeScript -------------------------------------------------------------------------------

typescript_codegen() {
    local dir="$work/ts"
    mkdir -p "$dir/node_modules/@pathdb"
    ln -s "$root/clients/typescript" "$dir/node_modules/@pathdb/client"
    step "pathdb codegen typescript --server $url --out $dir/gen"
    "$pathdb" codegen typescript --server "$url" --out "$dir/gen" \
        --generator "node $root/clients/typescript/dist/bin/pathdb-codegen.js"
    [[ -f "$dir/gen/index.ts" && -f "$dir/gen/pathdb-namespaces.json" ]] \
        || fail "no gen/index.ts or gen/pathdb-namespaces.json"
    ls "$dir/gen" "$dir/gen/namespaces"

    echo '{"type": "module", "private": true}' >"$dir/package.json"
    cat >"$dir/tsconfig.json" <<EOF
{
  "compilerOptions": {
    "target": "ES2022",
    "module": "NodeNext",
    "moduleResolution": "NodeNext",
    "lib": ["ES2022", "DOM"],
    "types": ["node"],
    "typeRoots": ["$root/clients/typescript/node_modules/@types"],
    "strict": true,
    "noUncheckedIndexedAccess": true,
    "exactOptionalPropertyTypes": true,
    "outDir": "out"
  },
  "files": ["sample.ts"]
}
EOF
    cat >"$dir/sample.ts" <<'EOF'
import { Client, SchemaViolation, type Item } from "@pathdb/client";
import { type Post, type User, auditPath, postPath, postPrefix, userPath } from "./gen/index.js";

const db = new Client(process.argv[2]!);
const user = userPath(Number(process.argv[3]));
await db.put<User>(user, { name: "Ann", joined: 2026 });
const post: Post = {
  title: "Hello",
  views: 0,
  status: "draft",
  tags: ["intro"],
  author: { name: "Ann" },
  published_at: null,
  links: [{ href: "https://example.com", rel: "home" }],
};
const written: Item<Post> = await db.put(postPath(1, user), post);
const got = await db.get<Post>(postPath(1, user));
if (got === null) throw new Error("the post is missing");
const views: number = got.value.views;
const status: "draft" | "published" | "archived" = got.value.status;
const author: string = got.value.author.name;
const tags: string[] = got.value.tags ?? [];
const titles: string[] = [];
for await (const item of db.list<Post>(postPrefix(user))) titles.push(item.value.title);
let refused: string[] = [];
try {
  await db.put(postPath(2, user), { title: "" });
} catch (e) {
  if (!(e instanceof SchemaViolation)) throw e;
  refused = [...new Set(e.violations.map((v) => v.instancePath))].sort();
}
const audit = await db.put(auditPath(1, user), { anything: ["goes"] }); // no schema
const path = written.path.toString();
console.log(JSON.stringify({ path, views, status, author, tags, titles, refused, audit: audit.version }));
EOF
    cat >"$dir/bad.ts" <<'EOF'
import { Client } from "@pathdb/client";
import { type Post, postPath, userPath } from "./gen/index.js";

const db = new Client("http://127.0.0.1:7070");
const post: Post = { title: "Hello", views: "many", status: "draft", author: { name: "Ann" } };
await db.put<Post>(postPath(1, userPath(7)), post);
EOF
    echo '{"extends": "./tsconfig.json", "compilerOptions": {"noEmit": true}, "files": ["bad.ts"]}' \
        >"$dir/tsconfig.bad.json"
    local tsc="$root/clients/typescript/node_modules/.bin/tsc"
    step "typescript: tsc --strict on a program using the generated types"
    (cd "$dir" && "$tsc" -p tsconfig.json)
    step "typescript: the program against the server"
    local out
    out="$(cd "$dir" && node out/sample.js "$url" 7)"
    echo "$out"
    [[ "$out" == "$(expected_run 7)" ]] || fail "the TypeScript sample printed $out, not $(expected_run 7)"
    step "typescript: tsc --strict on a program with a string for the number member views"
    expect_type_error "bad.ts" "property 'views'" "$work/ts-bad.log" \
        bash -c "cd '$dir' && '$tsc' -p tsconfig.bad.json --pretty true"
}

# --- Python -----------------------------------------------------------------------------------

python_codegen() {
    local dir="$work/py"
    mkdir -p "$dir"
    step "pathdb codegen python --server $url --out $dir/pathdb_types"
    "$pathdb" codegen python --server "$url" --out "$dir/pathdb_types" \
        --generator "$venv/bin/python -m pathdb.codegen"
    [[ -f "$dir/pathdb_types/__init__.py" && -f "$dir/pathdb_types/pathdb-namespaces.json" ]] \
        || fail "no pathdb_types/__init__.py or pathdb_types/pathdb-namespaces.json"
    ls "$dir/pathdb_types" "$dir/pathdb_types/namespaces"

    cat >"$dir/sample.py" <<'EOF'
import json
import sys
from typing import List

from pathdb import Client, Item, SchemaViolation
from pathdb_types import Post, User, audit_path, post_path, post_prefix, user_path


def main(url: str, user_id: int) -> None:
    with Client(url) as db:
        user = user_path(user_id)
        db.put(user, User(name="Ann", joined=2026))
        post = Post(
            title="Hello",
            views=0,
            status="draft",
            tags=["intro"],
            author={"name": "Ann"},
            published_at=None,
            links=[{"href": "https://example.com", "rel": "home"}],
        )
        written: Item[Post] = db.put(post_path(1, user), post)
        got = db.get(post_path(1, user), Post)
        if got is None:
            raise SystemExit("the post is missing")
        views: int = got.value["views"]
        status: str = got.value["status"]
        author: str = got.value["author"]["name"]
        tags: List[str] = got.value.get("tags", [])
        titles = [item.value["title"] for item in db.list(post_prefix(user), value_type=Post)]
        refused: List[str] = []
        try:
            db.put(post_path(2, user), {"title": ""})
        except SchemaViolation as e:
            refused = sorted({v.instance_path for v in e.violations})
        audit = db.put(audit_path(1, user), {"anything": ["goes"]})  # no schema
        shown = {
            "path": str(written.path), "views": views, "status": status, "author": author,
            "tags": tags, "titles": titles, "refused": refused, "audit": audit.version,
        }
        print(json.dumps(shown, separators=(",", ":")))


main(sys.argv[1], int(sys.argv[2]))
EOF
    cat >"$dir/bad.py" <<'EOF'
from pathdb import Client
from pathdb_types import Post, post_path, user_path

with Client("http://127.0.0.1:7070") as db:
    post = Post(title="Hello", views="many", status="draft", author={"name": "Ann"})
    db.put(post_path(1, user_path(7)), post)
EOF
    export MYPY_CACHE_DIR="$work/mypy-cache"
    step "python: mypy --strict on a program using the generated types"
    (cd "$dir" && "$venv/bin/mypy" --strict sample.py pathdb_types)
    step "python: the program against the server"
    local out
    out="$(cd "$dir" && "$venv/bin/python" sample.py "$url" 8)"
    echo "$out"
    [[ "$out" == "$(expected_run 8)" ]] || fail "the Python sample printed $out, not $(expected_run 8)"
    step "python: mypy --strict on a program with a string for the number member views"
    expect_type_error "bad.py" 'TypedDict item "views"' "$work/py-bad.log" \
        bash -c "cd '$dir' && '$venv/bin/mypy' --strict bad.py"
}

if $have_node; then typescript_codegen; fi
if $have_python; then python_codegen; fi

step "stopping the server"
stop_pathdb_serve "$work"

# --- two schema versions side by side ---------------------------------------------------------

# side_generate VERSION: the clients of the definitions the server at $url has now, each
# language's under $sbs (py/user_VERSION, ts/VERSION/gen).
side_generate() {
    if $have_python; then
        "$pathdb" codegen python --server "$url" --out "$sbs/py/user_$1" \
            --generator "$venv/bin/python -m pathdb.codegen"
    fi
    if $have_node; then
        "$pathdb" codegen typescript --server "$url" --out "$sbs/ts/$1/gen" \
            --generator "node $root/clients/typescript/dist/bin/pathdb-codegen.js"
    fi
}

side_by_side() {
    local seconds="${CODEGEN_SIDE_BY_SIDE_SECONDS:-30}" ts="$sbs/ts"
    mkdir -p "$sbs/py" "$ts"
    step "side by side: pathdb serve on a new database"
    RUST_LOG=warn start_pathdb_serve "$pathdb" "$sbs"
    url="$server_url"
    cat >"$sbs/v1.json" <<'JSON'
{"type": "object", "required": ["name"], "additionalProperties": false,
 "properties": {"name": {"type": "string", "minLength": 1}, "status": {"enum": ["new", "shipped"]}}}
JSON
    cat >"$sbs/v2.json" <<'JSON'
{"type": "object", "required": ["full_name", "tier"], "additionalProperties": false,
 "properties": {"full_name": {"type": "string", "minLength": 1}, "tier": {"enum": ["free", "pro"]},
                "status": {"enum": ["new", "sent"]}}}
JSON
    cat >"$sbs/steps.json" <<'JSON'
[{"op": "rename", "from": "/name", "to": "/full_name"},
 {"op": "add", "path": "/tier", "default": "free"},
 {"op": "rename_value", "path": "/status", "from": "shipped", "to": "sent"}]
JSON
    step "side by side: user v1, 16 items in it, its clients"
    "$pathdb" --server "$url" ns set user --schema "$sbs/v1.json"
    local k
    for k in $(seq 1 16); do
        expect 201 PUT "/v1/items/app-1/user-$k" '{"name": "seed '"$k"'", "status": "shipped"}'
    done
    side_generate v1
    step "side by side: user v2 with migration steps, its clients"
    "$pathdb" --server "$url" ns set user --schema "$sbs/v2.json" --migrate "$sbs/steps.json"
    "$pathdb" --server "$url" ns versions user
    side_generate v2
    if $have_python; then
        grep -qF 'SCHEMA_VERSIONS: dict[str, int] = {"user": 1}' "$sbs/py/user_v1/__init__.py" \
            || fail "user_v1/__init__.py has no SCHEMA_VERSIONS of user 1"
        # The old client generated again now, with --schema-version, is the same code.
        "$pathdb" --server "$url" --schema-version user=1 codegen python --out "$sbs/py/again" \
            --generator "$venv/bin/python -m pathdb.codegen" >/dev/null
        diff -r -x pathdb-namespaces.json -x __pycache__ "$sbs/py/user_v1" "$sbs/py/again" \
            || fail "--schema-version user=1 generated other code than version 1 did"
    fi
    if $have_node; then
        mkdir -p "$ts/node_modules/@pathdb"
        ln -s "$root/clients/typescript" "$ts/node_modules/@pathdb/client"
        echo '{"type": "module", "private": true}' >"$ts/package.json"
        cp scripts/codegen-versions/side_by_side.ts "$ts/v1/main.ts"
        cp scripts/codegen-versions/side_by_side.ts "$ts/v2/main.ts"
        cat >"$ts/tsconfig.json" <<JSON
{
  "compilerOptions": {
    "target": "ES2022", "module": "NodeNext", "moduleResolution": "NodeNext",
    "lib": ["ES2022", "DOM"], "types": ["node"],
    "typeRoots": ["$root/clients/typescript/node_modules/@types"],
    "strict": true, "noUncheckedIndexedAccess": true, "exactOptionalPropertyTypes": true,
    "rootDir": ".", "outDir": "out"
  },
  "files": ["v1/main.ts", "v2/main.ts"]
}
JSON
        step "side by side: tsc --strict on the TypeScript clients"
        (cd "$ts" && "$root/clients/typescript/node_modules/.bin/tsc" -p tsconfig.json)
    fi

    step "side by side: the v1 and v2 clients at once for ${seconds}s"
    local pids=() names=() name v i status=0
    for v in v1 v2; do
        if $have_python; then
            "$venv/bin/python" scripts/codegen-versions/side_by_side.py "$sbs/py/user_$v" "$url" \
                "$seconds" "python $v" >"$sbs/python-$v.json" 2>"$sbs/python-$v.err" &
            pids+=($!)
            names+=("python-$v")
        fi
        if $have_node; then
            node "$ts/out/$v/main.js" "$ts/$v/gen/pathdb-namespaces.json" "$url" "$seconds" \
                "typescript $v" >"$sbs/typescript-$v.json" 2>"$sbs/typescript-$v.err" &
            pids+=($!)
            names+=("typescript-$v")
        fi
    done
    for i in "${!pids[@]}"; do
        if ! wait "${pids[$i]}"; then
            status=1
            echo "error: the ${names[$i]} client failed:" >&2
            cat "$sbs/${names[$i]}.err" >&2
        fi
    done
    for name in "${names[@]}"; do cat "$sbs/$name.json"; done | python3 -c '
import json, sys
rows = [json.loads(line) for line in sys.stdin if line.strip()]
print("%-14s %7s %9s %7s %8s  %s" % ("client", "version", "requests", "values", "misfits", "error answers"))
for r in rows:
    errors = dict(r["deliberate"], **{"UNEXPECTED " + k: n for k, n in r["unexpected"].items()})
    shown = ", ".join("%s: %d" % kv for kv in errors.items()) or "none"
    print("%-14s %7d %9d %7d %8d  %s" % (r["client"], r["version"], r["requests"],
          r["values checked"], sum(r["misfits"].values()), shown))
    print("%14s  ops: %s" % ("", ", ".join("%s %d" % kv for kv in r["ops"].items())))
    if r["misfits"]:
        print("%14s  MISFITS in the answers of: %s" % ("", ", ".join("%s %d" % kv for kv in r["misfits"].items())))
    print("%14s  HTTP statuses: %s" % ("", ", ".join("%s: %d" % kv for kv in r["statuses"].items())))
'
    [[ $status -eq 0 ]] || fail "the side-by-side run failed (above)"
    step "side by side: stopping the server"
    stop_pathdb_serve "$sbs"
}

if $have_python || $have_node; then
    sbs="$work/versions"
    side_by_side
fi
printf '\ncodegen: done in %ss\n' "$((SECONDS - started))"
