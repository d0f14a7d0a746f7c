#!/usr/bin/env bash
# Runs PathDB's whole test suite: every crate's unit, integration and bench/example targets, the
# doctests, a stable build of the fuzz targets, and the web console's browser tests. Works from
# any directory; needs only a Rust toolchain, crates.io, (for the fuzz targets, which build
# libFuzzer) a C++ compiler, and (for the browser tests) Debian's chromium, which it installs
# when run as root.
#
#   bash scripts/test.sh
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

step() {
    printf '\n==> %s\n' "$*"
}

# The DynamoDB backend's tests run against local DynamoDB-compatible servers that
# scripts/dynamodb-local.sh installs (moto from PyPI, dynalite from npm) and starts on free
# loopback ports. Without python3 or node they are skipped, except in CI.
dynamo_available=true
for tool in python3 node npm; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        if [[ "${CI:-}" == "true" ]]; then
            echo "error: the DynamoDB tests need $tool" >&2
            exit 1
        fi
        dynamo_available=false
    fi
done
stop_servers() {
    bash scripts/dynamodb-local.sh stop moto >/dev/null 2>&1 || true
    bash scripts/dynamodb-local.sh stop dynalite >/dev/null 2>&1 || true
}
trap stop_servers EXIT
if $dynamo_available; then
    step "start moto (DynamoDB stand-in with transactions)"
    port=$(bash scripts/dynamodb-local.sh start moto | sed -n 's/^PORT=//p')
    export PATHDB_DYNAMODB_ENDPOINT="http://127.0.0.1:$port"
    export PATHDB_DYNAMODB_FLAVOR=moto
    echo "moto on $PATHDB_DYNAMODB_ENDPOINT"
else
    step "SKIPPED DynamoDB servers: python3, node or npm missing (the DynamoDB tests will skip)"
fi

# `--all-targets` covers lib, bins, tests, benches and examples but not doctests.
step "cargo test --workspace --all-targets"
cargo test --workspace --all-targets

# dynalite is not a test target any more: it has no TransactWriteItems, and every PathDB write
# is one (the item and its change log entry commit together; docs/changes.md). It remains the
# peer of `pathdb bench http`.

step "cargo test --workspace --doc"
cargo test --workspace --doc

if [[ -f fuzz/Cargo.toml ]]; then
    # Stable only checks that the targets compile; fuzzing needs nightly (see fuzz/README.md).
    if [[ -z "${CXX:-}" ]] && ! command -v c++ >/dev/null 2>&1; then
        if [[ "${CI:-}" == "true" ]]; then
            echo "error: building fuzz/ needs a C++ compiler (libfuzzer-sys builds libFuzzer); none found" >&2
            exit 1
        fi
        step "SKIPPED fuzz targets: no C++ compiler (install g++ or set CXX)"
    else
        step "cargo build --manifest-path fuzz/Cargo.toml (fuzz targets, stable: build only)"
        cargo build --manifest-path fuzz/Cargo.toml
    fi
fi

# The web console in headless Chromium (installs chromium with apt-get as root; skips, saying so,
# outside CI without it). .ci/run sets PATHDB_TEST_CONSOLE=0 and runs it as a step of its own.
if [[ "${PATHDB_TEST_CONSOLE:-1}" != 0 ]]; then
    # console.sh starts its own moto (one pid file per kind): stop ours so none is left behind.
    stop_servers
    step "bash scripts/console.sh (browser tests of the web console)"
    bash scripts/console.sh
fi

step "scripts/test.sh: all passed"
