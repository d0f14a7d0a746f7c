#!/usr/bin/env bash
# Browser tests of the web console: headless Chromium (Debian's chromium and chromium-driver)
# driven by selenium (PyPI, in a venv under the target dir) against one `pathdb serve` with a
# read-write and a read-only token, seeded with the seed leaderboard, a small user tree and a
# node with 10,000 children. Writes the screenshots of docs/console.md to docs/ and prints the
# 10,000-children time to first render (recorded in docs/benchmarks.md).
#
#   bash scripts/console.sh
#
# Installs Chromium with apt-get when it is missing and we are root. Without it and without
# root it skips, saying so, except with CI=true, where it fails: CI must run the browser tests.
# Uses target/debug/pathdb as the test suite built it (builds it if missing; never a release).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

. scripts/lib.sh

# Checked with Python 3.11 and Debian 12's chromium 156 (pip index versions selenium).
selenium_version=4.27.1
target_dir="${CARGO_TARGET_DIR:-target}"
venv="$target_dir/console-selenium-$selenium_version"
started=$SECONDS

if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
    if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
        step "installing chromium and chromium-driver (apt-get)"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            chromium chromium-driver >/dev/null
    elif [[ "${CI:-}" == "true" ]]; then
        echo "error: chromium and chromium-driver are missing and apt-get needs root; CI must run the browser tests" >&2
        exit 1
    else
        echo "skipped scripts/console.sh: chromium and chromium-driver are not installed"
        echo "  (as root: apt-get install chromium chromium-driver)"
        exit 0
    fi
fi
chromium --version

python_venv "$venv" "selenium==$selenium_version"

pathdb="$target_dir/debug/pathdb"
if [[ ! -x "$pathdb" ]]; then
    step "cargo build -p pathdb-cli"
    cargo build -p pathdb-cli
fi

make_work_dir console

step "starting pathdb serve with a read-write and a read-only token"
rw="console-rw-$$"
ro="console-ro-$$"
PATHDB_TOKENS="$rw=read-write,$ro=read" RUST_LOG=warn start_pathdb_serve "$pathdb" "$work"

step "seeding (the leaderboard, a user tree, 10,000 children under /big-1)"
seed_started=$SECONDS
python3 scripts/console/seed.py "$server_url" "$rw"
echo "seeded in $((SECONDS - seed_started)) s"

step "browser tests (screenshots to docs/)"
status=0
"$venv/bin/python" scripts/console/console_test.py "$server_url" "$rw" "$ro" docs "$work/results.json" \
    || status=$?
if [[ $status -ne 0 ]]; then
    mkdir -p "$target_dir/console-failures"
    cp "$work"/failed-*.png "$target_dir/console-failures/" 2>/dev/null || true
    echo "error: browser tests failed; screenshots of the failures in $target_dir/console-failures" >&2
    exit "$status"
fi

step "stopping the server (SIGTERM, expecting exit 0)"
stop_pathdb_serve "$work"

python3 - "$work/results.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"10,000 children: first render {r['big_first_render_ms']:.0f} ms after navigation start "
      f"(100 a page; {r['big_first_render_1000_ms']:.0f} ms with 1,000 a page), "
      f"next page {r['big_next_page_ms']:.0f} ms after the click")
PY
echo "scripts/console.sh: ok in $((SECONDS - started)) s"
