#!/usr/bin/env bash
# The official JSON Schema Test Suite for draft 2020-12 (vendored in scripts/json-schema-suite/)
# through PathDB's HTTP API (issue 34): every test group's schema becomes a namespace's
# definition, every test's data is PUT as an item of that namespace, and the answer must be 2xx
# where the suite says valid, 422 where it says invalid. Fails when fewer than 99% of the cases
# agree; prints every disagreement (docs/namespaces.md lists them with their reasons).
#
#   bash scripts/json-schema-suite.sh [--markdown FILE] [--min PERCENT] [--only SUBSTRING]
#
# Starts `pathdb serve` on a temporary database, with an admin token (so the run also goes
# through the auth middleware), from $PATHDB_BIN (or $PATHDB; default target/debug/pathdb, as
# scripts/test.sh's cargo tests built it; built here with `cargo build -p pathdb-cli --features
# dynamodb` when missing). Needs python3 (standard library only). Arguments go to
# scripts/json-schema-suite.py.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

. scripts/lib.sh

target_dir="${CARGO_TARGET_DIR:-target}"
[[ "$target_dir" = /* ]] || target_dir="$PWD/$target_dir"
pathdb="${PATHDB_BIN:-${PATHDB:-$target_dir/debug/pathdb}}"
if [[ -z "${PATHDB_BIN:-}${PATHDB:-}" && ! -x "$pathdb" ]]; then
    step "cargo build -p pathdb-cli --features dynamodb"
    cargo build -p pathdb-cli --features dynamodb
fi
if [[ ! -x "$pathdb" ]]; then
    echo "error: no pathdb binary at $pathdb" >&2
    exit 1
fi

make_work_dir json-schema-suite

step "starting pathdb serve on a free loopback port ($pathdb)"
token="json-schema-suite-$$"
PATHDB_TOKENS="$token=admin" RUST_LOG=warn start_pathdb_serve "$pathdb" "$work"

step "JSON Schema Test Suite, draft 2020-12, through $server_url"
status=0
PATHDB_TOKEN="$token" python3 scripts/json-schema-suite.py "$server_url" "$@" || status=$?

step "stopping the server (SIGTERM, expecting exit 0)"
stop_pathdb_serve "$work"
exit "$status"
