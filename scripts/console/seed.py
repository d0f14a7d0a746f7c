"""Seeds a running `pathdb serve` for the console's browser tests (scripts/console.sh): the
leaderboard of the seed scenarios, a small user tree with history and an expiring item, and a
node with N children (default 10,000) written 50 per transaction.

    python seed.py URL TOKEN [N_CHILDREN]
"""

import json
import sys
import urllib.request

URL, TOKEN = sys.argv[1:3]
N = int(sys.argv[3]) if len(sys.argv) > 3 else 10_000


def call(method, path, body):
    request = urllib.request.Request(URL + path, data=json.dumps(body).encode(), method=method)
    request.add_header("Authorization", "Bearer " + TOKEN)
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request) as response:
        response.read()


def put(path, value, query="history=true"):
    call("PUT", "/v1/items" + path + "?" + query, value)


# The leaderboard: descending ids list the highest score first, with no maxValue - score.
for player, score in [("ada", 1500), ("grace", 990), ("linus", 2300), ("ken", 870), ("barbara", 1720)]:
    put(f"/season-2026-spring/score-!{score}", {"player": player, "score": score})
put("/user-7", {"name": "Ada"})
put("/user-7/post-1", {"title": "hello"})
put("/user-7/post-2", {"title": "draft"})
put("/user-7/post-2", {"title": "second thoughts", "tags": ["pathdb"]})
put("/user-7/post-10", {"title": "ten sorts after two"})
put("/user-7/post-2/comment-1", {"text": "first!"})
put("/user-7/profile", {"theme": "dark"})
put("/user-42", {"name": "Grace"})
put("/user-42/session-1", {"device": "phone"}, "ttl_seconds=86400")
# A folder with no item of its own: the console shows it as a node.
put("/user-42/folder-trip/photo-1", {"name": "beach.jpg"})
put("/user-42/folder-trip/photo-2", {"name": "dunes.jpg"})
# 50 per transaction: on DynamoDB a transaction in one group holds at most 99 operations beside
# its change log entry (docs/changes.md).
for start in range(1, N + 1, 50):
    ops = [{"op": "put", "path": f"/big-1/n-{i}", "value": {"i": i}} for i in range(start, min(start + 50, N + 1))]
    call("POST", "/v1/transact", {"ops": ops})
print(f"seeded {N + 14} items")
