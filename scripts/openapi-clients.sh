#!/usr/bin/env bash
# Checks that PathDB's OpenAPI document makes usable generated clients: it prints the document
# (no server needed), generates a Python client with openapi-python-client and TypeScript types
# with openapi-typescript, type-checks a small program against each (`mypy --strict`,
# `tsc --strict --noEmit`), then runs the Python program against a live `pathdb serve`.
# Needs python3 (with venv) and PyPI, node and npm and the npm registry; the tools are cached
# under the target dir.
#
#   bash scripts/openapi-clients.sh
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

. scripts/lib.sh

# The versions this was tested with (Python 3.11, node 20).
openapi_python_client=0.29.1
mypy=2.4.1
openapi_typescript=7.13.0
typescript=5.9.3

target_dir="${CARGO_TARGET_DIR:-target}"
venv="$target_dir/openapi-clients-python"
node_dir="$target_dir/openapi-clients-node"
out="$target_dir/openapi-clients"
programs="$PWD/scripts/openapi-clients"

for tool in node npm; do
    if ! command -v "$tool" >/dev/null; then
        echo "error: $tool is needed to check the TypeScript client" >&2
        exit 1
    fi
done

python_venv "$venv" "openapi-python-client==$openapi_python_client" "mypy==$mypy"
node_packages="openapi-typescript@$openapi_typescript typescript@$typescript"
if [[ ! -f "$node_dir/.packages" || "$(cat "$node_dir/.packages")" != "$node_packages" ]]; then
    step "installing $node_packages into $node_dir"
    rm -rf "$node_dir"
    mkdir -p "$node_dir"
    echo '{"private": true}' >"$node_dir/package.json"
    # shellcheck disable=SC2086 # one word per package
    npm install --prefix "$node_dir" --no-audit --no-fund --silent $node_packages
    echo "$node_packages" >"$node_dir/.packages"
fi

rm -rf "$out"
mkdir -p "$out"

step "cargo build -p pathdb-cli, the OpenAPI document"
cargo build -p pathdb-cli --features dynamodb
cargo run -q -p pathdb-server --example openapi >"$out/openapi.json"

step "openapi-python-client $openapi_python_client: generate and mypy --strict"
# openapi-python-client has no JSON-lines support: it leaves out importItems, and says so.
"$venv/bin/openapi-python-client" generate --path "$out/openapi.json" --meta none \
    --config "$programs/python-client.yaml" \
    --output-path "$out/python/pathdb_client" --overwrite
cp "$programs/check.py" "$out/python/check.py"
# From the generated package's parent, so mypy follows the imports into it (and checks them).
mypy_bin="$(cd "$venv/bin" && pwd)/mypy"
(cd "$out/python" && "$mypy_bin" --strict --no-incremental check.py)

step "openapi-typescript $openapi_typescript: generate and tsc --strict --noEmit"
mkdir -p "$out/ts"
"$node_dir/node_modules/.bin/openapi-typescript" "$out/openapi.json" -o "$out/ts/pathdb.ts"
cp "$programs/check.ts" "$out/ts/check.ts"
"$node_dir/node_modules/.bin/tsc" --strict --noEmit --target es2022 --module nodenext \
    --moduleResolution nodenext "$out/ts/check.ts"

step "the Python program against pathdb serve"
make_work_dir openapi-clients
token="clients-$$"
PATHDB_TOKENS="$token=read-write" RUST_LOG=warn start_pathdb_serve "$target_dir/debug/pathdb" "$work"
PYTHONPATH="$out/python" "$venv/bin/python" "$out/python/check.py" "$server_url" "$token"
stop_pathdb_serve "$work"

step "scripts/openapi-clients.sh: both generated clients type-check, the Python one works"
