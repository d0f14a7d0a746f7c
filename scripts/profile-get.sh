#!/usr/bin/env bash
# Where the instructions of a get go (docs/benchmarks.md, "Gets against the ceiling"): runs a
# server under valgrind's callgrind, warms it with wrk for 3 s, counts only the next 10 s of
# gets (1 thread x 2 connections), and prints the instructions per request and the
# callgrind file to read with callgrind_annotate --inclusive=yes. Instruction counts do not move
# with the machine's noise, which request rates on two shared cores do.
#
# Usage: scripts/profile-get.sh pathdb [BIN]    # a `pathdb serve` over a database of bench items
#        scripts/profile-get.sh ceiling [BIN]   # crates/pathdb-server/examples/ceiling.rs
#   BIN defaults to target/release/pathdb or target/release/examples/ceiling.
# Needs valgrind and wrk (apt-get install valgrind wrk). Writes into target/profile-get/.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
what=${1:-}
out=$root/target/profile-get
mkdir -p "$out"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
url=http://127.0.0.1:$port/v1/items/bench-0/item-0
case $what in
  pathdb)
    bin=${2:-$root/target/release/pathdb}
    db=$out/db
    rm -rf "$db" "$db".*
    # The items first, at full speed (valgrind runs the server 50 times slower).
    "$bin" serve --db "$db" --addr "127.0.0.1:$port" --no-ui >"$out/preload.log" 2>&1 &
    preload=$!
    for _ in $(seq 1 100); do curl -sf -o /dev/null "http://127.0.0.1:$port/healthz" && break; sleep 0.1; done
    "$bin" bench http --url "http://127.0.0.1:$port" --duration 0.01 >/dev/null
    kill "$preload"; wait "$preload" 2>/dev/null || true
    command=("$bin" serve --db "$db" --addr "127.0.0.1:$port" --no-ui) ;;
  ceiling)
    bin=${2:-$root/target/release/examples/ceiling}
    command=("$bin" "127.0.0.1:$port") ;;
  *) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 2 ;;
esac
command -v valgrind >/dev/null && command -v wrk >/dev/null \
  || { echo "profile-get.sh: needs valgrind and wrk" >&2; exit 1; }

rm -f "$out/$what".callgrind*
valgrind --tool=callgrind --callgrind-out-file="$out/$what.callgrind" "${command[@]}" \
  >"$out/$what.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do curl -sf -o /dev/null "$url" && break; sleep 0.2; done
wrk -t1 -c2 -d3s "$url" >/dev/null
callgrind_control -z "$server" >/dev/null 2>&1
requests=$(wrk -t1 -c2 -d10s "$url" | awk '/requests in/ {print $1}')
callgrind_control -d "$server" >/dev/null 2>&1
sleep 1
dump=$(ls -t "$out/$what".callgrind.* | head -1)
instructions=$(awk '/^(summary|totals):/ {print $2; exit}' "$dump")
echo "$what: $requests gets, $((instructions / requests)) instructions per get ($dump)"
