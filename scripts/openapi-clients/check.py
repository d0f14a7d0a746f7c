"""A small program against the client openapi-python-client generates from PathDB's OpenAPI
document. scripts/openapi-clients.sh type-checks it with `mypy --strict`, then runs it against a
live `pathdb serve`: put, get, a failed precondition, a listing and a transaction with tagged
operations, a create with a generated id and the change feed, through the generated types only.

    python check.py BASE_URL TOKEN
"""

import sys

from pathdb_client import AuthenticatedClient
from pathdb_client.api.items import (
    create_item,
    get_changes,
    get_item,
    list_items,
    put_item,
    transact,
)
from pathdb_client.models import (
    ChangeDelete,
    ChangePut,
    ChangesOut,
    ErrorBody,
    ItemOut,
    ListOut,
    TransactIn,
    TransactOut,
    TxOpCheck,
    TxOpCheckOp,
    TxOpPut,
    TxOpPutOp,
    TxResultCheck,
    TxResultPut,
)


def main(base_url: str, token: str) -> None:
    with AuthenticatedClient(base_url=base_url, token=token) as client:
        created = put_item.sync(
            "user-7/post-2", client=client, body={"title": "hello"}, if_none_match="*"
        )
        assert isinstance(created, ItemOut), created
        assert (created.path, created.version) == ("/user-7/post-2", 1)

        got = get_item.sync("user-7/post-2", client=client)
        assert isinstance(got, ItemOut), got
        assert got.value == {"title": "hello"}

        stale = put_item.sync_detailed("user-7/post-2", client=client, body=2, if_match='"9"')
        assert stale.status_code == 412, stale
        assert isinstance(stale.parsed, ErrorBody), stale.parsed
        assert stale.parsed.error.code == "condition_failed"

        ops: list[TxOpCheck | TxOpPut] = [
            TxOpCheck(op=TxOpCheckOp.CHECK, path="/user-7/post-2", if_version=1),
            TxOpPut(op=TxOpPutOp.PUT, path="/user-7/post-10", value=[1, 2]),
        ]
        result = transact.sync(client=client, body=TransactIn(ops=list(ops)))
        assert isinstance(result, TransactOut), result
        check, put = result.results
        assert isinstance(check, TxResultCheck), check
        assert isinstance(put, TxResultPut), put
        assert put.item.version == 1

        listing = list_items.sync("user-7", client=client)
        assert isinstance(listing, ListOut), listing
        paths = [item.path for item in listing.items]
        assert paths == ["/user-7/post-2", "/user-7/post-10"], paths

        # Follow the listing: a generated id, then a delete, arrive as tagged changes.
        since = listing.changes_token
        assert isinstance(since, str), since
        made = create_item.sync("user-7/post", client=client, body={"n": 1}, id="sequence")
        assert isinstance(made, ItemOut), made
        assert made.path == "/user-7/post-11", made.path
        put_item.sync("user-7/post-2", client=client, body=3)
        feed = get_changes.sync("user-7", client=client, since=since, limit=10)
        assert isinstance(feed, ChangesOut), feed
        kinds = [
            (c.item.path if isinstance(c, ChangePut) else c.path, type(c).__name__)
            for c in feed.changes
        ]
        assert kinds == [("/user-7/post-11", "ChangePut"), ("/user-7/post-2", "ChangePut")], kinds
        assert not any(isinstance(c, ChangeDelete) for c in feed.changes)
    print(
        "generated Python client: put, get, 412, transact, list, create and changes against "
        f"{base_url}"
    )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
