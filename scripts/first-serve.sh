#!/usr/bin/env bash
# Times the README's first command from an empty target directory: from `cargo run --release -p
# pathdb-cli -- serve` to the first 200 of GET /healthz (docs/benchmarks.md, "Time to first
# serve"). Run `cargo fetch` first so that downloads are not counted. Not part of the test suite:
# it is a build of minutes.
#
#   bash scripts/first-serve.sh [TARGET_DIR] [-- EXTRA CARGO ARGS, e.g. --features dynamodb]
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
target=${1:-/tmp/pathdb-first-serve}
shift || true
[[ "${1:-}" == "--" ]] && shift
work=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
rm -rf "$target"
start=$(date +%s.%N)
cargo run --release -p pathdb-cli --timings --target-dir "$target" "$@" -- \
    serve --db "$work/first.db" --addr "127.0.0.1:$port" >"$work/serve.log" 2>&1 &
pid=$!
trap 'kill -INT $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -rf "$work"' EXIT
until curl -sf "http://127.0.0.1:$port/healthz" >/dev/null 2>&1; do
    if ! kill -0 "$pid" 2>/dev/null; then
        echo "error: cargo run stopped before /healthz answered:" >&2
        tail -20 "$work/serve.log" >&2
        exit 1
    fi
    sleep 0.5
done
echo "/healthz answered after $(echo "$(date +%s.%N) - $start" | bc) s"
grep -E "Finished" "$work/serve.log" || true
echo "unit timings: $target/cargo-timings/cargo-timing.html"
