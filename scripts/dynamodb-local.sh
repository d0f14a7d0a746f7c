#!/usr/bin/env bash
# Starts or stops a DynamoDB-compatible server on a free loopback port, for tests.
#
#   scripts/dynamodb-local.sh start [moto|dynalite]   # prints PORT=<n>; moto is the default
#   scripts/dynamodb-local.sh stop  [moto|dynalite]
#
# moto (PyPI, moto[server]==5.2.5) implements TransactWriteItems and is what the conformance
# suite runs on; dynalite (npm, 4.0.0) validates requests more strictly but has no transactions.
# Both are installed into target/dynamodb-local/ on first use (registries only, no other
# network). Logs and pid files live there too.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
action=${1:-}
kind=${2:-moto}
dir=target/dynamodb-local
mkdir -p "$dir"
pidfile="$dir/$kind.pid"

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

wait_for() {
    local port=$1
    for _ in $(seq 1 200); do
        if python3 -c "import socket,sys; s=socket.socket(); s.settimeout(0.2); sys.exit(s.connect_ex(('127.0.0.1', $port)))" 2>/dev/null; then
            return 0
        fi
        sleep 0.1
    done
    echo "error: $kind did not start on port $port; see $dir/$kind.log" >&2
    return 1
}

case "$action:$kind" in
start:moto)
    if [[ ! -x "$dir/venv/bin/moto_server" ]]; then
        python3 -m venv "$dir/venv" >&2
        "$dir/venv/bin/pip" install --quiet --disable-pip-version-check 'moto[server]==5.2.5' >&2
    fi
    port=$(free_port)
    # moto_server hardcodes a threaded server, so two conditional writes can interleave inside
    # moto; DynamoDB applies each request atomically. Serve moto's own app single-threaded:
    # client requests still race each other, but each one is atomic, as on DynamoDB.
    #
    # moto 5.2.5's TransactWriteItems deep-copies the whole table once per item of the
    # transaction (its rollback backup), so a 100-item transaction on a 10,000-item table made
    # a million item copies and grew moto past 20 GB. The shim below copies each table once per
    # transaction: the same backup, the same semantics.
    MOTO_PORT=$port "$dir/venv/bin/python" -c '
import copy, sys
from werkzeug.serving import run_simple
from moto.server import DomainDispatcherApplication, create_backend_app, MotoRequestHandler
import moto.dynamodb.models as models

class OneCopyPerTable:
    backups = {}
    def deepcopy(self, obj, memo=None):
        if isinstance(obj, models.Table):
            if id(obj) not in self.backups:
                self.backups[id(obj)] = copy.deepcopy(obj)
            return self.backups[id(obj)]
        return copy.deepcopy(obj, memo)
    def __getattr__(self, name):
        return getattr(copy, name)

shim = OneCopyPerTable()
models.copy = shim
transact = models.DynamoDBBackend.transact_write_items
def transact_once(self, *args, **kwargs):
    shim.backups.clear()
    try:
        return transact(self, *args, **kwargs)
    finally:
        shim.backups.clear()
models.DynamoDBBackend.transact_write_items = transact_once

app = DomainDispatcherApplication(create_backend_app)
run_simple("127.0.0.1", int(sys.argv[1]), app, threaded=False, request_handler=MotoRequestHandler)
' "$port" >"$dir/moto.log" 2>&1 &
    echo $! >"$pidfile"
    wait_for "$port"
    echo "PORT=$port"
    ;;
start:dynalite)
    # scripts/dynalite.sh installs dynalite with npm, starts it and prints PORT=<n>.
    bash scripts/dynalite.sh --background --pid-file "$(pwd)/$pidfile"
    ;;
stop:moto | stop:dynalite)
    if [[ -f "$pidfile" ]]; then
        kill "$(cat "$pidfile")" 2>/dev/null || true
        rm -f "$pidfile"
    fi
    ;;
*)
    echo "usage: $0 start|stop [moto|dynalite]" >&2
    exit 2
    ;;
esac
