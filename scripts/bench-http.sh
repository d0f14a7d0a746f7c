#!/usr/bin/env bash
# The HTTP server benchmark of docs/benchmarks.md ("HTTP server") in one run: PathDB (one or
# more builds), dynalite and the bare-axum ceiling (crates/pathdb-server/examples/ceiling.rs),
# each loaded in turn by `pathdb bench http` and by wrk, 32 connections, gets then puts.
#
# Usage: scripts/bench-http.sh [options]
#   --pathdb LABEL=BIN   a pathdb binary to serve (repeatable; default after=target/release/pathdb)
#   --client BIN         the pathdb binary whose `bench http` loads every server (default: the
#                        first --pathdb)
#   --ceiling BIN        the ceiling example (default target/release/examples/ceiling; "" skips it)
#   --duration S         seconds per measurement (default 15)
#   --rounds N           repeat the whole sequence N times (default 1)
#   --connections N      concurrent connections / workers (default 32)
#
# Each server gets a fresh database (or table) preloaded with 10,000 items by `pathdb bench
# http`; gets read item 0 with wrk (one item, as a plain `wrk URL` does) and a random item with
# `pathdb bench http`; puts overwrite a random item with both. Servers run side by side (idle
# while another is measured); dynalite starts through scripts/dynalite.sh on a free port.
# Prints one line per measurement: the 1-minute load average before it, requests/s, p50 and p99
# (ms), errors (non-2xx) and the server's CPU time per request (µs, from /proc/PID/stat).
# Needs wrk, node and npm (for dynalite), python3.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
pathdbs=()
client=
ceiling=$root/target/release/examples/ceiling
duration=15
rounds=1
connections=32
while [ $# -gt 0 ]; do
  case $1 in
    --pathdb) pathdbs+=("$2"); shift 2 ;;
    --client) client=$2; shift 2 ;;
    --ceiling) ceiling=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --connections) connections=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    *) echo "bench-http.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ ${#pathdbs[@]} -gt 0 ] || pathdbs=("after=$root/target/release/pathdb")
[ -n "$client" ] || client=${pathdbs[0]#*=}
command -v wrk >/dev/null || { echo "bench-http.sh: wrk is not installed (apt-get install wrk)" >&2; exit 1; }

tmp=$(mktemp -d /tmp/pathdb-bench-http.XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  [ -f "$tmp/dynalite.pid" ] && kill "$(cat "$tmp/dynalite.pid")" 2>/dev/null || true
  sleep 0.5
  rm -rf "$tmp"
}
trap cleanup EXIT

# Starts "$@" in the background, waits for its "listening on http://..." line; sets $url, $pid.
start() {
  local log=$1; shift
  "$@" >"$log" 2>"$log.err" &
  pid=$!
  pids+=("$pid")
  for _ in $(seq 1 300); do
    url=$(sed -n 's/^listening on \(http:[^ ]*\).*/\1/p' "$log" | head -n1)
    [ -n "$url" ] && return 0
    kill -0 "$pid" 2>/dev/null || { cat "$log.err" >&2; exit 1; }
    sleep 0.1
  done
  echo "bench-http.sh: $* did not start" >&2
  exit 1
}

targets=() # label kind url pid
for spec in "${pathdbs[@]}"; do
  label=${spec%%=*} bin=${spec#*=}
  start "$tmp/$label.log" "$bin" serve --db "$tmp/$label.db" --addr 127.0.0.1:0 --no-ui
  targets+=("$label pathdb $url $pid")
done
port=$("$root/scripts/dynalite.sh" --background --pid-file "$tmp/dynalite.pid" | sed -n 's/^PORT=//p')
targets+=("dynalite dynamodb http://127.0.0.1:$port $(cat "$tmp/dynalite.pid")")
if [ -n "$ceiling" ]; then
  start "$tmp/ceiling.log" "$ceiling" 127.0.0.1:0
  targets+=("ceiling static $url $pid")
fi

for t in "${targets[@]}"; do
  read -r label kind url pid <<<"$t"
  case $kind in
    pathdb) "$client" bench http --url "$url" --duration 0.01 >/dev/null ;;
    dynamodb) "$client" bench http --target dynamodb --url "$url" --duration 0.01 >/dev/null ;;
    *) continue ;;
  esac
  echo "preloaded $label ($url)" >&2
done

. "$root/scripts/lib.sh"
load() { cut -d' ' -f1 /proc/loadavg; }

# One measurement: prints "req/s p50 p99 errors" from the tool's output on stdin.
parse_bench() {
  python3 -c '
import json, sys
r = json.load(sys.stdin)
l = r["latency_ms"] or {"p50": float("nan"), "p99": float("nan")}
print(r["requests"], "%.0f" % r["requests_per_s"], "%.2f" % l["p50"], "%.2f" % l["p99"], r["errors"])'
}

printf '%-6s %-11s %-9s %6s %9s %8s %8s %6s %12s\n' round test target load 'req/s' 'p50 ms' 'p99 ms' errors 'cpu us/req'
for round in $(seq 1 "$rounds"); do
  for test in bench-get bench-put wrk-get wrk-put; do
    for t in "${targets[@]}"; do
      read -r label kind url pid <<<"$t"
      op=${test#*-}
      before_load=$(load)
      before=$(cpu_ticks "$pid")
      case $test:$kind in
        bench-*:dynamodb)
          out=$("$client" --json bench http --target dynamodb --url "$url" --no-preload \
            --concurrency "$connections" --duration "$duration" --mix "$op=100" | parse_bench) ;;
        bench-*)
          out=$("$client" --json bench http --url "$url" --no-preload \
            --concurrency "$connections" --duration "$duration" --mix "$op=100" | parse_bench) ;;
        wrk-get:dynamodb)
          out=$(WRK_OP=get wrk -t2 -c"$connections" -d"${duration}s" --latency \
            -s "$root/scripts/wrk/dynamodb.lua" "$url/" | parse_wrk) ;;
        wrk-put:dynamodb)
          out=$(WRK_OP=put wrk -t2 -c"$connections" -d"${duration}s" --latency \
            -s "$root/scripts/wrk/dynamodb.lua" "$url/" | parse_wrk) ;;
        wrk-get:*)
          out=$(wrk -t2 -c"$connections" -d"${duration}s" --latency \
            "$url/v1/items/bench-0/item-0" | parse_wrk) ;;
        wrk-put:*)
          out=$(wrk -t2 -c"$connections" -d"${duration}s" --latency \
            -s "$root/scripts/wrk/pathdb-put.lua" "$url" | parse_wrk) ;;
      esac
      after=$(cpu_ticks "$pid")
      read -r total rps p50 p99 errors <<<"$out"
      # Clock ticks are 10 ms: µs per request = ticks * 10000 / requests.
      cpu=$(python3 -c "print('%.0f' % (($after - $before) * 10000 / max($total, 1)))")
      printf '%-6s %-11s %-9s %6s %9s %8s %8s %6s %12s\n' "$round" "$test" "$label" "$before_load" \
        "$rps" "$p50" "$p99" "$errors" "$cpu"
    done
  done
done
