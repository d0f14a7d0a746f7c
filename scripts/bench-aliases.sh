#!/usr/bin/env bash
# What alias paths cost (docs/benchmarks.md, "Alias paths"): two `pathdb serve` (default
# settings: durable commits) on fresh databases, one whose `item` namespace has two alias
# templates (`/by-1/bench-{@bench}/item-{@item}` and `/top-1/n-{!n}/bench-{@bench}/item-{@item}`:
# every item gets two aliases) and one without, loaded in turn by `pathdb bench http`, round
# after round so that the machine's noise falls on both (each goes first every other round):
#
# - gets: the same items on the aliased server, read by path and through the alias
#   (`--get-prefix /by-1`);
# - puts of new items (a key space of 10^8: nearly every put creates an item, and with it two
#   aliases) on each server; each round picks its items from a seed of its own (`--seed`: the
#   same for both servers), so a later round creates items instead of replacing the earlier
#   rounds' (before the seed, rounds after the first mostly replaced them);
# - puts that replace the items with the same members (the aliases stay) on each server.
#
# Prints requests/s, p50 and p99 per run, then the ratios of the sums (time per request: the
# inverse of requests/s at the same concurrency).
#
# Usage: scripts/bench-aliases.sh [--pathdb BIN] [--duration S] [--rounds N] [--connections N]
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
pathdb=$root/target/release/pathdb
duration=10
rounds=3
connections=32
while [ $# -gt 0 ]; do
  case $1 in
    --pathdb) pathdb=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --connections) connections=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    *) echo "bench-aliases.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -x "$pathdb" ] || { echo "bench-aliases.sh: no $pathdb (cargo build --release -p pathdb-cli)" >&2; exit 2; }

. "$root/scripts/lib.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/pathdb-bench-aliases.XXXXXX")
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

# Starts a server on a fresh database in $work/NAME (lib.sh); sets url and pid.
serve() {
  mkdir -p "$work/$1"
  start_pathdb_serve "$pathdb" "$work/$1"
  pids+=("$server_pid")
  url=$server_url pid=$server_pid
}
serve plain; plain_url=$url
serve aliased; aliased_url=$url
define_bench_aliases "$aliased_url"
# The preload (10,000 items) on both; then the aliases answer.
for url in "$plain_url" "$aliased_url"; do
  "$pathdb" bench http --url "$url" --duration 0.01 >/dev/null
done
status=$(curl -s -o /dev/null -w '%{http_code}' "$aliased_url/v1/items/by-1/bench-0/item-0")
[ "$status" = 200 ] || { echo "bench-aliases.sh: no alias answers (HTTP $status)" >&2; exit 1; }

# One run: prints a row and adds its requests/s to sum[NAME].
declare -A sum
run() {
  local round=$1 name=$2 url=$3; shift 3
  local out rps p50 p99 errors
  out=$("$pathdb" --json bench http --url "$url" --no-preload --concurrency "$connections" \
    --duration "$duration" "$@")
  read -r rps p50 p99 errors <<<"$(python3 -c '
import json, sys
r = json.loads(sys.argv[1]); l = r["latency_ms"]
print("%.0f" % r["requests_per_s"], "%.2f" % l["p50"], "%.2f" % l["p99"], r["errors"])' "$out")"
  [ "$errors" = 0 ] || { echo "bench-aliases.sh: $name had $errors errors" >&2; exit 1; }
  printf '%-6s %-22s %9s %8s %8s\n' "$round" "$name" "$rps" "$p50" "$p99"
  sum[$name]=$(python3 -c "print(${sum[$name]:-0} + $rps)")
}

printf '%-6s %-22s %9s %8s %8s\n' round run 'req/s' 'p50 ms' 'p99 ms'
for round in $(seq 1 "$rounds"); do
  gets=("get-by-path" "get-through-alias")
  new=("new-put-plain" "new-put-2-aliases")
  same=("put-plain" "put-2-aliases-kept")
  if [ $((round % 2)) = 0 ]; then
    gets=("${gets[1]}" "${gets[0]}"); new=("${new[1]}" "${new[0]}"); same=("${same[1]}" "${same[0]}")
  fi
  for name in "${gets[@]}"; do
    case $name in
      get-by-path) run "$round" "$name" "$aliased_url" --mix get=100 ;;
      *) run "$round" "$name" "$aliased_url" --mix get=100 --get-prefix /by-1 ;;
    esac
  done
  for name in "${new[@]}"; do
    case $name in
      new-put-plain) run "$round" "$name" "$plain_url" --mix put=100 --keys 100000000 --seed "$round" ;;
      *) run "$round" "$name" "$aliased_url" --mix put=100 --keys 100000000 --seed "$round" ;;
    esac
  done
  for name in "${same[@]}"; do
    case $name in
      put-plain) run "$round" "$name" "$plain_url" --mix put=100 ;;
      *) run "$round" "$name" "$aliased_url" --mix put=100 ;;
    esac
  done
done
python3 - "${sum[get-by-path]}" "${sum[get-through-alias]}" "${sum[new-put-plain]}" \
  "${sum[new-put-2-aliases]}" "${sum[put-plain]}" "${sum[put-2-aliases-kept]}" "$rounds" <<'PY'
import sys
g, ga, np_, na, pp, pa, rounds = map(float, sys.argv[1:])
print("time per request, as a multiple of the run without aliases (sums over %d rounds):" % rounds)
print("  get through an alias / get by path:            %.2fx" % (g / ga))
print("  put of a new item with two aliases / without:  %.2fx" % (np_ / na))
print("  put keeping two aliases / without:             %.2fx" % (pp / pa))
PY
