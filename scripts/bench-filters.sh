#!/usr/bin/env bash
# What filters and projections on listings cost (docs/benchmarks.md, "Filters and projections
# (issue 49)"): one release `pathdb serve` (default settings) on a fresh database, seeded over
# HTTP with
#
# - /feed-1/event-<n>, n < 1,000: values of 10 members, about 400 bytes (a user, a time, a
#   score, a region, a session id, a user agent, tags, a URL...), one of which, `kind`, decides
#   the filter: "hit" for every tenth item (n % 10 == 0), 100 in all;
# - /docs-1/doc-<n>, n < 200: values of 8 members, about 2 KB (a title, an author, a summary, a
#   body of ~1.4 KB, tags...);
#
# and loaded by wrk (2 threads, --connections, plain GETs of one URL) with four kinds of request:
#
# - list:     GET /v1/list/feed-1?limit=1000                  (reads and returns the 1,000)
# - filtered: GET /v1/list/feed-1?limit=1000&filter=value.kind == "hit"
#                                                              (reads the same 1,000, returns 100)
# - full:     GET /v1/list/docs-1?limit=100                   (100 values of 2 KB)
# - fields:   GET /v1/list/docs-1?limit=100&fields=title      (the same 100, each only its title)
#
# The script first checks each kind's answer (items returned, `scanned`, no next page for the
# 1,000, only `title` in the projected values) and measures its response bytes (curl: body and
# headers). Then a warm-up run of each kind (2 s, unmeasured) and --rounds rounds of one run per
# kind, the order of the four turning every round so that the machine's noise falls on each. Per
# run: requests/s, p50 and p99 (ms), and the server's CPU time per request (µs: user + system
# from /proc/PID/stat, 10 ms ticks, over the run, divided by its requests). Then, unless
# --no-callgrind, instructions per request under valgrind's callgrind (which the machine's load
# does not move): the server again over the same database, per kind 2 s of warm-up, then
# --callgrind-duration s counted (wrk -t1 -c2). Prints the runs, then medians, the filtered/list
# and fields/full ratios of CPU per request (medians of the ratios paired by round) against the
# targets (filtered at most 1.3x list; fields at most 0.5x full's bytes), and the bytes.
#
# Usage: scripts/bench-filters.sh [--pathdb BIN] [--duration S] [--rounds N] [--connections N]
#                                 [--no-callgrind] [--callgrind-duration S]
#   BIN defaults to $CARGO_TARGET_DIR/release/pathdb (else target/release/pathdb):
#   cargo build --release -p pathdb-cli first. Needs wrk, curl and python3; valgrind for callgrind.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
pathdb=${CARGO_TARGET_DIR:-$root/target}/release/pathdb
duration=10
rounds=5
connections=16
callgrind=1
callgrind_duration=10
while [ $# -gt 0 ]; do
  case $1 in
    --pathdb) pathdb=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --connections) connections=$2; shift 2 ;;
    --no-callgrind) callgrind=0; shift ;;
    --callgrind-duration) callgrind_duration=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    *) echo "bench-filters.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -x "$pathdb" ] || { echo "bench-filters.sh: no $pathdb (cargo build --release -p pathdb-cli)" >&2; exit 2; }
command -v wrk >/dev/null || { echo "bench-filters.sh: needs wrk (apt-get install wrk)" >&2; exit 2; }
if [ "$callgrind" = 1 ] && ! command -v valgrind >/dev/null; then
  echo "bench-filters.sh: no valgrind: skipping the instruction counts" >&2
  callgrind=0
fi

. "$root/scripts/lib.sh"
unset PATHDB_TOKENS
work=$(mktemp -d "${TMPDIR:-/tmp}/pathdb-bench-filters.XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$work/db"
start_pathdb_serve "$pathdb" "$work/db" --no-ui >/dev/null
pids+=("$server_pid")
url=$server_url pid=$server_pid

# The request of each kind (path and query; the filter URL-encoded).
declare -A target
target[list]='/v1/list/feed-1?limit=1000'
target[filtered]='/v1/list/feed-1?limit=1000&filter=value.kind%20%3D%3D%20%22hit%22'
target[full]='/v1/list/docs-1?limit=100'
target[fields]='/v1/list/docs-1?limit=100&fields=title'
kinds=(list filtered full fields)

# The items, over HTTP (one keep-alive connection, durable puts); prints the values' sizes.
python3 - "$url" <<'PY'
import http.client, json, sys, urllib.parse

u = urllib.parse.urlparse(sys.argv[1])
conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)

def put(path, value):
    body = json.dumps(value, separators=(",", ":"))
    conn.request("PUT", "/v1/items" + path, body, {"content-type": "application/json"})
    r = conn.getresponse()
    r.read()
    if r.status not in (200, 201):
        sys.exit("bench-filters.sh: PUT %s answered %d" % (path, r.status))
    return len(body)

words = ("lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor "
         "incididunt ut labore et dolore magna aliqua ut enim ad minim veniam quis nostrud "
         "exercitation ullamco laboris nisi aliquip ex ea commodo consequat").split()

def text(n, seed):
    return " ".join(words[(seed * 7 + i * 13) % len(words)] for i in range(n))

feed = []
for n in range(1000):
    kind = "hit" if n % 10 == 0 else ("miss" if n % 10 < 7 else "error")
    feed.append(put("/feed-1/event-%d" % n, {
        "user": "user-%d" % (n * 7919 % 5000),
        "at": 1764400000000000 + n * 1_000_003,
        "kind": kind,
        "score": round(n * 37 % 1000 / 10, 1),
        "region": ("eu-west-1", "us-east-1", "ap-south-1")[n % 3],
        "session": "%08x-%04x-4%03x-8%03x-%012x" % (n * 2654435761 % 2**32, n % 65536, n % 4096,
                                                     n * 7 % 4096, n * 11400714819323198485 % 2**48),
        "agent": "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
                 "Chrome/131.0.6778.85 Safari/537.36 Edg/131.0.2903.70",
        "tags": ["web", ("beta", "stable")[n % 2], "cohort-%d" % (n % 12)],
        "url": "/shop/category-%d/product-%d?ref=%s" % (n % 40, n * 31 % 10000, text(3, n).replace(" ", "-")),
        "latency_ms": n * 13 % 900 + 0.5,
    }))
docs = []
for n in range(200):
    docs.append(put("/docs-1/doc-%d" % n, {
        "title": "Notes on %s, part %d" % (text(3, n), n),
        "author": {"name": "Author %d" % (n % 17), "email": "author%d@example.com" % (n % 17)},
        "summary": text(30, n + 1),
        "body": text(240, n + 2),
        "tags": [words[n % len(words)], words[(n * 3) % len(words)], "docs"],
        "published_at": 1764400000000000 + n * 86_400_000_000,
        "words": 240 + n,
        "lang": "en",
    }))
mean = lambda xs: sum(xs) / len(xs)
print("seeded: /feed-1: %d items of %d members, %.0f bytes on average (%d-%d); "
      "/docs-1: %d items of 8 members, %.0f bytes on average (%d-%d)" % (
          len(feed), 10, mean(feed), min(feed), max(feed), len(docs), mean(docs), min(docs), max(docs)))
PY

# Each kind's answer is what it should be; "body_bytes header_bytes items scanned" in $work/bytes.
: >"$work/bytes"
for kind in "${kinds[@]}"; do
  sizes=$(curl -sf -o "$work/$kind.json" -w '%{size_download} %{size_header}' "$url${target[$kind]}")
  python3 - "$kind" "$work/$kind.json" "$sizes" >>"$work/bytes" <<'PY'
import json, sys
kind, path, sizes = sys.argv[1], sys.argv[2], sys.argv[3]
page = json.load(open(path))
items, scanned = page["items"], page.get("scanned")
want = {"list": (1000, 1000), "filtered": (100, 1000), "full": (100, 100), "fields": (100, 100)}[kind]
def fail(why):
    sys.exit("bench-filters.sh: %s: %s" % (kind, why))
if (len(items), scanned) != want:
    fail("%d items, scanned %s; expected %d items, scanned %d" % (len(items), scanned, *want))
if kind in ("list", "filtered") and page.get("next_page_token"):
    fail("a next page after the 1,000 items")
if kind == "filtered" and any(i["value"]["kind"] != "hit" for i in items):
    fail("an item that does not match")
if kind == "fields" and any(set(i["value"]) != {"title"} for i in items):
    fail("a value with more than its title")
if kind == "full" and any(len(i["value"]) != 8 for i in items):
    fail("a value without its 8 members")
print(kind, sizes, len(items), scanned)
PY
done

results=$work/results
: >"$results"
# One run: KIND ROUND; a row on stdout and "kind rps p50 p99 cpu round" in $results.
run() {
  local kind=$1 round=$2 before after out total rps p50 p99 errors cpu
  before=$(cpu_ticks "$pid")
  out=$(wrk -t2 -c"$connections" -d"${duration}s" --latency "$url${target[$kind]}" | parse_wrk)
  after=$(cpu_ticks "$pid")
  read -r total rps p50 p99 errors <<<"$out"
  [ "$errors" = 0 ] || { echo "bench-filters.sh: $kind had $errors errors" >&2; exit 1; }
  # Clock ticks are 10 ms: µs per request = ticks * 10000 / requests.
  cpu=$(python3 -c "print('%.1f' % (($after - $before) * 10000 / max($total, 1)))")
  printf '%-6s %-9s %6s %9s %8s %8s %11s\n' "$round" "$kind" \
    "$(cut -d' ' -f1 /proc/loadavg)" "$rps" "$p50" "$p99" "$cpu"
  echo "$kind $rps $p50 $p99 $cpu $round" >>"$results"
}

for kind in "${kinds[@]}"; do wrk -t2 -c"$connections" -d2s "$url${target[$kind]}" >/dev/null; done
printf '%-6s %-9s %6s %9s %8s %8s %11s\n' round kind load 'req/s' 'p50 ms' 'p99 ms' 'cpu us/req'
for round in $(seq 1 "$rounds"); do
  # Turn the order: list filtered full fields, filtered full fields list, ...
  k=$(((round - 1) % ${#kinds[@]}))
  order=("${kinds[@]:k}" "${kinds[@]:0:k}")
  for kind in "${order[@]}"; do run "$kind" "$round"; done
done

# Instructions per request under callgrind: the server again, over its database.
counts=$work/instructions
: >"$counts"
if [ "$callgrind" = 1 ]; then
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  pids=()
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  url=http://127.0.0.1:$port
  out=$work/callgrind.out
  valgrind --tool=callgrind --callgrind-out-file="$out" \
    "$pathdb" --db "$work/db/pathdb.db" serve --addr "127.0.0.1:$port" --no-ui \
    >"$work/valgrind.log" 2>&1 &
  vg=$!
  pids+=("$vg")
  for _ in $(seq 1 300); do curl -sf -o /dev/null "$url/healthz" && break; sleep 0.2; done
  for kind in "${kinds[@]}"; do
    wrk -t1 -c2 -d2s "$url${target[$kind]}" >/dev/null
    callgrind_control -z "$vg" >/dev/null 2>&1
    requests=$(wrk -t1 -c2 -d"${callgrind_duration}s" --timeout 10s "$url${target[$kind]}" |
      awk '/requests in/ {print $1}')
    callgrind_control -d "$vg" >/dev/null 2>&1
    sleep 1
    dump=$(ls -t "$out".* | head -1)
    instructions=$(awk '/^(summary|totals):/ {print $2; exit}' "$dump")
    printf 'callgrind %-9s %6s requests %12s instructions per request\n' "$kind" \
      "$requests" "$((instructions / requests))"
    echo "$kind $((instructions / requests))" >>"$counts"
  done
  kill "$vg" 2>/dev/null || true
  wait "$vg" 2>/dev/null || true
  pids=()
fi

python3 - "$results" "$counts" "$work/bytes" <<'PY'
import statistics, sys
runs = [l.split() for l in open(sys.argv[1]) if l.strip()]
counts = {k: int(n) for k, n in (l.split() for l in open(sys.argv[2]) if l.strip())}
sizes = {l.split()[0]: [int(x) for x in l.split()[1:3]] for l in open(sys.argv[3]) if l.strip()}
med = statistics.median
print("\nmedians over the rounds (req/s, p50 ms, p99 ms, server CPU us per request), instructions,"
      " response bytes (body + headers)")
print("%-9s %9s %7s %7s %8s %13s %9s" % ("kind", "req/s", "p50", "p99", "cpu", "instr/req", "bytes"))
rows = {}
for kind in ("list", "filtered", "full", "fields"):
    rs = [r for r in runs if r[0] == kind]
    m = [med(float(r[i]) for r in rs) for i in (1, 2, 3, 4)]
    rows[kind] = {r[5]: r for r in rs}
    print("%-9s %9.0f %7.2f %7.2f %8.1f %13s %9d" % (kind, *m, counts.get(kind, "-"), sum(sizes[kind])))

def ratio(a, b):
    # Paired by round: CPU per request of a over b; then the median of the rounds' ratios.
    by_round = [float(rows[a][r][4]) / float(rows[b][r][4]) for r in rows[a]]
    return med(by_round), by_round

print()
for a, b, target in (("filtered", "list", 1.3), ("fields", "full", None)):
    m, by_round = ratio(a, b)
    instr = ("%.3f" % (counts[a] / counts[b])) if a in counts and b in counts else "-"
    print("%s / %s: cpu per request %.3f (rounds %s), instructions %s%s" % (
        a, b, m, " ".join("%.3f" % x for x in by_round), instr,
        "" if target is None else "; target at most %.1f: %s" % (
            target, "met" if m <= target else "NOT met")))
body = sizes["fields"][0] / sizes["full"][0]
total = sum(sizes["fields"]) / sum(sizes["full"])
print("fields / full: response bytes %d / %d = %.3f of the body (%.3f with headers); "
      "target at most 0.5: %s" % (sizes["fields"][0], sizes["full"][0], body, total,
                                  "met" if total <= 0.5 else "NOT met"))
print("filtered / list: response bytes %d / %d = %.3f of the body" % (
    sizes["filtered"][0], sizes["list"][0], sizes["filtered"][0] / sizes["list"][0]))
PY
