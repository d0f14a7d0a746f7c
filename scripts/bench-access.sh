#!/usr/bin/env bash
# What the access check costs (docs/benchmarks.md, "Access checks (issue 47)"): gets and durable
# puts of team 7's items on the embedded (file) backend, through three kinds of request:
#
# - admin:  a server with `PATHDB_TOKENS=admin-secret=admin`, requests with that configured
#           token (the built-in role `admin`: one rule, `/**`);
# - issued: the same server, requests with an issued token (`POST /v1/tokens`, `pdb_<id>_<secret>`)
#           of role `ten`, vars {"team": 7}: ten rules, nine `/org-N/doc-*` (read, write) that
#           never match team 7's paths, then `/team-{team}/**` (read, write) last, so every
#           check scans all ten;
# - open:   a second server without tokens (local-only mode: no authentication at all), as
#           before issue 47.
#
# Gets read /v1/items/team-7/doc-1; puts overwrite /v1/items/team-7/doc-<n>, n < 10,000, at the
# server's default durability (durable commits). Load: wrk, 2 threads, 32 connections, one run
# per kind and operation per round; the order of the three kinds turns every round, so the
# machine's noise falls on each. Per run: requests/s, p50 and p99 (ms), and the server's CPU time
# per request (µs: user + system from /proc/PID/stat, 10 ms ticks). Then, unless --no-callgrind,
# instructions per request under valgrind's callgrind (which the machine's load does not move):
# each server again over the same database, 3 s of warm-up, then 10 s counted (wrk -t1 -c2).
# Prints the runs, then medians and the overheads of `issued` against `admin` and `open`.
#
# - before: with --before BIN, a third server run by BIN, a build from before issue 47 (when
#           tokens had scopes), with `PATHDB_TOKENS=rw-secret=read-write` and requests with that
#           token: the check an authenticated server made before roles.
#
# Usage: scripts/bench-access.sh [--pathdb BIN] [--before BIN] [--duration S] [--rounds N]
#                                [--connections N] [--no-callgrind]
#   BIN defaults to $CARGO_TARGET_DIR/release/pathdb (else target/release/pathdb):
#   cargo build --release -p pathdb-cli first. Needs wrk and python3; valgrind for callgrind.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
pathdb=${CARGO_TARGET_DIR:-$root/target}/release/pathdb
duration=10
rounds=5
connections=32
callgrind=1
before_bin=
while [ $# -gt 0 ]; do
  case $1 in
    --pathdb) pathdb=$2; shift 2 ;;
    --before) before_bin=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --connections) connections=$2; shift 2 ;;
    --no-callgrind) callgrind=0; shift ;;
    -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    *) echo "bench-access.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -x "$pathdb" ] || { echo "bench-access.sh: no $pathdb (cargo build --release -p pathdb-cli)" >&2; exit 2; }
command -v wrk >/dev/null || { echo "bench-access.sh: needs wrk (apt-get install wrk)" >&2; exit 2; }
if [ "$callgrind" = 1 ] && ! command -v valgrind >/dev/null; then
  echo "bench-access.sh: no valgrind: skipping the instruction counts" >&2
  callgrind=0
fi

. "$root/scripts/lib.sh"
unset PATHDB_TOKENS
lua=$root/scripts/wrk/pathdb-access.lua
admin=admin-secret
work=$(mktemp -d "${TMPDIR:-/tmp}/pathdb-bench-access.XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# Starts a server on a fresh database in $work/NAME (lib.sh); sets url and pid.
serve() {
  mkdir -p "$work/$1"
  start_pathdb_serve "$pathdb" "$work/$1" --no-ui >/dev/null
  pids+=("$server_pid")
  url=$server_url pid=$server_pid
}
PATHDB_TOKENS=$admin=admin serve auth; auth_url=$url auth_pid=$pid
serve open; open_url=$url open_pid=$pid
rw=rw-secret
if [ -n "$before_bin" ]; then
  current=$pathdb pathdb=$before_bin
  PATHDB_TOKENS=$rw=read-write serve before; before_url=$url before_pid=$pid
  pathdb=$current
fi

# Role `ten` and a token of it for team 7.
rules=
for n in 1 2 3 4 5 6 7 8 9; do rules+="{\"path\": \"/org-$n/doc-*\", \"allow\": [\"read\", \"write\"]}, "; done
rules+='{"path": "/team-{team}/**", "allow": ["read", "write"]}'
curl -sf -X PUT "$auth_url/v1/roles/ten" -H "authorization: Bearer $admin" \
  -H 'content-type: application/json' -d "{\"rules\": [$rules]}" >/dev/null
issued=$(curl -sf -X POST "$auth_url/v1/tokens" -H "authorization: Bearer $admin" \
  -H 'content-type: application/json' \
  -d '{"role": "ten", "vars": {"team": 7}, "description": "bench-access.sh"}' |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["token"])')

# The items: 10 s of puts on each server (unmeasured), and doc-1 for the gets.
targets=("$auth_url $admin" "$open_url -")
[ -n "$before_bin" ] && targets+=("$before_url $rw")
for target in "${targets[@]}"; do
  read -r url token <<<"$target"
  [ "$token" = - ] && token=
  WRK_OP=put WRK_TOKEN=$token wrk -t2 -c"$connections" -d10s -s "$lua" "$url" >/dev/null
  curl -sf -X PUT "$url/v1/items/team-7/doc-1" ${token:+-H "authorization: Bearer $token"} \
    -H 'content-type: application/json' -d '{"n":1,"payload":"x"}' >/dev/null
done

# The rules are in force: the issued token reads team 7, not team 8; the open server asks nothing.
status() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
check() {
  [ "$1" = "$2" ] || { echo "bench-access.sh: $3 answered $1, not $2" >&2; exit 1; }
}
check "$(status -H "authorization: Bearer $issued" "$auth_url/v1/items/team-7/doc-1")" 200 'the issued token on /team-7/doc-1'
check "$(status -H "authorization: Bearer $issued" "$auth_url/v1/items/team-8/doc-1")" 403 'the issued token on /team-8/doc-1'
check "$(status -X PUT -H "authorization: Bearer $issued" -H 'content-type: application/json' \
  -d '1' "$auth_url/v1/items/org-1/other-1")" 403 'the issued token writing /org-1/other-1'
check "$(status "$auth_url/v1/items/team-7/doc-1")" 401 'the token server without a token'
check "$(status "$open_url/v1/items/team-7/doc-1")" 200 'the open server'

results=$work/results
: >"$results"
# One run: KIND OP ROUND; a row on stdout and "op kind rps p50 p99 cpu" in $results.
run() {
  local kind=$1 op=$2 round=$3 url token pid before after out total rps p50 p99 errors cpu
  case $kind in
    admin) url=$auth_url token=$admin pid=$auth_pid ;;
    issued) url=$auth_url token=$issued pid=$auth_pid ;;
    open) url=$open_url token= pid=$open_pid ;;
    before) url=$before_url token=$rw pid=$before_pid ;;
  esac
  before=$(cpu_ticks "$pid")
  out=$(WRK_OP=$op WRK_TOKEN=$token wrk -t2 -c"$connections" -d"${duration}s" --latency \
    -s "$lua" "$url" | parse_wrk)
  after=$(cpu_ticks "$pid")
  read -r total rps p50 p99 errors <<<"$out"
  [ "$errors" = 0 ] || { echo "bench-access.sh: $op $kind had $errors errors" >&2; exit 1; }
  # Clock ticks are 10 ms: µs per request = ticks * 10000 / requests.
  cpu=$(python3 -c "print('%.1f' % (($after - $before) * 10000 / max($total, 1)))")
  printf '%-6s %-4s %-7s %6s %9s %8s %8s %11s\n' "$round" "$op" "$kind" \
    "$(cut -d' ' -f1 /proc/loadavg)" "$rps" "$p50" "$p99" "$cpu"
  echo "$op $kind $rps $p50 $p99 $cpu $round" >>"$results"
}

printf '%-6s %-4s %-7s %6s %9s %8s %8s %11s\n' round op kind load 'req/s' 'p50 ms' 'p99 ms' 'cpu us/req'
kinds=(admin issued open)
[ -n "$before_bin" ] && kinds+=(before)
for round in $(seq 1 "$rounds"); do
  # Turn the order: admin issued open, issued open admin, open admin issued, ...
  k=$(((round - 1) % ${#kinds[@]}))
  order=("${kinds[@]:k}" "${kinds[@]:0:k}")
  for op in get put; do
    for kind in "${order[@]}"; do run "$kind" "$op" "$round"; done
  done
done

# Instructions per request under callgrind: each server again, over its database.
counts=$work/instructions
: >"$counts"
if [ "$callgrind" = 1 ]; then
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  pids=()
  servers=(auth open)
  [ -n "$before_bin" ] && servers+=(before)
  for server in "${servers[@]}"; do
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    url=http://127.0.0.1:$port
    out=$work/$server.callgrind
    if [ "$server" = auth ]; then
      env PATHDB_TOKENS=$admin=admin valgrind --tool=callgrind --callgrind-out-file="$out" \
        "$pathdb" --db "$work/$server/pathdb.db" serve --addr "127.0.0.1:$port" --no-ui \
        >"$work/$server.valgrind.log" 2>&1 &
    elif [ "$server" = before ]; then
      env PATHDB_TOKENS=$rw=read-write valgrind --tool=callgrind --callgrind-out-file="$out" \
        "$before_bin" --db "$work/$server/pathdb.db" serve --addr "127.0.0.1:$port" --no-ui \
        >"$work/$server.valgrind.log" 2>&1 &
    else
      valgrind --tool=callgrind --callgrind-out-file="$out" \
        "$pathdb" --db "$work/$server/pathdb.db" serve --addr "127.0.0.1:$port" --no-ui \
        >"$work/$server.valgrind.log" 2>&1 &
    fi
    vg=$!
    pids+=("$vg")
    for _ in $(seq 1 300); do curl -sf -o /dev/null "$url/healthz" && break; sleep 0.2; done
    case $server in auth) kinds_here=(admin issued) ;; before) kinds_here=(before) ;; *) kinds_here=(open) ;; esac
    for kind in "${kinds_here[@]}"; do
      case $kind in admin) token=$admin ;; issued) token=$issued ;; before) token=$rw ;; *) token= ;; esac
      for op in get put; do
        WRK_OP=$op WRK_TOKEN=$token wrk -t1 -c2 -d3s -s "$lua" "$url" >/dev/null
        callgrind_control -z "$vg" >/dev/null 2>&1
        requests=$(WRK_OP=$op WRK_TOKEN=$token wrk -t1 -c2 -d10s -s "$lua" "$url" |
          awk '/requests in/ {print $1}')
        callgrind_control -d "$vg" >/dev/null 2>&1
        sleep 1
        dump=$(ls -t "$out".* | head -1)
        instructions=$(awk '/^(summary|totals):/ {print $2; exit}' "$dump")
        printf 'callgrind %-4s %-7s %7s requests %12s instructions per request\n' "$op" "$kind" \
          "$requests" "$((instructions / requests))"
        echo "$op $kind $((instructions / requests))" >>"$counts"
      done
    done
    kill "$vg" 2>/dev/null || true
    wait "$vg" 2>/dev/null || true
    pids=()
  done
fi

python3 - "$results" "$counts" <<'PY'
import statistics, sys
runs = [l.split() for l in open(sys.argv[1]) if l.strip()]
counts = {(o, k): int(n) for o, k, n in (l.split() for l in open(sys.argv[2]) if l.strip())}
med = statistics.median
print("\nmedians over the rounds (req/s, p50 ms, p99 ms, server CPU us per request), instructions")
print("%-4s %-7s %9s %7s %7s %7s %13s" % ("op", "kind", "req/s", "p50", "p99", "cpu", "instr/req"))
rows = {}
for op in ("get", "put"):
    for kind in ("admin", "issued", "open", "before"):
        rs = [r for r in runs if r[0] == op and r[1] == kind]
        if not rs:
            continue
        m = [med(float(r[i]) for r in rs) for i in (2, 3, 4, 5)]
        rows[op, kind] = (m, {r[6]: r for r in rs})
        print("%-4s %-7s %9.0f %7.2f %7.2f %7.1f %13s" % (op, kind, *m, counts.get((op, kind), "-")))
print("\noverhead of the issued token of 10 rules (positive: costs more)")
for op in ("get", "put"):
    for base in ("admin", "open", "before"):
        if (op, base) not in rows:
            continue
        a, b = rows[op, base], rows[op, "issued"]
        # Paired by round: time per request (1 / req/s) and CPU per request, issued over base.
        t = med(float(a[1][r][2]) / float(b[1][r][2]) for r in b[1]) - 1
        c = med(float(b[1][r][5]) / float(a[1][r][5]) for r in b[1]) - 1
        i = ("%+.1f%%" % (100 * (counts[op, "issued"] / counts[op, base] - 1))
             if (op, base) in counts else "-")
        print("  %s vs %-5s  time per request %+.1f%%  cpu per request %+.1f%%  instructions %s"
              % (op, base, 100 * t, 100 * c, i))
PY
