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
    # transaction (its rollback backup): a 100-item transaction on a 10,000-item table made a
    # million item copies, and even one copy per transaction makes every write to a large table
    # cost a copy of it, while the single-threaded server makes every other request wait. The
    # shim below backs up only the items the transaction names (a copy of each, or "absent")
    # and puts them back when moto raises, which is when moto itself would restore its backup:
    # the same all-or-nothing, at the cost of the transaction's own items. Below it, a Query
    # reads its own partition instead of sorting the whole table.
    MOTO_PORT=$port "$dir/venv/bin/python" -c '
import copy, sys
from werkzeug.serving import run_simple
from moto.server import DomainDispatcherApplication, create_backend_app, MotoRequestHandler
import moto.dynamodb.models as models
from moto.dynamodb.models.dynamo_type import DynamoType

class NoTableCopy:
    """copy, as the models module sees it, except that a Table is not copied."""
    def deepcopy(self, obj, memo=None):
        if isinstance(obj, models.Table):
            return obj
        return copy.deepcopy(obj, memo)
    def __getattr__(self, name):
        return getattr(copy, name)

models.copy = NoTableCopy()
transact = models.DynamoDBBackend.transact_write_items

def touched(backend, transact_items):
    """(items of a table, hash key, range key, a copy of the item or None) per named item."""
    out = []
    for entry in transact_items:
        try:
            kind, op = next(iter(entry.items()))
            table = backend.get_table(op["TableName"])
            attrs = op["Item"] if kind == "Put" else op["Key"]
            h = DynamoType(attrs[table.hash_key_attr])
            r = DynamoType(attrs[table.range_key_attr]) if table.range_key_attr else None
        except Exception:
            continue  # moto refuses the request itself, before changing anything
        found = table.items.get(h)
        if r is not None:
            found = found.get(r) if found is not None else None
        out.append((table.items, h, r, copy.deepcopy(found)))
    return out

def transact_with_item_backups(self, transact_items, *args, **kwargs):
    backups = touched(self, transact_items)
    try:
        return transact(self, transact_items, *args, **kwargs)
    except BaseException:
        for items, h, r, item in reversed(backups):
            if r is None:
                if item is None:
                    items.pop(h, None)
                else:
                    items[h] = item
            elif item is None:
                items.get(h, {}).pop(r, None)
                if h in items and not items[h]:
                    del items[h]
            else:
                items[h][r] = item
        raise

models.DynamoDBBackend.transact_write_items = transact_with_item_backups

# A Query of the table (not of an index) reads one partition, but moto 5.2.5 sorts every item of
# the table to find it: each page of a listing cost a sort of the whole table. Hand the query
# only its partition (it filters by hash key and sorts by range key itself, as before).
import inspect
from moto.dynamodb.models.table import Table
table_query = Table.query
query_signature = inspect.signature(table_query)

def query_one_partition(self, *args, **kwargs):
    bound = query_signature.bind(self, *args, **kwargs)
    hash_key = bound.arguments.get("hash_key")
    if bound.arguments.get("index_name") or not self.range_key_attr:
        return table_query(self, *args, **kwargs)
    partition = list(self.items.get(hash_key, {}).values())
    self.all_items = lambda: partition
    try:
        return table_query(self, *args, **kwargs)
    finally:
        del self.all_items

Table.query = query_one_partition

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
