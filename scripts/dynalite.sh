#!/usr/bin/env bash
# Runs dynalite (a DynamoDB-compatible server on LevelDB, https://github.com/architect/dynalite)
# on loopback, for benchmarks and DynamoDB backend tests. Needs node and npm.
#
# Usage: scripts/dynalite.sh [options]
#   --port N          listen port (default 0: any free port)
#   --host ADDR       listen address (default 127.0.0.1)
#   --path DIR        keep tables in a LevelDB under DIR (default: in memory, gone on exit)
#   --pid-file FILE   write the server's pid to FILE (removed when it stops)
#   --background      return once the server listens, leaving it running; stop it with
#                     `kill "$(cat FILE)"` (needs --pid-file; its output goes to FILE.log)
#   --install-only    install dynalite and exit
#
# Prints `PORT=<n>` on stdout once the server accepts connections (with --background, as the
# script's only stdout line). Tables are created, updated and deleted at once (createTableMs,
# deleteTableMs and updateTableMs are 0). SIGINT or SIGTERM stops the server cleanly.
# Signatures are not checked: any well-formed `Authorization: AWS4-HMAC-SHA256 Credential=...,
# SignedHeaders=..., Signature=...` header with an X-Amz-Date header is accepted.
#
# dynalite@$DYNALITE_VERSION is installed once with npm into $DYNALITE_DIR (default
# target/dynalite in the workspace).
#
# Examples:
#   scripts/dynalite.sh --port 4567                        # foreground, Ctrl-C stops it
#   port=$(scripts/dynalite.sh --background --pid-file /tmp/dynalite.pid | sed -n 's/^PORT=//p')
#   ...; kill "$(cat /tmp/dynalite.pid)"
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
version=${DYNALITE_VERSION:-4.0.0}
dir=${DYNALITE_DIR:-$root/target/dynalite}
port=0
host=127.0.0.1
path=
pid_file=
background=0
install_only=0

while [ $# -gt 0 ]; do
  case $1 in
    --port) port=$2; shift 2 ;;
    --host) host=$2; shift 2 ;;
    --path) path=$2; shift 2 ;;
    --pid-file) pid_file=$2; shift 2 ;;
    --background) background=1; shift ;;
    --install-only) install_only=1; shift ;;
    -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    *) echo "dynalite.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

command -v node >/dev/null || { echo "dynalite.sh: node is not installed" >&2; exit 1; }

installed=$(node -p "try { require('$dir/node_modules/dynalite/package.json').version } catch { '' }")
if [ "$installed" != "$version" ]; then
  command -v npm >/dev/null || { echo "dynalite.sh: npm is not installed" >&2; exit 1; }
  echo "dynalite.sh: installing dynalite@$version into $dir" >&2
  mkdir -p "$dir"
  npm install --no-save --no-audit --no-fund --loglevel=error --prefix "$dir" "dynalite@$version" >&2
fi
[ "$install_only" = 1 ] && exit 0

if [ "$background" = 1 ]; then
  [ -n "$pid_file" ] || { echo "dynalite.sh: --background needs --pid-file" >&2; exit 2; }
  log=$pid_file.log
  rm -f "$pid_file"
  args=(--port "$port" --host "$host" --pid-file "$pid_file")
  [ -n "$path" ] && args+=(--path "$path")
  DYNALITE_DIR=$dir DYNALITE_VERSION=$version nohup "$0" "${args[@]}" >"$log" 2>&1 </dev/null &
  child=$!
  for _ in $(seq 1 300); do
    line=$(grep -m1 '^PORT=' "$log" 2>/dev/null || true)
    if [ -n "$line" ]; then echo "$line"; exit 0; fi
    kill -0 "$child" 2>/dev/null || { echo "dynalite.sh: dynalite exited:" >&2; cat "$log" >&2; exit 1; }
    sleep 0.1
  done
  echo "dynalite.sh: dynalite did not start within 30 s:" >&2
  cat "$log" >&2
  kill "$child" 2>/dev/null || true
  exit 1
fi

# exec: node gets this process's pid, so the pid file and signals reach the server itself.
DYNALITE_MODULE=$dir/node_modules/dynalite DYNALITE_PORT=$port DYNALITE_HOST=$host \
  DYNALITE_PATH=$path DYNALITE_PID_FILE=$pid_file exec node -e '
const fs = require("fs");
const env = process.env;
const options = { createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 };
if (env.DYNALITE_PATH) options.path = env.DYNALITE_PATH;
const server = require(env.DYNALITE_MODULE)(options);
const pidFile = env.DYNALITE_PID_FILE;
const removePid = () => { if (pidFile) try { fs.unlinkSync(pidFile); } catch {} };
server.on("error", (e) => { console.error("dynalite: " + e.message); removePid(); process.exit(1); });
server.listen(Number(env.DYNALITE_PORT), env.DYNALITE_HOST, () => {
  if (pidFile) fs.writeFileSync(pidFile, process.pid + "\n");
  console.log("PORT=" + server.address().port);
});
let stopping = false;
const stop = (signal) => {
  if (stopping) return;
  stopping = true;
  console.error("dynalite: " + signal + ", stopping");
  // Stop accepting, drop idle keep-alive connections, then close the store.
  server.close(() => { removePid(); process.exit(0); });
  if (server.closeIdleConnections) server.closeIdleConnections();
  setTimeout(() => { removePid(); process.exit(0); }, 2000).unref();
};
process.on("SIGINT", () => stop("SIGINT"));
process.on("SIGTERM", () => stop("SIGTERM"));
'
