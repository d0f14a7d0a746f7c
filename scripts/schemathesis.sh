#!/usr/bin/env bash
# Runs Schemathesis (property-based API testing, from PyPI) against a live `pathdb serve`: it
# reads /openapi.json, generates requests for every operation, and fails on any server error
# (5xx), any status the document does not list, and any response that breaks its schema or
# content type. Needs python3 (with venv) and PyPI; the venv is cached under the target dir.
#
#   bash scripts/schemathesis.sh
#
# Settings (environment): SCHEMATHESIS_EXAMPLES (per operation, default 100),
# SCHEMATHESIS_SEED (default fixed, for reproducible CI; "random" for a new one each run).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

. scripts/lib.sh

# Checked to install and run with Python 3.11 (pip index versions schemathesis).
version=4.32.5
examples="${SCHEMATHESIS_EXAMPLES:-100}"
seed="${SCHEMATHESIS_SEED:-20260521}"
target_dir="${CARGO_TARGET_DIR:-target}"
venv="$target_dir/schemathesis-$version"

python_venv "$venv" "schemathesis==$version"
"$venv/bin/schemathesis" --version

step "cargo build -p pathdb-cli --features dynamodb"
cargo build -p pathdb-cli --features dynamodb
pathdb="$target_dir/debug/pathdb"

make_work_dir schemathesis

step "starting pathdb serve on a free loopback port"
# Tokens on, so every /v1 request also goes through the auth middleware. The admin scope, so
# that changing namespace definitions is exercised too (a read-write token only gets 403 there,
# which crates/pathdb-server/tests/namespaces.rs checks).
token="schemathesis-$$"
PATHDB_TOKENS="$token=admin" RUST_LOG=warn start_pathdb_serve "$target_dir/debug/pathdb" "$work"
url="$server_url"

step "schemathesis run $url/openapi.json ($examples examples per operation)"
seed_args=()
[[ "$seed" == "random" ]] || seed_args=(--seed "$seed")
started=$SECONDS
status=0
log="$work/schemathesis.log"
# One worker: CPython 3.11.7's ast.parse is not thread-safe ("AST constructor recursion depth
# mismatch", fixed in 3.11.8), and Hypothesis parses lambdas' source while describing
# strategies, so two workers made a run fail now and then inside Schemathesis itself.
SCHEMATHESIS_HOOKS="$PWD/scripts/schemathesis_hooks.py" "$venv/bin/schemathesis" run \
    "$url/openapi.json" \
    --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance \
    --header "Authorization: Bearer $token" \
    --max-examples "$examples" \
    "${seed_args[@]}" \
    --workers 1 \
    --generation-database none \
    --request-timeout 30 \
    --no-color \
    | tee "$log" || status=$?
# "Test cases: N generated, N passed" on success; "N generated, N found N unique failures" not.
generated="$(sed -n 's/^ *\([0-9][0-9]*\) generated, .*/\1/p' "$log" | tail -n 1)"
passed="$(sed -n 's/.* generated, \([0-9][0-9]*\) passed.*/\1/p' "$log" | tail -n 1)"
failures="$(sed -n 's/.* found \([0-9][0-9]*\) unique failure.*/\1/p' "$log" | tail -n 1)"
echo "schemathesis: exit $status after $((SECONDS - started)) s, ${generated:-?} test cases"

step "stopping the server (SIGTERM, expecting exit 0)"
stop_pathdb_serve "$work"
if [[ $status -ne 0 ]]; then
    echo "error: schemathesis found problems (exit $status); see above" >&2
    echo "schemathesis: ${passed:-0} passed, ${failures:-1} failed"
    exit "$status"
fi
if [[ -z "$generated" || "$generated" -eq 0 ]]; then
    echo "error: schemathesis generated no test case" >&2
    exit 1
fi
step "scripts/schemathesis.sh: no server error, every response matched the document"
# The plain closing line: how many generated requests passed every check.
echo "schemathesis: ${passed:-$generated} passed, ${failures:-0} failed"
