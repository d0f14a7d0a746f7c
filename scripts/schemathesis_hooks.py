"""Schemathesis hooks for PathDB (loaded by scripts/schemathesis.sh through SCHEMATHESIS_HOOKS).

- POST /v1/import takes JSON lines (application/x-ndjson or application/jsonl): the generated
  string goes as is.
- Key paths: the OpenAPI document types them as plain strings, so most generated ones are
  refused with 400 invalid_path. Half the time a key path (the path parameter, or the paths in
  the bodies of POST /v1/get and /v1/transact) is a valid one instead, so that puts, gets,
  listings, histories and transactions also run on items that exist.
"""

import base64

import schemathesis
from hypothesis import strategies as st

schemathesis.serializer.alias("application/x-ndjson", "text/plain")
schemathesis.serializer.alias("application/jsonl", "text/plain")

_NAMESPACE = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True)
_ID = st.one_of(
    st.integers(min_value=-(10**6), max_value=10**6).map(str),
    st.from_regex(r"![1-9][0-9]{0,3}", fullmatch=True),
    st.from_regex(r"[a-z][a-z0-9 _.~\u00e9\u65e5-]{0,8}", fullmatch=True),
    st.binary(min_size=1, max_size=6).map(lambda b: "~" + base64.urlsafe_b64encode(b).decode().rstrip("=")),
)
_ELEMENT = st.tuples(_NAMESPACE, _ID).map(lambda e: f"{e[0]}-{e[1]}")
# Without the leading '/': the routes are /v1/items/{path}, /v1/list/{prefix}, ...
KEY_PATH = st.lists(_ELEMENT, min_size=1, max_size=4).map("/".join)


@schemathesis.hook
def flatmap_path_parameters(context, path_parameters):
    names = [name for name in ("path", "prefix") if name in (path_parameters or {})]
    if not names:
        return st.just(path_parameters)
    valid = KEY_PATH.map(lambda p: {**path_parameters, names[0]: p})
    return st.one_of(st.just(path_parameters), valid)


def _with_paths(body, paths):
    """`body` with each `path` string of /v1/transact's ops, or /v1/get's paths, replaced."""
    paths = iter(paths)
    if isinstance(body.get("paths"), list):
        return {**body, "paths": ["/" + next(paths) for _ in body["paths"]]}
    ops = [
        {**op, "path": "/" + next(paths)} if isinstance(op, dict) and "path" in op else op
        for op in body["ops"]
    ]
    return {**body, "ops": ops}


@schemathesis.hook
def flatmap_body(context, body):
    if not isinstance(body, dict):
        return st.just(body)
    if isinstance(body.get("paths"), list):
        n = len(body["paths"])
    elif isinstance(body.get("ops"), list):
        n = len(body["ops"])
    else:
        return st.just(body)
    # Distinct paths: a transaction refuses a path used twice.
    valid = st.lists(KEY_PATH, min_size=n, max_size=n, unique=True).map(lambda p: _with_paths(body, p))
    return st.one_of(st.just(body), valid)
