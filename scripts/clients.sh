#!/usr/bin/env bash
# Tests the Python (clients/python) and TypeScript (clients/typescript) clients. Each test suite
# starts its own `pathdb serve` on a free loopback port, from the binary at $PATHDB_BIN (default:
# target/debug/pathdb, built here with `cargo build -p pathdb-cli --features dynamodb` when PATHDB_BIN is unset, a
# no-op after `cargo test --workspace`).
#
#   bash scripts/clients.sh
#
# Python: a venv under the target dir (reused) with the pinned clients/python/requirements-test.txt;
# builds the client's wheel and installs it, then mypy --strict (the package for Python 3.9, the
# tests for the running Python) and pytest. TypeScript: npm ci, tsc --strict, node --test.
# Outside CI, a missing python3 or node (20+) skips that client with a message; with CI=true it
# fails.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$PWD"
target_dir="${CARGO_TARGET_DIR:-target}"
[[ "$target_dir" = /* ]] || target_dir="$root/$target_dir"
started=$SECONDS

step() {
    printf '\n==> %s\n' "$*"
}

missing() {
    if [[ "${CI:-}" == "true" ]]; then
        echo "error: $1" >&2
        exit 1
    fi
    echo "skipping: $1" >&2
}

if [[ -z "${PATHDB_BIN:-}" ]]; then
    step "cargo build -p pathdb-cli --features dynamodb"
    cargo build -p pathdb-cli --features dynamodb
    export PATHDB_BIN="$target_dir/debug/pathdb"
fi
if [[ ! -x "$PATHDB_BIN" ]]; then
    echo "error: no pathdb binary at $PATHDB_BIN" >&2
    exit 1
fi

python_client() {
    local python venv="$target_dir/clients-venv" requirements="clients/python/requirements-test.txt"
    python="$(command -v python3 || true)"
    if [[ -z "$python" ]] || ! "$python" -c 'import sys, venv; sys.exit(sys.version_info < (3, 9))' 2>/dev/null; then
        missing "the Python client needs python3 (3.9 or newer, with venv)"
        return 0
    fi
    step "python client: venv $venv"
    # Recreated when the pins change; otherwise reused as is.
    if ! cmp -s "$requirements" "$venv/requirements-test.txt" 2>/dev/null; then
        rm -rf "$venv"
        "$python" -m venv "$venv"
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
        cp "$requirements" "$venv/requirements-test.txt"
    fi
    "$venv/bin/python" --version

    step "python client: build the wheel and install it"
    local wheels="$target_dir/clients-wheels"
    rm -rf "$wheels" clients/python/build
    "$venv/bin/python" -m pip wheel --quiet --disable-pip-version-check --no-deps \
        --no-build-isolation --wheel-dir "$wheels" ./clients/python
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps \
        --force-reinstall "$wheels"/pathdb-*.whl
    rm -rf clients/python/build clients/python/src/pathdb.egg-info
    ls "$wheels"

    export MYPY_CACHE_DIR="$target_dir/clients-mypy-cache"
    step "python client: mypy --strict"
    (cd clients/python && "$venv/bin/mypy" --strict && "$venv/bin/mypy" --strict \
        --python-version "$("$venv/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')" tests)

    step "python client: pytest"
    (cd clients/python && "$venv/bin/python" -m pytest -q -p no:cacheprovider tests)
}

typescript_client() {
    local node npm
    node="$(command -v node || true)"
    npm="$(command -v npm || true)"
    if [[ -z "$node" || -z "$npm" ]] || ! node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)'; then
        missing "the TypeScript client needs node 20+ and npm"
        return 0
    fi
    step "typescript client: npm ci (node $(node --version))"
    (cd clients/typescript && npm ci --no-audit --no-fund --loglevel=error)

    step "typescript client: tsc --strict (and the library alone without Node's types, as browsers see it)"
    (cd clients/typescript && rm -rf dist && ./node_modules/.bin/tsc -p tsconfig.json --strict \
        && ./node_modules/.bin/tsc -p tsconfig.browser.json --strict)

    step "typescript client: node --test"
    local log status=0
    log="$(mktemp "${TMPDIR:-/tmp}/pathdb-node-test.XXXXXX")"
    (cd clients/typescript && node --test --test-reporter=tap dist/test/*.test.js) >"$log" 2>&1 || status=$?
    if [[ $status -ne 0 ]]; then
        cat "$log"
    fi
    grep -E '^# (tests|suites|pass|fail|cancelled|skipped|todo|duration_ms) ' "$log" || true
    rm -f "$log"
    return "$status"
}

python_client
typescript_client
printf '\nclients: done in %ss\n' "$((SECONDS - started))"
