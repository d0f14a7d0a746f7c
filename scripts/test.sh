#!/usr/bin/env bash
# Runs PathDB's whole test suite: every crate's unit, integration and bench/example targets (the
# DynamoDB backend's on moto), the doctests, a stable build of the fuzz targets, Schemathesis
# against /openapi.json, the clients generated from that document, the Python and TypeScript
# clients' suites, and the web console's browser tests. Works from any directory; needs a Rust
# toolchain and crates.io, python3 and PyPI, node/npm and the npm registry, a C++ compiler (for
# the fuzz targets, which build libFuzzer), and Debian's chromium (installed when run as root).
# Outside CI a missing tool skips its part, saying so; with CI=true it fails.
#
#   bash scripts/test.sh
#
# Every part after the cargo tests reuses their build (target/debug/pathdb), starting with
# scripts/readme.sh, which runs the docs' console blocks.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

step() {
    printf '\n==> %s\n' "$*"
}

# The DynamoDB backend's tests run against local DynamoDB-compatible servers that
# scripts/dynamodb-local.sh installs (moto from PyPI, dynalite from npm) and starts on free
# loopback ports. Without python3 or node they are skipped, except in CI, and so are the suites
# that need them (Schemathesis, the clients).
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
    # moto serves S3 on the same port: the archive's S3 target is tested against it.
    export PATHDB_S3_ENDPOINT="$PATHDB_DYNAMODB_ENDPOINT"
    echo "moto on $PATHDB_DYNAMODB_ENDPOINT"
    # dynalite lacks TransactWriteItems: `serve --backend dynamodb` must refuse it at start.
    step "start dynalite (an endpoint PathDB must refuse)"
    dynalite_port=$(bash scripts/dynamodb-local.sh start dynalite | sed -n 's/^PORT=//p')
    export PATHDB_DYNALITE_ENDPOINT="http://127.0.0.1:$dynalite_port"
    echo "dynalite on $PATHDB_DYNALITE_ENDPOINT"
else
    step "SKIPPED DynamoDB servers: python3, node or npm missing (the DynamoDB tests will skip)"
fi

# `--all-targets` covers lib, bins, tests, benches and examples but not doctests. The CLI's
# `dynamodb` feature is off by default (a first `pathdb serve` need not wait for the AWS SDK);
# the tests turn it on, so that `serve --backend dynamodb` is tested, and every later part uses
# the same build (`cargo build -p pathdb-cli --features dynamodb` is then a no-op).
step "cargo test --workspace --all-targets --features pathdb-cli/dynamodb"
cargo test --workspace --all-targets --features pathdb-cli/dynamodb

# dynalite is not a backend PathDB runs on: it has no TransactWriteItems, and every PathDB write
# is one (the item and its change log entry commit together; docs/changes.md). The tests only
# check that `serve` refuses it at start (crates/pathdb-cli/tests/dynamodb_start.rs); it remains
# the peer of `pathdb bench http`.

step "cargo test --workspace --doc --features pathdb-cli/dynamodb"
cargo test --workspace --doc --features pathdb-cli/dynamodb

# The docs as a reader runs them: every console block of README.md and docs/*.md, in order, on
# a fresh directory, output compared where the docs show it (target/debug/pathdb, built above).
step "bash scripts/readme.sh (the docs' console blocks)"
bash scripts/readme.sh

# The official JSON Schema Test Suite (draft 2020-12, vendored in scripts/json-schema-suite/)
# through the namespace API: at least 99% of its cases agree (docs/namespaces.md).
step "bash scripts/json-schema-suite.sh"
bash scripts/json-schema-suite.sh

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

# The HTTP API as outsiders see it: Schemathesis (PyPI) fuzzes a running `pathdb serve` against
# its own /openapi.json (no 5xx, no status or response the document does not describe); clients
# generated from that document (openapi-python-client, openapi-typescript) type-check a small
# program each, and the Python one runs against a live server.
# The Python and TypeScript clients follow: type checks, then their tests against `pathdb serve`,
# then the Python client's transactions under 8 concurrent clients (scripts/transactions.sh).
# All three need python3, node and npm (checked above: CI fails without them).
if $dynamo_available; then
    step "bash scripts/schemathesis.sh"
    bash scripts/schemathesis.sh
    step "bash scripts/openapi-clients.sh"
    bash scripts/openapi-clients.sh
    step "bash scripts/clients.sh"
    bash scripts/clients.sh
    # Typed clients generated from namespace definitions: tsc and mypy --strict accept a
    # program that uses them and refuse one with a wrong member type (docs/namespaces.md).
    step "bash scripts/codegen.sh"
    bash scripts/codegen.sh
    # Interactive transactions through the Python client, 8 clients, on a file and on moto.
    step "bash scripts/transactions.sh"
    bash scripts/transactions.sh
else
    step "SKIPPED Schemathesis, the generated clients and the clients' suites: python3, node or npm missing"
fi

# The web console in headless Chromium (installs chromium with apt-get as root; skips, saying so,
# outside CI without it), on the embedded and the DynamoDB (moto) backend.
# console.sh starts its own moto (one pid file per kind): stop ours so none is left behind.
stop_servers
step "bash scripts/console.sh (browser tests of the web console)"
bash scripts/console.sh

# The default build (no `dynamodb` feature), last since it replaces target/debug/pathdb: it
# answers the DynamoDB commands with how to build them in, and its help and unit tests pass.
step "cargo test -p pathdb-cli (the default build, without the dynamodb feature)"
cargo test -p pathdb-cli --bins --test tests -- a_build_without_dynamodb help::

step "scripts/test.sh: all passed"
