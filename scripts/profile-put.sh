#!/usr/bin/env bash
# Where the CPU of a durable put goes (docs/benchmarks.md, "The CPU cost of a durable put"), as a
# new user measures it: a release `pathdb serve` over a fresh database of 10,000 bench items
# (100 groups), and wrk PUTs of about 100-byte values to random items among them
# (scripts/wrk/pathdb-put.lua; every put is durable: acknowledged after the journal's fdatasync).
#
#   scripts/profile-put.sh cpu [BIN]         # 30 s of wrk -t2 -c32: the server's user+system CPU
#                                            # (from /proc) per put answered, in all and by thread
#   scripts/profile-put.sh callgrind [BIN]   # under valgrind's callgrind: instructions per put,
#                                            # split by thread (HTTP workers, the commit thread)
#                                            # and, inside them, planning and redb
#   scripts/profile-put.sh flame [BIN]       # perf record of 30 s of wrk -t2 -c32, folded into
#                                            # target/profile-put/put.svg with inferno
#
# BIN defaults to target/release/pathdb. Needs wrk, and valgrind (callgrind) or perf and
# inferno-flamegraph (flame: `cargo install inferno`). Environment: DURATION (seconds of
# measured load, default 30; callgrind 10), CONNECTIONS (default 32; callgrind 2); NEW=1 for
# puts of new items instead (`pathdb bench http --no-preload --mix put=100 --keys 100000000`,
# the warm-up and the measured run from seeds of their own, as bench-aliases.sh puts them;
# cpu and callgrind); ALIASES=1 to give the `item` namespace bench-aliases.sh's two alias
# templates before the preload; SERVE_ARGS: more arguments for `pathdb serve`, the preload's
# and the measured one's (SERVE_ARGS="--http-threads 1"). Writes into target/profile-put/.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
what=${1:-}
bin=${2:-$root/target/release/pathdb}
out=$root/target/profile-put
case $what in
  cpu | callgrind | flame) ;;
  *) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 2 ;;
esac
needs=(wrk curl)
case $what in
  callgrind) needs+=(valgrind callgrind_annotate) ;;
  flame) needs+=(perf inferno-collapse-perf inferno-flamegraph) ;;
esac
for tool in "${needs[@]}"; do
  command -v "$tool" >/dev/null || { echo "profile-put.sh $what: needs $tool" >&2; exit 1; }
done
[[ -x $bin ]] || { echo "profile-put.sh: no $bin (cargo build --release -p pathdb-cli)" >&2; exit 1; }

mkdir -p "$out"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
url=http://127.0.0.1:$port
db=$out/db
rm -rf "$db" "$db".*
read -ra serve_args <<<"${SERVE_ARGS:-}"
serve=("$bin" serve --db "$db" --addr "127.0.0.1:$port" --no-ui "${serve_args[@]}")

wait_ready() {
  for _ in $(seq 1 600); do curl -sf -o /dev/null "$url/healthz" && return 0; sleep 0.2; done
  echo "profile-put.sh: the server did not answer" >&2
  return 1
}

# The items first, at full speed: `pathdb bench http` preloads /bench-<i % 100>/item-<i>.
"${serve[@]}" >"$out/preload.log" 2>&1 &
preload=$!
wait_ready
if [[ ${ALIASES:-0} == 1 ]]; then
  . "$root/scripts/lib.sh"
  define_bench_aliases "$url"
fi
"$bin" bench http --url "$url" --duration 0.01 >/dev/null
kill "$preload"
wait "$preload" 2>/dev/null || true

seed=0
put_load() { # seconds connections threads
  if [[ ${NEW:-0} == 1 ]]; then
    # Each run from a seed of its own: a run picking the last one's items would replace them.
    seed=$((seed + 1))
    "$bin" --json bench http --url "$url" --no-preload --mix put=100 --keys 100000000 \
      --seed "$seed" --concurrency "$2" --duration "$1" |
      python3 -c 'import json, sys
r = json.load(sys.stdin); l = r["latency_ms"]
print(r["requests"], "requests in %.1f s" % r["duration_s"])
print("    50%", "%.2fms" % l["p50"]); print("    99%", "%.2fms" % l["p99"])'
    return
  fi
  WRK_KEYS=10000 wrk -t"$3" -c"$2" -d"$1"s --latency -s "$root/scripts/wrk/pathdb-put.lua" "$url"
}

# utime + stime of a process, in clock ticks.
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# The same for each of its threads, summed by thread name ("tokio-rt-worker" for all the HTTP
# workers; names are cut at 15 characters, "pathdb-checkpoi"): one "name ticks" line each.
thread_ticks() {
  for task in /proc/"$1"/task/*; do
    printf '%s %s\n' "$(tr ' ' _ <"$task/comm")" "$(awk '{print $14 + $15}' "$task/stat")"
  done | awk '{t[$1] += $2} END {for (n in t) print n, t[n]}' | LC_ALL=C sort
}

case $what in
  cpu)
    duration=${DURATION:-30}
    "${serve[@]}" >"$out/serve.log" 2>&1 &
    server=$!
    trap 'kill "$server" 2>/dev/null || true' EXIT
    wait_ready
    put_load 3 "${CONNECTIONS:-32}" 2 >/dev/null
    before=$(ticks "$server")
    thread_ticks "$server" >"$out/threads-before.txt"
    put_load "$duration" "${CONNECTIONS:-32}" 2 >"$out/wrk.txt"
    after=$(ticks "$server")
    thread_ticks "$server" >"$out/threads-after.txt"
    puts=$(awk '/requests in/ {print $1}' "$out/wrk.txt")
    hz=$(getconf CLK_TCK)
    awk -v t=$((after - before)) -v n="$puts" -v hz="$hz" -v d="$duration" 'BEGIN {
      printf "cpu: %d puts in %d s (%.0f/s), %d ticks of server CPU: %.1f us per put\n",
        n, d, n / d, t, t / hz / n * 1e6 }'
    # By thread: the runs of one build on a small machine spread by a tenth or more, mostly on
    # the HTTP workers (the loopback and the scheduler); the store's threads move less.
    LC_ALL=C join -a2 "$out/threads-before.txt" "$out/threads-after.txt" |
      awk -v n="$puts" -v hz="$hz" 'NF == 3 {d = $3 - $2} NF == 2 {d = $2}
        d > 0 {printf "  %s %.1f us per put\n", $1, d / hz / n * 1e6}'
    grep -E '^ +(50|99)%' "$out/wrk.txt" | sed 's/^ */latency p/'
    ;;
  callgrind)
    rm -f "$out"/put.callgrind*
    # One file per thread: the split below is by thread, then by function inside each.
    valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$out/put.callgrind" \
      "${serve[@]}" >"$out/callgrind.log" 2>&1 &
    server=$!
    trap 'kill "$server" 2>/dev/null || true' EXIT
    wait_ready
    put_load 3 2 1 >/dev/null
    callgrind_control -z "$server" >/dev/null 2>&1
    puts=$(put_load "${DURATION:-10}" "${CONNECTIONS:-2}" 1 | awk '/requests in/ {print $1}')
    callgrind_control -d "$server" >/dev/null 2>&1
    sleep 1
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    trap - EXIT
    python3 "$root/scripts/profile-put-split.py" "$puts" "$out"/put.callgrind.*-*
    ;;
  flame)
    "${serve[@]}" >"$out/serve.log" 2>&1 &
    server=$!
    trap 'kill "$server" 2>/dev/null || true' EXIT
    wait_ready
    put_load 3 "${CONNECTIONS:-32}" 2 >/dev/null
    duration=${DURATION:-30}
    perf record -F 499 --call-graph dwarf,16384 -p "$server" -o "$out/perf.data" \
      -- sleep "$duration" >/dev/null 2>&1 &
    recorder=$!
    before=$(ticks "$server")
    put_load "$duration" "${CONNECTIONS:-32}" 2 >"$out/wrk.txt"
    after=$(ticks "$server")
    wait "$recorder" || true
    puts=$(awk '/requests in/ {print $1}' "$out/wrk.txt")
    us=$(awk -v t=$((after - before)) -v n="$puts" -v hz="$(getconf CLK_TCK)" \
      'BEGIN { printf "%.2f", t / hz / n * 1e6 }')
    perf script -i "$out/perf.data" 2>/dev/null | inferno-collapse-perf >"$out/put.folded"
    # Frames narrower than a pixel left out: the file stays small enough for the docs.
    inferno-flamegraph --minwidth 1 \
      --title "pathdb serve: durable puts, wrk -t2 -c${CONNECTIONS:-32}, ${duration} s" \
      <"$out/put.folded" >"$out/put.svg"
    echo "flame: $out/put.svg ($puts puts in $duration s, $us us of server CPU per put)"
    python3 "$root/scripts/profile-put-split.py" --folded "$us" "$out/put.folded"
    ;;
esac
