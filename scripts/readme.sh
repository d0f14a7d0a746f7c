#!/usr/bin/env bash
# Runs every console block of README.md and of the docs/ pages, in order, each page in a fresh
# temporary directory, with `pathdb` resolving to target/debug/pathdb, and compares the output
# wherever the docs show it (scripts/readme.py says how: `...`, skips, background servers).
#
#   bash scripts/readme.sh              # every page
#   bash scripts/readme.sh docs/tree.md # some pages
#
# Builds target/debug/pathdb first (a no-op after scripts/test.sh's cargo tests;
# READMESH_NO_BUILD=1 skips it). Needs python3, curl and jq (the README uses them); without one
# it skips, saying so, except with CI=true, where it fails.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

for tool in python3 curl jq; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        if [[ "${CI:-}" == "true" ]]; then
            echo "error: scripts/readme.sh needs $tool (the docs' commands use it)" >&2
            exit 1
        fi
        echo "skipped scripts/readme.sh: $tool is not installed (the docs' commands use it)"
        exit 0
    fi
done

target_dir="${CARGO_TARGET_DIR:-target}"
if [[ "${READMESH_NO_BUILD:-}" != 1 ]]; then
    printf '\n==> %s\n' "cargo build -p pathdb-cli --features dynamodb"
    cargo build -p pathdb-cli --features dynamodb
fi
exec python3 scripts/readme.py --pathdb "$target_dir/debug/pathdb" "$@"
