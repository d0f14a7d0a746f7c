#!/usr/bin/env bash
# Browser tests of the web console: headless Chromium (Debian's chromium and chromium-driver)
# driven by selenium (PyPI, in a venv under the target dir) against one `pathdb serve` with a
# read-write, a read-only and an admin token (and `--archive` on the embedded backend), seeded
# with the seed leaderboard, a small user tree and a node with 10,000 children. Prints the
# 10,000-children time to first render (recorded in docs/benchmarks.md). The screenshots go to a
# temporary directory, so a test run leaves the checkout as it was; `--docs` writes them to docs/
# instead, for docs/console.md.
#
#   bash scripts/console.sh            # the tests
#   bash scripts/console.sh --docs     # the tests, and new screenshots in docs/
#
# Installs Chromium with apt-get when it is missing and we are root. Without it and without
# root it skips, saying so, except with CI=true, where it fails: CI must run the browser tests.
# Uses target/debug/pathdb as the test suite built it (builds it if missing; never a release), or
# the binary at $PATHDB_BIN when set (then nothing is built: its embedded console is tested).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

shots_to_docs=false
case "${1:-}" in
    --docs) shots_to_docs=true ;;
    "") ;;
    *) echo "usage: bash scripts/console.sh [--docs]" >&2; exit 2 ;;
esac

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

if [[ -n "${PATHDB_BIN:-}" ]]; then
    pathdb="$PATHDB_BIN"
    if [[ ! -x "$pathdb" ]]; then
        echo "error: no pathdb binary at $pathdb" >&2
        exit 1
    fi
else
    pathdb="$target_dir/debug/pathdb"
    # Always: a binary left from before an edit of the console (ui/ is compiled in) would test
    # the old console. A no-op after `cargo test --workspace`.
    step "cargo build -p pathdb-cli --features dynamodb"
    cargo build -p pathdb-cli --features dynamodb
fi

make_work_dir console
# The script's status survives the moto stop: cleanup_work_dir exits with `$?`. Without `set +e`
# a failing status (the `(exit ...)`) would end the trap before cleanup_work_dir, leaving the
# server running.
trap 'status=$?; set +e; bash scripts/dynamodb-local.sh stop moto >/dev/null 2>&1; (exit "$status"); cleanup_work_dir' EXIT INT TERM

# run_suite NAME SHOTS N_CHILDREN [SERVE_ARG...]: one server with a read-write, a read-only and
# an admin token, seeded with N_CHILDREN under /big-1, then every browser test; screenshots to SHOTS.
run_suite() {
    local name="$1" shots="$2" n_children="$3"
    shift 3
    local dir="$work/$name"
    mkdir -p "$dir" "$shots"
    step "$name: starting pathdb serve with a read-write, a read-only and an admin token"
    local rw="console-rw-$$" ro="console-ro-$$" admin="console-admin-$$"
    PATHDB_TOKENS="$rw=read-write,$ro=read,$admin=admin" RUST_LOG=warn start_pathdb_serve "$pathdb" "$dir" "$@"

    step "$name: seeding (the leaderboard, a user tree, $n_children children under /big-1)"
    local seed_started=$SECONDS
    python3 scripts/console/seed.py "$server_url" "$rw" "$n_children"
    echo "seeded in $((SECONDS - seed_started)) s"

    step "$name: browser tests (screenshots to $shots)"
    local status=0
    "$venv/bin/python" scripts/console/console_test.py "$server_url" "$rw" "$ro" "$shots" \
        "$dir/results.json" "$n_children" "$admin" || status=$?
    if [[ $status -ne 0 ]]; then
        mkdir -p "$target_dir/console-failures"
        cp "$dir"/failed-*.png "$target_dir/console-failures/" 2>/dev/null || true
        echo "error: $name: browser tests failed; screenshots of the failures in $target_dir/console-failures" >&2
        exit "$status"
    fi

    step "$name: stopping the server (SIGTERM, expecting exit 0)"
    stop_pathdb_serve "$dir"
    python3 - "$dir/results.json" "$name" "$n_children" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
if "big_first_render_ms" not in r:  # CONSOLE_ONLY left the 10,000-children test out
    print(f"{sys.argv[2]}: {r['tests']} tests (CONSOLE_ONLY), no timings")
    sys.exit(0)
print(f"{sys.argv[2]}: {sys.argv[3]} children: first render {r['big_first_render_ms']:.0f} ms after navigation "
      f"start (100 a page; {r['big_first_render_1000_ms']:.0f} ms with 1,000 a page), "
      f"next page {r['big_next_page_ms']:.0f} ms after the click; layout shift "
      f"{r['layout_shift_load']} on load, {r['layout_shift_navigation']} on a navigation")
PY
}

# The embedded backend takes the screenshots of docs/console.md (into docs/ with --docs). It
# keeps a continuous archive, which the Backups page shows (DynamoDB has none: the page says so).
if $shots_to_docs; then
    run_suite embedded docs 10000 --archive "$work/embedded-archive"
else
    run_suite embedded "$work/embedded/shots" 10000 --archive "$work/embedded-archive"
fi

# The same tests on the DynamoDB backend (moto, as scripts/test.sh uses): the console only speaks
# /v1, so it must behave the same. Needs PyPI for moto; CONSOLE_DYNAMODB=0 leaves it out. moto
# takes seconds per 100-item transaction, so /big-1 has 300 children here (enough for three
# pages); the 10,000-children timing is the embedded run's.
if [[ "${CONSOLE_DYNAMODB:-1}" != 0 ]]; then
    step "dynamodb: starting moto and creating a table"
    port=$(bash scripts/dynamodb-local.sh start moto | sed -n 's/^PORT=//p')
    endpoint="http://127.0.0.1:$port"
    export AWS_ACCESS_KEY_ID=pathdb-console AWS_SECRET_ACCESS_KEY=pathdb-console AWS_REGION=us-east-1
    "$pathdb" dynamodb create-table --table console --endpoint "$endpoint"
    run_suite dynamodb "$work/dynamodb/shots" "${CONSOLE_DYNAMODB_CHILDREN:-300}" --backend dynamodb --table console --endpoint "$endpoint"
    bash scripts/dynamodb-local.sh stop moto >/dev/null 2>&1 || true
fi
echo "scripts/console.sh: ok in $((SECONDS - started)) s"
