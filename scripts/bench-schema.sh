#!/usr/bin/env bash
# What a namespace schema costs a durable put (docs/benchmarks.md, "Puts into a namespace with
# a schema"): two `pathdb serve` (default settings: durable commits) on fresh databases, one
# whose `item` namespace has a 10-member object schema and one without, loaded in turn by
# `pathdb bench http` with puts only of the same 10-member values, round after round so that
# the machine's noise falls on both (and each goes first every other round). Prints puts/s, p50, p99 and the server's CPU per put (µs,
# from /proc/PID/stat) per run, and the schema run's puts/s as a share of the other's.
#
# Usage: scripts/bench-schema.sh [--pathdb BIN] [--duration S] [--rounds N] [--connections N]
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
pathdb=$root/target/release/pathdb
duration=15
rounds=3
connections=32
while [ $# -gt 0 ]; do
  case $1 in
    --pathdb) pathdb=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --connections) connections=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    *) echo "bench-schema.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -x "$pathdb" ] || { echo "bench-schema.sh: no $pathdb (cargo build --release -p pathdb-cli)" >&2; exit 2; }

. "$root/scripts/lib.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/pathdb-bench-schema.XXXXXX")
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

# The values `bench http --members 10` puts: n, payload, then m2..m9 (integer, string, boolean).
schema='{"schema": {"type": "object", "additionalProperties": false,
  "required": ["n", "payload", "m2", "m3", "m4", "m5", "m6", "m7", "m8", "m9"],
  "properties": {"n": {"type": "integer", "minimum": 0}, "payload": {"type": "string", "maxLength": 1000},
    "m2": {"type": "integer"}, "m3": {"type": "string"}, "m4": {"type": "boolean"},
    "m5": {"type": "integer"}, "m6": {"type": "string"}, "m7": {"type": "boolean"},
    "m8": {"type": "integer"}, "m9": {"type": "string", "minLength": 1}}}}'

# Starts a server on a fresh database in $work/NAME (lib.sh); sets url and pid.
serve() {
  mkdir -p "$work/$1"
  start_pathdb_serve "$pathdb" "$work/$1"
  pids+=("$server_pid")
  url=$server_url pid=$server_pid
}
serve plain; plain_url=$url plain_pid=$pid
serve schema; schema_url=$url schema_pid=$pid
curl -sf -X PUT "$schema_url/v1/namespaces/item" -H 'content-type: application/json' -d "$schema" >/dev/null
for url in "$plain_url" "$schema_url"; do
  "$pathdb" bench http --url "$url" --members 10 --duration 0.01 >/dev/null
done
# The schema is in force: a value without its members is refused.
status=$(curl -s -o /dev/null -w '%{http_code}' -X PUT "$schema_url/v1/items/bench-0/item-0" \
  -H 'content-type: application/json' -d '{"n": 1}')
[ "$status" = 422 ] || { echo "bench-schema.sh: the schema refused nothing (HTTP $status)" >&2; exit 1; }

printf '%-6s %-7s %9s %8s %8s %7s %12s\n' round server 'puts/s' 'p50 ms' 'p99 ms' errors 'cpu us/put'
declare -A sum
for round in $(seq 1 "$rounds"); do
  # Each goes first every other round: whatever the order costs falls on both.
  order="plain schema"
  [ $((round % 2)) = 0 ] && order="schema plain"
  for run in $order; do
    if [ $run = plain ]; then url=$plain_url pid=$plain_pid; else url=$schema_url pid=$schema_pid; fi
    before=$(cpu_ticks "$pid")
    out=$("$pathdb" --json bench http --url "$url" --no-preload --members 10 \
      --concurrency "$connections" --duration "$duration" --mix put=100)
    after=$(cpu_ticks "$pid")
    read -r total rps p50 p99 errors <<<"$(python3 -c '
import json, sys
r = json.loads(sys.argv[1]); l = r["latency_ms"]
print(r["requests"], "%.0f" % r["requests_per_s"], "%.2f" % l["p50"], "%.2f" % l["p99"], r["errors"])' "$out")"
    cpu=$(python3 -c "print('%.0f' % (($after - $before) * 10000 / max($total, 1)))")
    printf '%-6s %-7s %9s %8s %8s %7s %12s\n' "$round" "$run" "$rps" "$p50" "$p99" "$errors" "$cpu"
    sum[$run]=$(python3 -c "print(${sum[$run]:-0} + $rps)")
  done
done
python3 -c "print('schema puts/s as a share of plain: %.3f (sum over %d rounds)' % (${sum[schema]} / ${sum[plain]}, $rounds))"
