#!/usr/bin/env python3
"""The official JSON Schema Test Suite (draft 2020-12) through PathDB's HTTP API (issue 34).

For every test group of scripts/json-schema-suite/draft2020-12/*.json (a schema and its tests),
it PUTs the schema as the definition of a namespace of its own (`PUT /v1/namespaces/s<n>`,
body `{"schema": ...}`), then PUTs each test's data as an item of that namespace
(`PUT /v1/items/s<n>-<i>`) and compares the answer with the suite: 2xx where the suite says
valid, 422 where it says invalid. Anything else is a disagreement with its reason: a 422 for
valid data, a 2xx for invalid data, a 400 because PathDB refuses the data as I-JSON (a lone
surrogate, say), or a schema PathDB refuses (400 invalid_schema), which fails every test of its
group.

Groups whose schema needs a document of the suite's remotes/ directory (served by its own
runners at http://localhost:1234/) are skipped and counted: a `$ref`, `$dynamicRef` or
`$schema` that resolves (against the `$id`s around it) to a http://localhost:1234/ URI that no
`$id` of the schema itself defines. A schema that merely names itself http://localhost:1234/...
in its `$id` and refers to its own parts runs. refRemote.json is not vendored at all.

Numbers are sent exactly as the suite writes them (1.0 stays 1.0, 1e308 stays 1e308), strings
with \\u escapes; one keep-alive connection carries every request.

Usage: python3 scripts/json-schema-suite.py URL [--token TOKEN] [--min 99] [--markdown FILE]
                                            [--only SUBSTRING] [--suite DIR]
The token, when the server has tokens, needs the admin scope. Exits 1 when fewer than --min
percent of the cases agree (or none ran), 2 on a usage or connection error.
"""

import argparse
import http.client
import json
import os
import socket
import sys
import time
import urllib.parse

REMOTES = "http://localhost:1234/"
HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_SUITE = os.path.join(HERE, "json-schema-suite", "draft2020-12")


class Num:
    """A JSON number kept as the suite's text, so it is sent unchanged."""

    __slots__ = ("text",)

    def __init__(self, text):
        self.text = text


def load(path):
    def members(pairs):
        obj = {}
        for key, value in pairs:
            if key in obj:
                raise ValueError("%s: duplicate member %r" % (path, key))
            obj[key] = value
        return obj

    def constant(name):
        raise ValueError("%s: %s is not JSON" % (path, name))

    with open(path, encoding="utf-8") as f:
        return json.load(f, parse_int=Num, parse_float=Num, parse_constant=constant,
                         object_pairs_hook=members)


def dump(value):
    out = []

    def put(v):
        if isinstance(v, Num):
            out.append(v.text)
        elif isinstance(v, dict):
            out.append("{")
            for n, (k, m) in enumerate(v.items()):
                if n:
                    out.append(",")
                out.append(json.dumps(k))
                out.append(":")
                put(m)
            out.append("}")
        elif isinstance(v, list):
            out.append("[")
            for n, m in enumerate(v):
                if n:
                    out.append(",")
                put(m)
            out.append("]")
        else:  # str, bool, None
            out.append(json.dumps(v))

    put(value)
    return "".join(out)


def remote_refs(schema):
    """The http://localhost:1234/ documents the schema refers to but does not define itself."""
    ids, refs = set(), []

    def walk(node, base):
        if isinstance(node, dict):
            if isinstance(node.get("$id"), str):
                base = urllib.parse.urljoin(base, node["$id"])
                ids.add(urllib.parse.urldefrag(base)[0])
            for key in ("$ref", "$dynamicRef", "$schema"):
                if isinstance(node.get(key), str):
                    refs.append(urllib.parse.urldefrag(urllib.parse.urljoin(base, node[key]))[0])
            for v in node.values():
                walk(v, base)
        elif isinstance(node, list):
            for v in node:
                walk(v, base)

    walk(schema, "")
    return sorted({r for r in refs if r.startswith(REMOTES) and r not in ids})


class Client:
    """One keep-alive HTTP/1.1 connection; reconnects once if the server closed it."""

    def __init__(self, url, token):
        u = urllib.parse.urlsplit(url)
        if u.scheme != "http" or not u.hostname:
            raise SystemExit("error: the server URL must be http://HOST:PORT, not %r" % url)
        self.host, self.port = u.hostname, u.port or 80
        self.prefix = u.path.rstrip("/")
        self.headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if token:
            self.headers["Authorization"] = "Bearer " + token
        self.conn = None
        self.requests = 0

    def put(self, path, body):
        data = body.encode("ascii")  # dump() escapes every non-ASCII character
        for attempt in (0, 1):
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
                    self.conn.connect()
                    # http.client sends the headers and the body in two writes: without
                    # TCP_NODELAY, Nagle and the server's delayed ACK cost 40 ms a request.
                    self.conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                self.conn.request("PUT", self.prefix + path, body=data, headers=self.headers)
                resp = self.conn.getresponse()
                raw = resp.read()
            except (http.client.HTTPException, OSError):
                if self.conn is not None:
                    self.conn.close()
                self.conn = None
                if attempt:
                    raise
                continue
            if resp.will_close:
                self.conn.close()
                self.conn = None
            self.requests += 1
            try:
                answer = json.loads(raw) if raw else None
            except ValueError:
                answer = raw.decode("utf-8", "replace")
            return resp.status, answer


def why(status, answer):
    """The status, error code and message of an answer, on one line."""
    text = str(status)
    err = answer.get("error") if isinstance(answer, dict) else None
    if isinstance(err, dict):
        text += " %s: %s" % (err.get("code"), err.get("message"))
        violations = err.get("violations")
        if isinstance(violations, list) and violations:
            v = violations[0]
            if isinstance(v, dict):
                text += " [%s at %r, schema %r]" % (v.get("message"), v.get("instance_path"),
                                                   v.get("schema_path"))
            if len(violations) > 1:
                text += " (+%d more)" % (len(violations) - 1)
    elif answer is not None and not (200 <= status < 300):
        text += " " + json.dumps(answer)[:200]
    return " ".join(text.split())


def md_cell(text):
    return " ".join(str(text).split()).replace("\\", "\\\\").replace("|", "\\|").replace("`", "\\`")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("url", help="the server, e.g. http://127.0.0.1:7070")
    ap.add_argument("--token", default=os.environ.get("PATHDB_TOKEN"),
                    help="a bearer token with the admin scope (default: $PATHDB_TOKEN)")
    ap.add_argument("--min", type=float, default=99.0,
                    help="fail below this percentage of agreeing cases (default 99)")
    ap.add_argument("--markdown", metavar="FILE", help="also write the disagreements there")
    ap.add_argument("--only", metavar="SUBSTRING", help="only the files whose name contains it")
    ap.add_argument("--suite", default=DEFAULT_SUITE, help="the directory of the suite's files")
    args = ap.parse_args()

    files = sorted(f for f in os.listdir(args.suite) if f.endswith(".json"))
    if args.only:
        files = [f for f in files if args.only in f]
    if not files:
        raise SystemExit("error: no suite files in %s" % args.suite)

    client = Client(args.url, args.token)
    started = time.monotonic()
    groups = run = agree = 0
    skipped = []  # (file, group, tests, remote URIs)
    disagree = []  # (file, group, test, expected, got)
    ns_number = 0
    for name in files:
        for group in load(os.path.join(args.suite, name)):
            groups += 1
            schema, tests = group["schema"], group["tests"]
            remotes = remote_refs(schema)
            if remotes:
                skipped.append((name, group["description"], len(tests), remotes))
                continue
            ns_number += 1
            ns = "s%d" % ns_number
            try:
                status, answer = client.put("/v1/namespaces/" + ns, '{"schema":%s}' % dump(schema))
            except (http.client.HTTPException, OSError) as e:
                raise SystemExit("error: PUT /v1/namespaces/%s: %s" % (ns, e)) from None
            schema_refused = None
            if status not in (200, 201):
                schema_refused = "schema refused: " + why(status, answer)
            for i, test in enumerate(tests):
                run += 1
                expected = "valid (2xx)" if test["valid"] else "invalid (422)"
                if schema_refused:
                    disagree.append((name, group["description"], test["description"], expected,
                                     schema_refused))
                    continue
                path = "/v1/items/%s-%d" % (ns, i)
                try:
                    status, answer = client.put(path, dump(test["data"]))
                except (http.client.HTTPException, OSError) as e:
                    raise SystemExit("error: PUT %s: %s" % (path, e)) from None
                ok = (200 <= status < 300) if test["valid"] else status == 422
                if ok and not test["valid"]:
                    err = answer.get("error") if isinstance(answer, dict) else None
                    ok = isinstance(err, dict) and err.get("code") == "schema_violation"
                if ok:
                    agree += 1
                else:
                    disagree.append((name, group["description"], test["description"], expected,
                                     why(status, answer)))
    seconds = time.monotonic() - started

    pct = 100.0 * agree / run if run else 0.0
    skipped_cases = sum(s[2] for s in skipped)
    print("json-schema-suite: draft 2020-12, %d files, %d groups" % (len(files), groups))
    print("skipped: %d groups (%d cases) that need the suite's remotes at %s"
          % (len(skipped), skipped_cases, REMOTES))
    for name, desc, n, remotes in skipped:
        print("  %s: %s (%d cases; %s)" % (name, desc, n, ", ".join(remotes)))
    print("disagreements: %d" % len(disagree))
    for name, desc, test, expected, got in disagree:
        print("  %s | %s | %s | expected %s | got %s" % (name, desc, test, expected, got))
    print("%d requests in %.1f s" % (client.requests, seconds))
    summary = ("json-schema-suite: %d cases run, %d agree (%.2f%%), %d disagree; %d groups (%d cases) "
               "skipped" % (run, agree, pct, len(disagree), len(skipped), skipped_cases))
    print(summary)

    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as f:
            f.write("%d cases run, %d agree (%.2f%%), %d disagree; %d groups (%d cases) skipped "
                    "because they need the suite's remotes.\n\n"
                    % (run, agree, pct, len(disagree), len(skipped), skipped_cases))
            if disagree:
                f.write("| file | group | test | expected | PathDB answered |\n")
                f.write("| --- | --- | --- | --- | --- |\n")
                for row in disagree:
                    f.write("| " + " | ".join(md_cell(c) for c in row) + " |\n")
            else:
                f.write("No case disagrees.\n")
            if skipped:
                f.write("\nSkipped (they need a document of the suite's remotes):\n\n")
                for name, desc, n, remotes in skipped:
                    f.write("- %s: %s (%d cases; %s)\n"
                            % (name, md_cell(desc), n, ", ".join("`%s`" % r for r in remotes)))

    if run == 0 or pct < args.min:
        print("error: %.2f%% of the cases agree, fewer than the %g%% required" % (pct, args.min),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
