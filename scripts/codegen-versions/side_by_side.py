"""One client of the side-by-side run of two schema versions in scripts/codegen.sh.

    python side_by_side.py PACKAGE URL SECONDS LABEL

PACKAGE is a package that `pathdb codegen python` generated from one definition version of the
namespace `user` (its bundle, PACKAGE/pathdb-namespaces.json, has that version's schema). For
SECONDS seconds the client it makes (`create_client`, which speaks the package's
`SCHEMA_VERSIONS`; no retries, so that no error answer is hidden) reads and writes the items
/app-1/user-1 to /app-1/user-16, which clients of the other version write too: gets, listings,
puts and merge patches of values made from its own schema, a few deletes, and a few puts of a
value without a required member. Every value it reads (gets, listings, and the items its writes
and deletes answer) must fit its version's JSON Schema (checked here, for the keywords these
schemas use) and its TypedDict's keys, and say its version (`schema_version`).

The only error answers allowed are the deliberate ones: 404 for an item another client deleted
(a get, a merge without `create`, a delete) and 422 `schema_violation` for the value without a
required member. Every answer is counted as it arrives (a counting transport), so none is
missed. Prints one JSON line of counts; exits 1 on a misfit or any other error answer.
"""

from __future__ import annotations

import importlib
import json
import random
import sys
import time
import typing
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

import httpx

import pathdb

ITEMS = 16
PARENT = "/app-1"
NAMES = ["Ada", "Bob", "Cy", "Di", "Eve"]
KEYWORDS = {"type", "properties", "required", "additionalProperties", "enum", "minLength"}
TYPES: Dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
}


class Counting(httpx.HTTPTransport):
    """Counts every answer by its HTTP status."""

    def __init__(self) -> None:
        super().__init__()
        self.statuses: Counter[int] = Counter()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        self.statuses[response.status_code] += 1
        return response


def misfits(schema: Dict[str, Any], value: Any, at: str = "") -> List[str]:
    """How `value` does not fit `schema` (with the keywords of KEYWORDS only)."""
    where = at or "the value"
    unknown = set(schema) - KEYWORDS
    if unknown:
        return [f"{where}: the check does not know the keywords {sorted(unknown)}"]
    if "type" in schema and not TYPES[schema["type"]](value):
        return [f"{where}: {value!r} is not of type {schema['type']}"]
    out = []
    if "enum" in schema and value not in schema["enum"]:
        out.append(f"{where}: {value!r} is not one of {schema['enum']}")
    if isinstance(value, str) and len(value) < schema.get("minLength", 0):
        out.append(f"{where}: {value!r} is shorter than {schema['minLength']}")
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        out += [f"{where}: no {name!r}" for name in schema.get("required", []) if name not in value]
        for name, member in value.items():
            if name in properties:
                out += misfits(properties[name], member, f"{at}/{name}")
            elif schema.get("additionalProperties") is False:
                out.append(f"{where}: {name!r} is not one of its members")
    return out


def members(typed_dict: Any) -> Dict[str, Tuple[bool, Any]]:
    """A TypedDict's members: whether each is required, and its type. (From the type hints:
    `__required_keys__` misses a `NotRequired` written as a string annotation before 3.12.)"""
    out = {}
    for name, hint in typing.get_type_hints(typed_dict, include_extras=True).items():
        wrapper = getattr(typing.get_origin(hint), "_name", None)
        if wrapper in ("Required", "NotRequired"):
            out[name] = (wrapper == "Required", typing.get_args(hint)[0])
        else:
            out[name] = (typed_dict.__total__, hint)
    return out


def typed_misfits(typed: Dict[str, Tuple[bool, Any]], value: Any) -> List[str]:
    """How `value` is not a value of the TypedDict whose `members` are `typed`: its keys, and the
    members typed `str` or a `Literal`."""
    if not isinstance(value, dict):
        return [f"{value!r} is not a dict"]
    out = [f"no {n!r} (User)" for n, (required, _) in typed.items() if required and n not in value]
    for name, member in value.items():
        if name not in typed:
            out.append(f"{name!r} is not a member of User")
            continue
        hint = typed[name][1]
        if typing.get_origin(hint) is typing.Literal and member not in typing.get_args(hint):
            out.append(f"{name}: {member!r} is not one of User's {typing.get_args(hint)}")
        elif hint is str and not isinstance(member, str):
            out.append(f"{name}: {member!r} is not a str (User)")
    return out


def sample(schema: Dict[str, Any], rng: random.Random) -> Any:
    """A value that fits `schema`: its required members, and each other one half of the time."""
    if "enum" in schema:
        return rng.choice(schema["enum"])
    if schema.get("type") == "object":
        required = schema.get("required", [])
        return {
            name: sample(member, rng)
            for name, member in schema.get("properties", {}).items()
            if name in required or rng.random() < 0.5
        }
    if schema.get("type") == "string":
        return f"{rng.choice(NAMES)} {rng.randrange(1000)}"
    raise SystemExit(f"no sample for the schema {schema}")


def main(package: Path, url: str, seconds: float, label: str) -> int:
    sys.path.insert(0, str(package.parent))
    gen: Any = importlib.import_module(package.name)
    bundle = json.loads((package / "pathdb-namespaces.json").read_text(encoding="utf-8"))
    (definition,) = [d for d in bundle["namespaces"] if d["namespace"] == "user"]
    version, schema = definition["version"], definition["schema"]
    if gen.SCHEMA_VERSIONS != {"user": version}:
        raise SystemExit(f"SCHEMA_VERSIONS is {gen.SCHEMA_VERSIONS}, not user={version}")
    typed = members(gen.User)
    rng = random.Random(label)
    transport = Counting()
    ops: Counter[str] = Counter()
    misfits_by_op: Counter[str] = Counter()
    deliberate: Counter[str] = Counter()
    unexpected: Counter[str] = Counter()
    problems: List[str] = []
    checked = 0

    def check(item: pathdb.Item[Any], what: str) -> None:
        nonlocal checked
        checked += 1
        found = misfits(schema, item.value) + typed_misfits(typed, item.value)
        if item.schema_version != version:
            found.append(f"schema_version {item.schema_version}, not {version}")
        if found:
            misfits_by_op[what] += 1
        problems.extend(f"{what} {item.path}: {p}: {item.value!r}" for p in found)

    with gen.create_client(url, retries=0, transport=transport) as db:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            path = gen.user_path(rng.randrange(1, ITEMS + 1), PARENT)
            roll = rng.random()
            op = (
                "get" if roll < 0.30
                else "list" if roll < 0.45
                else "put" if roll < 0.70
                else "merge" if roll < 0.90
                else "delete" if roll < 0.96
                else "refused put"
            )  # fmt: skip
            ops[op] += 1
            try:
                if op == "get":
                    got = db.get(path, gen.User)
                    if got is None:
                        deliberate["404 get of a deleted item"] += 1
                    else:
                        check(got, op)
                elif op == "list":
                    for item in db.list(gen.user_prefix(PARENT), value_type=gen.User):
                        check(item, op)
                elif op == "put":
                    check(db.put(path, sample(schema, rng)), op)
                elif op == "merge":
                    member = rng.choice(sorted(schema["properties"]))
                    drop = member not in schema.get("required", []) and rng.random() < 0.3
                    patch = {member: None if drop else sample(schema["properties"][member], rng)}
                    check(db.merge(path, patch), op)
                elif op == "delete":
                    deleted = db.delete(path)
                    if deleted is None:
                        deliberate["404 delete of a deleted item"] += 1
                    else:
                        check(deleted, op)
                else:
                    value = sample(schema, rng)
                    del value[rng.choice(schema["required"])]
                    db.put(path, value)
                    problems.append(f"{op} {path}: {value!r} was taken")
            except pathdb.NotFound:
                if op != "merge":
                    raise
                deliberate["404 merge of a deleted item"] += 1
            except pathdb.SchemaViolation as e:
                if op != "refused put":
                    unexpected[f"{e.status} {e.code}"] += 1
                    problems.append(f"{op} {path}: {e}")
                else:
                    deliberate["422 put without a required member"] += 1
            except pathdb.PathDBError as e:
                unexpected[f"{e.status} {e.code}"] += 1
                problems.append(f"{op} {path}: {e}")

    errors = sum(n for status, n in transport.statuses.items() if not 200 <= status < 300)
    if errors != sum(deliberate.values()) + sum(unexpected.values()):
        problems.append(
            f"the server answered {errors} errors, {sum(deliberate.values())} of them deliberate"
            f" and {sum(unexpected.values())} not"
        )
    print(
        json.dumps(
            {
                "client": label,
                "version": version,
                "requests": sum(transport.statuses.values()),
                "statuses": {str(s): n for s, n in sorted(transport.statuses.items())},
                "ops": dict(sorted(ops.items())),
                "values checked": checked,
                "misfits": dict(sorted(misfits_by_op.items())),
                "deliberate": dict(sorted(deliberate.items())),
                "unexpected": dict(sorted(unexpected.items())),
                "problems": len(problems),
            }
        )
    )
    for problem in problems[:10]:
        print(f"{label}: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 5:
        raise SystemExit(__doc__)
    sys.exit(main(Path(sys.argv[1]).resolve(), sys.argv[2], float(sys.argv[3]), sys.argv[4]))
