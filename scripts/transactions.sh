#!/usr/bin/env bash
# Interactive transactions through the Python client's `transaction` over HTTP, under 8
# concurrent clients (docs/transactions.md): transfers between 100 accounts of 10 groups (every
# snapshot sums to the total, none negative, committed transfers = feed puts / 2), write skew
# (two doctors never both off call) and phantoms (never more than 3 orders). On `pathdb serve`
# with a database file, then on DynamoDB (moto) when PATHDB_DYNAMODB_ENDPOINT is set (as
# scripts/test.sh sets it). The program is clients/python/examples/transactions_stress.py.
#
#   bash scripts/transactions.sh                       # CI's size: 5 s of transfers, 20 rounds
#   TRANSACTIONS_SECONDS=30 TRANSACTIONS_ROUNDS=1000 bash scripts/transactions.sh   # the issue's
#
# Uses the client venv that scripts/clients.sh made (target/clients-venv, the client installed)
# and $PATHDB_BIN (default target/debug/pathdb, built with the dynamodb feature by scripts/test.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. scripts/lib.sh
target_dir="${CARGO_TARGET_DIR:-target}"
[[ "$target_dir" = /* ]] || target_dir="$PWD/$target_dir"
pathdb="${PATHDB_BIN:-$target_dir/debug/pathdb}"
python="$target_dir/clients-venv/bin/python"
seconds="${TRANSACTIONS_SECONDS:-5}"
rounds="${TRANSACTIONS_ROUNDS:-20}"
started=$SECONDS

if [[ ! -x "$python" ]] || ! "$python" -c 'import pathdb' 2>/dev/null; then
    if [[ "${CI:-}" == "true" ]]; then
        echo "error: no client venv at $target_dir/clients-venv (run scripts/clients.sh first)" >&2
        exit 1
    fi
    echo "skipped scripts/transactions.sh: run scripts/clients.sh first (it makes the client venv)"
    exit 0
fi

make_work_dir transactions

stress() {
    "$python" clients/python/examples/transactions_stress.py --server "$server_url" \
        --clients 8 --seconds "$seconds" --rounds "$rounds" transfers write-skew phantoms
}

step "transactions on the embedded store ($seconds s of transfers, $rounds rounds)"
mkdir -p "$work/embedded"
start_pathdb_serve "$pathdb" "$work/embedded"
stress
stop_pathdb_serve "$work/embedded"

if [[ -n "${PATHDB_DYNAMODB_ENDPOINT:-}" ]]; then
    step "transactions on DynamoDB ($PATHDB_DYNAMODB_ENDPOINT)"
    mkdir -p "$work/dynamodb"
    table="transactions-$RANDOM$RANDOM"
    export AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-pathdb}" AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-pathdb}"
    export AWS_REGION="${AWS_REGION:-us-east-1}"
    "$pathdb" dynamodb create-table --table "$table" --endpoint "$PATHDB_DYNAMODB_ENDPOINT"
    start_pathdb_serve "$pathdb" "$work/dynamodb" --backend dynamodb --table "$table" \
        --endpoint "$PATHDB_DYNAMODB_ENDPOINT"
    stress
    stop_pathdb_serve "$work/dynamodb"
else
    echo "skipped the DynamoDB run: PATHDB_DYNAMODB_ENDPOINT is not set"
fi
echo "scripts/transactions.sh: ok in $((SECONDS - started)) s"
