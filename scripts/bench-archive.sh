#!/usr/bin/env bash
# What the continuous archive costs a durable put (docs/benchmarks.md, "Continuous archive (issue
# 48)"): two `pathdb serve` (default settings: durable commits) on fresh databases, one plain and
# one with `--archive WORK/archive` (default --archive-delay 1s: the committer copies each commit
# in memory, the archiver writes a segment into the spool beside the database every second and
# copies it into the archive), loaded in turn by `pathdb bench http` with puts only of 10-member
# values, round after round so that the machine's noise falls on both (and each goes first every
# other round). Prints puts/s, p50, p99 and the server's CPU per put (µs, from /proc/PID/stat)
# per run, and of that the archiver thread's (/proc/PID/task/TID/stat), and the bytes the server
# had written to the disk per put (/proc/PID/io write_bytes); the archive run's puts/s
# as a share of the plain one's; and, once the archive has caught up (`GET /v1/archive` says
# `lag_commits` 0), the archive's bytes per put: the bytes the measured runs added to
# ARCHIVE/segments/ over their puts, with the segment count and the size of the base backup
# (ARCHIVE/base/) beside it.
#
# Builds `cargo build --release -p pathdb-cli` first (into $CARGO_TARGET_DIR, or target/) unless
# --pathdb names a binary.
#
# Usage: scripts/bench-archive.sh [--pathdb BIN] [--duration S] [--rounds N] [--connections N]
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
pathdb=
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
    *) echo "bench-archive.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
if [ -z "$pathdb" ]; then
  (cd "$root" && cargo build --release -p pathdb-cli)
  pathdb=${CARGO_TARGET_DIR:-$root/target}/release/pathdb
fi
[ -x "$pathdb" ] || { echo "bench-archive.sh: no $pathdb (cargo build --release -p pathdb-cli)" >&2; exit 2; }

. "$root/scripts/lib.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/pathdb-bench-archive.XXXXXX")
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
archive=$work/archive

# Starts a server on a fresh database in $work/NAME (lib.sh); sets url and pid.
serve() {
  local name=$1
  shift
  mkdir -p "$work/$name"
  start_pathdb_serve "$pathdb" "$work/$name" "$@"
  pids+=("$server_pid")
  url=$server_url pid=$server_pid
}
serve plain; plain_url=$url plain_pid=$pid
serve with-archive --archive "$archive"; archive_url=$url archive_pid=$pid

# Waits until the archive holds every commit (`lag_commits` 0, local-only mode: no token), for at
# most 120 s; prints its status (JSON).
archive_caught_up() {
  python3 - "$archive_url/v1/archive" <<'PY'
import json, sys, time, urllib.request
deadline = time.time() + 120
while True:
    with urllib.request.urlopen(sys.argv[1], timeout=10) as r:
        s = json.load(r)
    if not s.get("enabled"):
        sys.exit("bench-archive.sh: the server keeps no archive: %s" % s)
    if s["lag_commits"] == 0 and s["archived_commit"] == s["last_commit"] and s.get("last_base"):
        print(json.dumps(s))
        break
    if time.time() > deadline:
        sys.exit("bench-archive.sh: the archive did not catch up in 120 s: %s" % s)
    time.sleep(0.2)
PY
}
# "files bytes" of a directory's regular files.
dir_size() {
  python3 - "$1" <<'PY'
import os, sys
d = sys.argv[1]
names = [n for n in os.listdir(d) if os.path.isfile(os.path.join(d, n))] if os.path.isdir(d) else []
print(len(names), sum(os.path.getsize(os.path.join(d, n)) for n in names))
PY
}

# The preload (10,000 items of the same 10-member values) on both, outside the measured runs.
for url in "$plain_url" "$archive_url"; do
  "$pathdb" bench http --url "$url" --members 10 --duration 0.01 >/dev/null
done
archive_caught_up >/dev/null
read -r _ segment_bytes_before <<<"$(dir_size "$archive/segments")"

# The archiver thread's CPU (ticks), part of the server's: what it costs beside the committer's copy.
archiver_tid=$(grep -lx pathdb-archive /proc/"$archive_pid"/task/*/comm | head -1 | cut -d/ -f5)
[ -n "$archiver_tid" ] || { echo "bench-archive.sh: no pathdb-archive thread in the archive server" >&2; exit 1; }
archiver_ticks() { awk '{print $14 + $15}' "/proc/$archive_pid/task/$archiver_tid/stat"; }
# Bytes a process has had written to the disk so far (/proc/PID/io): journal, checkpoints, spool, archive.
disk_bytes() { awk '/^write_bytes:/ {print $2}' "/proc/$1/io"; }

printf '%-6s %-8s %9s %8s %8s %7s %12s %13s %12s\n' round server 'puts/s' 'p50 ms' 'p99 ms' errors 'cpu us/put' 'archiver us' 'disk B/put'
declare -A sum puts rate
ratios=()
for round in $(seq 1 "$rounds"); do
  # Each goes first every other round: whatever the order costs falls on both.
  order="plain archive"
  [ $((round % 2)) = 0 ] && order="archive plain"
  for run in $order; do
    if [ $run = plain ]; then url=$plain_url pid=$plain_pid; else url=$archive_url pid=$archive_pid; fi
    before=$(cpu_ticks "$pid") archiver_before=$(archiver_ticks) disk_before=$(disk_bytes "$pid")
    out=$("$pathdb" --json bench http --url "$url" --no-preload --members 10 \
      --concurrency "$connections" --duration "$duration" --mix put=100)
    if ! kill -0 "$pid" 2>/dev/null || [ "$(awk '{print $3}' "/proc/$pid/stat")" = Z ]; then
      status=0; wait "$pid" || status=$?
      echo "bench-archive.sh: the $run server died during round $round (exit status $status):" >&2
      tail -20 "$work/$([ $run = plain ] && echo plain || echo with-archive)/stderr" >&2
      exit 1
    fi
    after=$(cpu_ticks "$pid") archiver_after=$(archiver_ticks) disk_after=$(disk_bytes "$pid")
    read -r total rps p50 p99 errors <<<"$(python3 -c '
import json, sys
r = json.loads(sys.argv[1]); l = r["latency_ms"]
print(r["requests"], "%.0f" % r["requests_per_s"], "%.2f" % l["p50"], "%.2f" % l["p99"], r["errors"])' "$out")"
    cpu=$(python3 -c "print('%.0f' % (($after - $before) * 10000 / max($total, 1)))")
    archiver=-
    [ $run = archive ] && archiver=$(python3 -c "print('%.1f' % (($archiver_after - $archiver_before) * 10000 / max($total, 1)))")
    if [ "$errors" != 0 ]; then
      echo "bench-archive.sh: $errors failed puts; the $run server's log ends:" >&2
      tail -5 "$work/$([ $run = plain ] && echo plain || echo with-archive)/stderr" >&2
    fi
    disk=$(( (disk_after - disk_before) / (total > 0 ? total : 1) ))
    printf '%-6s %-8s %9s %8s %8s %7s %12s %13s %12s\n' "$round" "$run" "$rps" "$p50" "$p99" "$errors" "$cpu" "$archiver" "$disk"
    sum[$run]=$(python3 -c "print(${sum[$run]:-0} + $rps)")
    puts[$run]=$(( ${puts[$run]:-0} + total - errors ))
    rate[$run]=$rps
  done
  ratios+=("$(python3 -c "print('%.3f' % (${rate[archive]} / ${rate[plain]}))")")
done
# The sum is what bench-schema.sh reports; the rounds' own ratios (the two runs of a round are
# back to back) are less moved by load that comes and goes over the whole run.
python3 -c "
import statistics, sys
r = [float(x) for x in sys.argv[1:]]
print('archive puts/s as a share of plain: %.3f (sum over %d rounds); by round %s, median %.3f' % (
    ${sum[archive]} / ${sum[plain]}, $rounds, ' '.join(sys.argv[1:]), statistics.median(r)))" "${ratios[@]}"

status=$(archive_caught_up)
read -r segments segment_bytes <<<"$(dir_size "$archive/segments")"
read -r bases base_bytes <<<"$(dir_size "$archive/base")"
read -r spooled spool_bytes <<<"$(dir_size "$work/with-archive/pathdb.db-archive")"
python3 - "$status" "$segments" "$segment_bytes" "$segment_bytes_before" "${puts[archive]}" \
  "$bases" "$base_bytes" "$spooled" <<'PY'
import json, sys
s = json.loads(sys.argv[1])
segments, total, before, puts, bases, base, spooled = map(int, sys.argv[2:])
print("archive: %d commits archived (last %d), %d segments, %d failures, %d left in the spool" % (
    s["archived_commit"], s["last_commit"], segments, s["failures"], spooled))
print("segments: %d bytes in all, %d before the measured runs (the preload), %d during them" % (
    total, before, total - before))
print("archive bytes per put: %.1f (%d bytes over %d puts)" % ((total - before) / max(puts, 1),
    total - before, puts))
print("base backups: %d, %d bytes (taken at start, commit %d)" % (
    bases, base, s["last_base"]["commit"]))
PY
