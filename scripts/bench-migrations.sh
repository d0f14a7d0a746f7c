#!/usr/bin/env bash
# What schema migrations cost (docs/benchmarks.md, "Schema migrations (issue 50)"): a get of an
# item stored one definition version back against a get of a current one, and a durable put
# with `Schema-Version` naming the older version against one without.
#
# The items are the ones `pathdb bench http --members 4 --value-bytes 500` writes:
# /bench-<g>/item-<i> = {"n": i, "payload": "<500 x>", "m2": 2, "m3": "m3"}, so the namespace
# is `item` (a path's namespace is its last element's). Version 1 of `item` has a schema of those
# members; version 2 has the three kinds of step of issue 50's example (rename /name ->
# /full_name, add /tier default "free", rename_value on /status) on them: rename /payload ->
# /text, add /tier default "free", rename_value /m3 "m3" -> "sent". Version 2's schema also
# accepts the version-1 shape, because `bench http` puts one body whatever the header says: the
# puts without the header store it as it is, those with `Schema-Version: item=1` have it
# translated first; both are checked against version 2's schema.
#
# Gets. The background rewrite would bring version-1 items forward within a second of the
# version-2 definition (50 items per commit), so the two databases the gets run against come
# from one continuous archive instead: a server with `--archive` gets version 1, --keys items,
# then version 2, and runs its rewrite to the end. `pathdb restore --commit` then makes "old",
# the database as of the commit that stored version 2 (the rewrite record says checked 0, done
# false: every item still as written at version 1), and "new", the database at the end (every
# item rewritten, stamped 2). Same items, same history, same definitions; only the stamps (and
# the stored shape) differ. Each is served `--read-only` (no background work at all), checked
# (the rewrite records; a few items read the same from both, with and without the header), and
# loaded with gets of all its items (`--mix get=100`), in turn, round after round.
#
# Puts. A third server (default settings: durable commits) on a fresh database gets versions 1
# and 2, the --keys items, and is loaded with puts over them (`--mix put=100`), without the
# header and with `Schema-Version: item=1`, in turn, round after round.
#
# Every run: requests/s, p50, p99 (ms), errors, and the server's CPU per request (µs, from
# /proc/PID/stat). A warm-up of 2 s per kind first, not counted; each kind goes first every
# other round. Then, unless --no-callgrind, instructions per request under valgrind's callgrind
# (which the machine's load does not move): each server again, over the same database, per
# kind 2 s of warm-up and --callgrind-duration s counted (`bench http --concurrency 2`). Then the
# medians, and the ratios: old-version cost against current (requests/s, p50, p99, CPU and
# instructions per request), each against the 1.2x bound.
#
# Usage: scripts/bench-migrations.sh [--pathdb BIN] [--duration S] [--rounds N]
#                                    [--connections N] [--keys N] [--no-build]
#                                    [--no-callgrind] [--callgrind-duration S]
#   BIN defaults to $CARGO_TARGET_DIR/release/pathdb (else target/release/pathdb), built first
#   with cargo build --release -p pathdb-cli unless --no-build or --pathdb. Needs curl,
#   python3; valgrind for the instruction counts.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
pathdb=${CARGO_TARGET_DIR:-$root/target}/release/pathdb
build=1
duration=8
rounds=3
connections=32
keys=2000
callgrind=1
callgrind_duration=5
while [ $# -gt 0 ]; do
  case $1 in
    --pathdb) pathdb=$2; build=0; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --connections) connections=$2; shift 2 ;;
    --keys) keys=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    --no-callgrind) callgrind=0; shift ;;
    --callgrind-duration) callgrind_duration=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    *) echo "bench-migrations.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
if [ "$build" = 1 ]; then
  (cd "$root" && cargo build --release -p pathdb-cli)
fi
[ -x "$pathdb" ] || { echo "bench-migrations.sh: no $pathdb (cargo build --release -p pathdb-cli)" >&2; exit 2; }
if [ "$callgrind" = 1 ] && ! command -v valgrind >/dev/null; then
  echo "bench-migrations.sh: no valgrind: skipping the instruction counts" >&2
  callgrind=0
fi

. "$root/scripts/lib.sh"
unset PATHDB_TOKENS
work=$(mktemp -d "${TMPDIR:-/tmp}/pathdb-bench-migrations.XXXXXX")
pids=()
server_pid=
cleanup() {
  # (server_pid: also one that start_pathdb_serve started and then gave up on.)
  [ -z "$server_pid" ] || pids+=("$server_pid")
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "bench-migrations.sh: $*" >&2; exit 1; }

# The shape of every request's items (`bench http` writes and reads /bench-<i % 20>/item-<i>).
shape=(--keys "$keys" --groups 20 --members 4 --value-bytes 500)
header='Schema-Version: item=1'

v1='{"schema": {"type": "object", "required": ["n", "payload", "m3"],
  "properties": {"n": {"type": "integer", "minimum": 0}, "payload": {"type": "string", "maxLength": 1000},
    "m2": {"type": "integer"}, "m3": {"enum": ["m3", "new"]}}}}'
v2='{"schema": {"type": "object", "required": ["n"],
  "properties": {"n": {"type": "integer", "minimum": 0}, "text": {"type": "string", "maxLength": 1000},
    "payload": {"type": "string", "maxLength": 1000}, "tier": {"type": "string"},
    "m2": {"type": "integer"}, "m3": {"enum": ["m3", "sent", "new"]}}},
  "migrate": [{"op": "rename", "from": "/payload", "to": "/text"},
              {"op": "add", "path": "/tier", "default": "free"},
              {"op": "rename_value", "path": "/m3", "from": "m3", "to": "sent"}]}'

# json FIELD_EXPR: evaluates a Python expression over `d`, the JSON on stdin.
json() { python3 -c "import json, sys; d = json.load(sys.stdin); print($1)"; }
define() { # URL BODY EXPECTED_STATUS
  local status
  status=$(curl -s -o "$work/define.out" -w '%{http_code}' -X PUT "$1/v1/namespaces/item" \
    -H 'content-type: application/json' -d "$2")
  [ "$status" = "$3" ] || fail "defining item: HTTP $status: $(cat "$work/define.out")"
}
rewrite_of() { curl -sf "$1/v1/namespaces/item" | json 'json.dumps(d.get("rewrite"))'; }
wait_rewrite_done() { # URL
  for _ in $(seq 1 600); do
    [ "$(curl -sf "$1/v1/namespaces/item" | json 'd["rewrite"]["done"]')" = True ] && return 0
    sleep 0.1
  done
  fail "the rewrite of $1 is not done after 60 s: $(rewrite_of "$1")"
}
serve() { # NAME [SERVE_ARG...]: sets url and pid
  local name=$1
  shift
  mkdir -p "$work/$name"
  start_pathdb_serve "$pathdb" "$work/$name" --no-ui "$@" >/dev/null
  pids+=("$server_pid")
  url=$server_url pid=$server_pid
}
stop() { # PID
  local p kept=()
  kill -TERM "$1"
  wait "$1" || fail "a server exited with $? after SIGTERM"
  for p in "${pids[@]}"; do [ "$p" = "$1" ] || kept+=("$p"); done
  pids=("${kept[@]}")
  [ "$server_pid" != "$1" ] || server_pid=
}
last_commit() { "$pathdb" --json archive ls "$work/archive" | json 'd["last_commit"]'; }
# Waits until the archive holds every commit so far: its last commit stays put for 2.5 s
# (commits reach it within --archive-delay, 1 s).
settled_commit() {
  local last prev=none
  for _ in $(seq 1 60); do
    last=$(last_commit)
    [ "$last" = "$prev" ] && { echo "$last"; return 0; }
    prev=$last
    sleep 2.5
  done
  fail "the archive never settled"
}

echo "pathdb: $pathdb ($("$pathdb" --version)), at $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')$(
  [ -n "$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null)" ] && echo ' with uncommitted changes'); $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== setup: $keys items of ~540 bytes at version 1, then version 2 (archive: $work/archive)"
serve setup --archive "$work/archive"
setup_url=$url setup_pid=$pid
define "$setup_url" "$v1" 201
"$pathdb" bench http --url "$setup_url" "${shape[@]}" --duration 0.01 --mix get=100 >/dev/null 2>&1
before_v2=$(settled_commit)
define "$setup_url" "$v2" 200
wait_rewrite_done "$setup_url"
echo "rewrite on the setup server: $(rewrite_of "$setup_url")"
stop "$setup_pid"

# "new": the archive's end (the rewrite done); "old": the first commit after $before_v2 that
# has version 2 (the commit that stored it; the rewrite record says nothing done yet).
mkdir -p "$work/new"
"$pathdb" --db "$work/new/pathdb.db" restore --archive "$work/archive" >/dev/null
serve new --read-only
new_url=$url new_pid=$pid
found=
for commit in $(seq $((before_v2 + 1)) $((before_v2 + 5))); do
  rm -rf "$work/old"
  mkdir -p "$work/old"
  "$pathdb" --db "$work/old/pathdb.db" restore --archive "$work/archive" --commit "$commit" >/dev/null
  serve old --read-only
  old_url=$url old_pid=$pid
  if [ "$(curl -sf "$old_url/v1/namespaces/item" | json 'd["version"]')" = 2 ]; then
    found=$commit
    break
  fi
  stop "$old_pid"
done
[ -n "$found" ] || fail "no commit after $before_v2 has version 2 of item"
old_rewrite=$(rewrite_of "$old_url")
new_rewrite=$(rewrite_of "$new_url")
echo "old: as of commit $found (version 2 stored after commit $before_v2), rewrite $old_rewrite"
echo "new: the archive's end (commit $(last_commit)), rewrite $new_rewrite"
python3 - "$old_rewrite" "$new_rewrite" "$keys" <<'PY' || fail "the rewrite records are not as the comparison needs"
import json, sys
old, new, keys = json.loads(sys.argv[1]), json.loads(sys.argv[2]), int(sys.argv[3])
assert old == {"to": 2, "checked": 0, "rewritten": 0, "done": False}, old
assert new["to"] == 2 and new["done"] and new["rewritten"] == keys, new
PY
# The same items read the same from both, as version 2 and as version 1.
for i in 0 7 $((keys - 1)); do
  item="v1/items/bench-$((i % 20))/item-$i"
  for h in "x-none: 1" "$header"; do
    a=$(curl -sf -H "$h" "$old_url/$item" | json 'json.dumps([d["value"], d["schema_version"]], sort_keys=True)')
    b=$(curl -sf -H "$h" "$new_url/$item" | json 'json.dumps([d["value"], d["schema_version"]], sort_keys=True)')
    [ "$a" = "$b" ] || fail "/$item ($h) reads differently: old $a, new $b"
  done
done
echo "read as version 2: $(curl -sf "$old_url/v1/items/bench-7/item-7" | json 'json.dumps({k: (v if k != "text" else v[:8] + "...") for k, v in d["value"].items()})')"

echo "== setup: puts server (durable), versions 1 and 2, $keys items"
serve puts
puts_url=$url puts_pid=$pid
define "$puts_url" "$v1" 201
define "$puts_url" "$v2" 200
"$pathdb" bench http --url "$puts_url" "${shape[@]}" --duration 0.01 --mix get=100 >/dev/null 2>&1
wait_rewrite_done "$puts_url"
# A version-1 put is stored in version 2's shape and answered in version 1's.
put=$(curl -sf -X PUT -H "$header" -H 'content-type: application/json' "$puts_url/v1/items/bench-3/item-3" \
  -d '{"n": 3, "payload": "p", "m2": 2, "m3": "m3"}' | json 'json.dumps(d["value"], sort_keys=True)')
stored=$(curl -sf "$puts_url/v1/items/bench-3/item-3" | json 'json.dumps(d["value"], sort_keys=True)')
[ "$put" = '{"m2": 2, "m3": "m3", "n": 3, "payload": "p"}' ] || fail "a version-1 put answered $put"
[ "$stored" = '{"m2": 2, "m3": "sent", "n": 3, "text": "p", "tier": "free"}' ] || fail "a version-1 put stored $stored"

results=$work/results.tsv
: >"$results"
# bench SECONDS URL BENCH_ARG...: `bench http` over the items, its JSON report on stdout.
bench() {
  local seconds=$1 url=$2
  shift 2
  "$pathdb" --json bench http --url "$url" --no-preload "${shape[@]}" \
    --concurrency "$connections" --duration "$seconds" "$@" 2>"$work/bench.err" ||
    fail "bench http failed: $(cat "$work/bench.err")"
}
# measure KIND SECONDS: runs KIND's load (its server, its requests) for SECONDS.
measure() {
  case $1 in
    get-current) bench "$2" "$new_url" --mix get=100 ;;
    get-old) bench "$2" "$old_url" --mix get=100 ;;
    put-plain) bench "$2" "$puts_url" --mix put=100 ;;
    put-v1-header) bench "$2" "$puts_url" --mix put=100 --header "$header" ;;
  esac
}
pid_of() {
  case $1 in
    get-current) echo "$new_pid" ;;
    get-old) echo "$old_pid" ;;
    put-*) echo "$puts_pid" ;;
  esac
}
# run KIND: one measurement, printed and added to $results.
run() {
  local kind=$1 pid before after out
  pid=$(pid_of "$kind")
  before=$(cpu_ticks "$pid")
  out=$(measure "$kind" "$duration")
  after=$(cpu_ticks "$pid")
  python3 - "$kind" "$round" "$out" "$before" "$after" "$results" <<'PY'
import json, sys
kind, rnd, out, before, after, results = sys.argv[1:]
r = json.loads(out); l = r["latency_ms"]
cpu = (int(after) - int(before)) * 10000 / max(r["requests"], 1)
row = [kind, rnd, "%.0f" % r["requests_per_s"], "%.3f" % l["p50"], "%.3f" % l["p99"], str(r["errors"]), "%.0f" % cpu]
print("%-13s %5s %9s %8s %8s %6s %10s" % tuple(row))
open(results, "a").write("\t".join(row) + "\n")
if r["errors"]:
    sys.exit("errors in the run")
PY
}

echo
echo "== warm-up: 2 s of each kind, not counted"
for kind in get-current get-old put-plain put-v1-header; do
  measure "$kind" 2 >/dev/null
done
echo "== $rounds rounds of $duration s per run, $connections connections"
printf '%-13s %5s %9s %8s %8s %6s %10s\n' kind round 'req/s' 'p50 ms' 'p99 ms' errors 'cpu us/req'
for round in $(seq 1 "$rounds"); do
  gets="get-current get-old"
  puts="put-plain put-v1-header"
  if [ $((round % 2)) = 0 ]; then
    gets="get-old get-current"
    puts="put-v1-header put-plain"
  fi
  for kind in $gets $puts; do
    run "$kind"
  done
done
# Still as they were: nothing brought the old items forward during the runs.
[ "$(rewrite_of "$old_url")" = "$old_rewrite" ] || fail "the old database's rewrite moved: $(rewrite_of "$old_url")"

if [ "$callgrind" = 1 ]; then
  echo
  echo "== instructions per request under callgrind: 2 s warm-up, $callgrind_duration s counted, 2 connections"
  # `pathdb` under callgrind, for start_pathdb_serve; the counts go to $work/callgrind.*.
  cat >"$work/pathdb-callgrind" <<SH
#!/bin/sh
exec valgrind --tool=callgrind --callgrind-out-file="$work/callgrind.%p" "$pathdb" "\$@"
SH
  chmod +x "$work/pathdb-callgrind"
  # counted KIND PID: instructions per request of KIND's load against the server PID.
  counted() {
    local kind=$1 pid=$2 out requests dump instructions
    connections=2 measure "$kind" 2 >/dev/null
    callgrind_control -z "$pid" >/dev/null 2>&1
    out=$(connections=2 measure "$kind" "$callgrind_duration")
    callgrind_control -d "$pid" >/dev/null 2>&1
    sleep 1
    requests=$(echo "$out" | json 'd["requests"]')
    dump=$(ls -t "$work"/callgrind."$pid".* | head -1)
    instructions=$(awk '/^(summary|totals):/ {print $2; exit}' "$dump")
    printf '%-13s %9s requests %12s instructions per request\n' "$kind" "$requests" $((instructions / requests))
    printf '%s\t%s\n' "$kind" $((instructions / requests)) >>"$work/instructions.tsv"
  }
  # The same databases, each server in turn under callgrind (the others stopped).
  for name in new old puts; do
    stop "$(eval echo "\$${name}_pid")"
    # (start_pathdb_serve reads the URL from this file: not the stopped server's.)
    rm -f "$work/$name/stdout"
    start_pathdb_serve "$work/pathdb-callgrind" "$work/$name" --no-ui \
      $([ "$name" = puts ] || echo --read-only) >/dev/null
    pids+=("$server_pid")
    eval "${name}_url=$server_url"
    case $name in
      new) counted get-current "$server_pid" ;;
      old) counted get-old "$server_pid" ;;
      puts) counted put-plain "$server_pid"; counted put-v1-header "$server_pid" ;;
    esac
    stop "$server_pid"
  done
fi

touch "$work/instructions.tsv"
python3 - "$results" "$work/instructions.tsv" <<'PY'
import statistics, sys
rows = [l.split("\t") for l in open(sys.argv[1]).read().splitlines()]
ins = dict(l.split("\t") for l in open(sys.argv[2]).read().splitlines())
med = {}
for kind in ["get-current", "get-old", "put-plain", "put-v1-header"]:
    mine = [r for r in rows if r[0] == kind]
    med[kind] = [statistics.median(float(r[i]) for r in mine) for i in (2, 3, 4, 6)]
print("\nmedians          req/s   p50 ms   p99 ms  cpu us/req  instructions/req")
for kind, (rps, p50, p99, cpu) in med.items():
    print("%-13s %8.0f %8.3f %8.3f %11.0f %17s" % (kind, rps, p50, p99, cpu, ins.get(kind, "-")))
print("\nratios (cost of the older version / the current one; bound 1.2)")
for label, old, cur in [("get, stored one version back / current", "get-old", "get-current"),
                        ("durable put, Schema-Version item=1 / none", "put-v1-header", "put-plain")]:
    o, c = med[old], med[cur]
    line = "%-42s req/s %.2f  p50 %.2f  p99 %.2f  cpu/req %.2f" % (label, c[0] / o[0], o[1] / c[1], o[2] / c[2], o[3] / c[3])
    if old in ins and cur in ins:
        line += "  instructions/req %.2f" % (int(ins[old]) / int(ins[cur]))
    print(line)
PY
