#!/usr/bin/env bash
# A soak run of `pathdb serve` (not part of the test suite): builds the release binary, then runs
# scripts/soak.py, which keeps a server busy with mixed load and writes soak.csv and soak.png
# (memory, open files and p99 every 30 s). docs/reliability.md records a run.
#
#   bash scripts/soak.sh [--minutes 30] [--out target/soak] [--cache-size MB] ...
#
# Needs a Rust toolchain, python3 with venv, and PyPI (matplotlib, for the PNG).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
. scripts/lib.sh

target_dir="${CARGO_TARGET_DIR:-target}"
step "cargo build --release -p pathdb-cli"
cargo build --release -p pathdb-cli
venv="$target_dir/soak-venv"
python_venv "$venv" "matplotlib==3.10.*"
step "soak"
exec "$venv/bin/python" scripts/soak.py --pathdb "$target_dir/release/pathdb" "$@"
