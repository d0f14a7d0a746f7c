# Shared pieces of the scripts that run Python tools against a live `pathdb serve`
# (schemathesis.sh, openapi-clients.sh). Source it from the repository root:
#
#   . scripts/lib.sh
#
# Defines: step, python_venv, make_work_dir, start_pathdb_serve, stop_pathdb_serve,
# kill_pathdb_serve, parse_wrk (also for the benchmark scripts, bench-http.sh and bench-peers.sh),
# define_bench_aliases.

step() {
    printf '\n==> %s\n' "$*"
}

# python_venv DIR REQUIREMENT...: a venv at DIR with these pip requirements, made once and
# remade when the requirements change (DIR/.requirements records them). Needs python3 with
# venv, and PyPI.
python_venv() {
    local dir="$1"
    shift
    if [[ -f "$dir/.requirements" && "$(cat "$dir/.requirements")" == "$*" ]]; then
        return 0
    fi
    local python
    python="$(command -v python3 || true)"
    if [[ -z "$python" ]]; then
        echo "error: python3 is needed" >&2
        return 1
    fi
    step "installing $* into $dir"
    rm -rf "$dir"
    "$python" -m venv "$dir"
    "$dir/bin/python" -m pip install --quiet --disable-pip-version-check "$@"
    echo "$*" >"$dir/.requirements"
}

# start_pathdb_serve PATHDB WORKDIR [SERVE_ARG...]: starts `PATHDB serve` on a free loopback
# port with its database, stdout and stderr in WORKDIR (the caller's environment applies:
# PATHDB_TOKENS, RUST_LOG), and waits until /healthz answers. Sets server_pid and server_url.
start_pathdb_serve() {
    local pathdb="$1" work="$2"
    shift 2
    # Made before the server starts: the loop below may read it before the shell that starts
    # the server in the background has opened it.
    : >"$work/stdout"
    "$pathdb" --db "$work/pathdb.db" serve --addr 127.0.0.1:0 "$@" \
        >"$work/stdout" 2>"$work/stderr" &
    server_pid=$!
    server_url=""
    for _ in $(seq 1 300); do
        server_url="$(sed -n 's/^listening on //p' "$work/stdout")"
        [[ -n "$server_url" ]] && break
        if ! kill -0 "$server_pid" 2>/dev/null; then
            echo "error: pathdb serve exited before listening:" >&2
            cat "$work/stderr" >&2
            return 1
        fi
        sleep 0.1
    done
    if [[ -z "$server_url" ]]; then
        echo "error: pathdb serve printed no 'listening on' line in 30 s" >&2
        return 1
    fi
    python3 - "$server_url/healthz" <<'PY'
import json, sys, time, urllib.request
for _ in range(100):
    try:
        with urllib.request.urlopen(sys.argv[1], timeout=5) as r:
            if json.load(r) == {"status": "ok"}:
                sys.exit(0)
    except OSError:
        time.sleep(0.1)
sys.exit("healthz never answered")
PY
    echo "server: $server_url"
}

# stop_pathdb_serve WORKDIR: SIGTERM; fails unless the server was still running, exits 0 and
# did not panic (its stderr is printed then).
stop_pathdb_serve() {
    local work="$1"
    if ! kill -0 "$server_pid" 2>/dev/null; then
        echo "error: the server died during the run:" >&2
        cat "$work/stderr" >&2
        return 1
    fi
    kill -TERM "$server_pid"
    local status=0
    wait "$server_pid" || status=$?
    server_pid=""
    if grep -q "panicked" "$work/stderr"; then
        echo "error: the server panicked:" >&2
        cat "$work/stderr" >&2
        return 1
    fi
    if [[ $status -ne 0 ]]; then
        echo "error: the server exited with $status after SIGTERM:" >&2
        cat "$work/stderr" >&2
        return 1
    fi
}

# kill_pathdb_serve: for exit traps; stops a server that is still running.
kill_pathdb_serve() {
    if [[ -n "${server_pid:-}" ]] && kill -0 "$server_pid" 2>/dev/null; then
        kill -KILL "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    server_pid=""
}

# make_work_dir NAME: sets `work` to a new temporary directory, and on exit (or a signal) kills a
# server still running and removes the directory, keeping the script's exit status.
make_work_dir() {
    work="$(mktemp -d "${TMPDIR:-/tmp}/pathdb-$1.XXXXXX")"
    server_pid=""
    trap cleanup_work_dir EXIT INT TERM
}

cleanup_work_dir() {
    local status=$?
    kill_pathdb_serve
    rm -rf "$work"
    exit "$status"
}

# parse_wrk: "total req/s p50 p99 errors" (ms) from a `wrk --latency` report on stdin.
parse_wrk() {
  python3 -c '
import re, sys
text = sys.stdin.read()
def ms(v, unit):
    return float(v) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]
pct = {p: ms(v, u) for p, v, u in re.findall(r"^\s+(50|99)%\s+([\d.]+)(us|ms|s)\s*$", text, re.M)}
total = int(re.search(r"^\s+(\d+) requests in", text, re.M).group(1))
rps = float(re.search(r"^Requests/sec:\s+([\d.]+)", text, re.M).group(1))
bad = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
errors = int(bad.group(1)) if bad else 0
errors += sum(int(n) for n in re.findall(r"(?:connect|read|write|timeout) (\d+)", text))
print(total, "%.0f" % rps, "%.2f" % pct["50"], "%.2f" % pct["99"], errors)'
}

# A process's CPU time so far (user + system), in clock ticks (10 ms): the benchmarks' CPU
# per request is the difference over a run divided by its requests.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# define_bench_aliases URL: gives the `item` namespace of the server at URL the two alias
# templates the alias benchmarks measure (bench-aliases.sh, profile-put.sh ALIASES=1), so that
# every item `pathdb bench http` writes gets two aliases.
define_bench_aliases() {
    curl -sf -X PUT "$1/v1/namespaces/item" -H 'content-type: application/json' \
        -d '{"aliases": [{"path": "/by-1/bench-{@bench}/item-{@item}"}, {"path": "/top-1/n-{!n}/bench-{@bench}/item-{@item}"}]}' >/dev/null
}
