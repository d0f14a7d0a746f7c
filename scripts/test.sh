#!/usr/bin/env bash
# Runs PathDB's whole test suite: every crate's unit, integration and bench/example targets, the
# doctests, and a stable build of the fuzz targets. Works from any directory; needs only a Rust
# toolchain, crates.io and (for the fuzz targets, which build libFuzzer) a C++ compiler.
#
#   bash scripts/test.sh
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

step() {
    printf '\n==> %s\n' "$*"
}

# `--all-targets` covers lib, bins, tests, benches and examples but not doctests.
step "cargo test --workspace --all-targets"
cargo test --workspace --all-targets

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

step "scripts/test.sh: all passed"
