#!/usr/bin/env python3
"""What a `pathdb serve` connection and change stream cost in memory (docs/reliability.md).

Starts a server per case on a new database, reads its resident memory (VmRSS), holds N
connections of one kind open, reads it again, and prints the difference per connection:

- silent: connected, nothing sent (waiting for its first request's headers);
- keep-alive: one request answered, then idle;
- sse: an event stream of a group of its own (`Accept: text/event-stream`);
- long-poll: a long poll (`wait=60`) of a group of its own.

Kernel socket buffers are not in a process's RSS: count them apart (`ss -m`).

First it prints the base: a new server's RSS at start and after a few requests. With
`--cache-items K`, it also fills a database with K items of 4 KiB (`pathdb bench http`'s
preload) and reads them at random for 20 s, under `--cache-size` 64 and 1024 (the default), and
prints the RSS each reached: what redb's page cache adds.

With `--follower-cost`, it measures instead what N followers of other groups (half event
streams, half long polls) cost writes: the server's CPU time per PUT and the PUT p50/p99 of
`pathdb bench http --mix put=1` (10 s, 8 workers) with none, with N open, and with none again.
CPU per PUT is the robust figure; p99 moves with whatever else the machine runs.

Usage: python3 scripts/connection-memory.py [--pathdb target/release/pathdb] [-n 2000]
       [--cache-items 60000] [--follower-cost]
Linux only (reads /proc). Needs an open-file limit above N for this process too.
"""

import argparse
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def read_head(sock):
    """The response head (bytes up to the blank line); the rest stays unread."""
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        byte = sock.recv(1)
        if not byte:
            raise RuntimeError(f"closed after {head!r}")
        head += byte
    return head


def read_response(sock):
    head = read_head(sock).decode()
    length = next(
        int(line.split(":", 1)[1])
        for line in head.split("\r\n")
        if line.lower().startswith("content-length:")
    )
    body = b""
    while len(body) < length:
        body += sock.recv(length - len(body))
    return head, body


def get(path, headers=()):
    lines = [f"GET {path} HTTP/1.1", "Host: 127.0.0.1", *headers, "", ""]
    return "\r\n".join(lines).encode()


def open_case(kind, addr, n):
    socks = []
    for i in range(n):
        sock = socket.create_connection(addr)
        if kind == "keep-alive":
            sock.sendall(get("/healthz"))
            read_response(sock)
        elif kind == "sse":
            sock.sendall(get(f"/v1/changes/mem-{i}", ["Accept: text/event-stream"]))
            head = read_head(sock)
            assert head.startswith(b"HTTP/1.1 200"), head
        elif kind == "long-poll":
            sock.sendall(get(f"/v1/changes/mem-{i}"))
            _, body = read_response(sock)
            token = json.loads(body)["next_token"]
            sock.sendall(get(f"/v1/changes/mem-{i}?since={token}&wait=60"))
        socks.append(sock)
    return socks


def start(pathdb, db, extra):
    """`pathdb serve` on `db`: the process and its address."""
    server = subprocess.Popen(
        [pathdb, "--db", db, "serve", "--addr", "127.0.0.1:0", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = server.stdout.readline()
    host, port = line.strip().removeprefix("listening on http://").rsplit(":", 1)
    return server, (host, int(port))


def base(pathdb):
    """RSS (KiB) of a new server at start, and after 20 requests and a long poll."""
    with tempfile.TemporaryDirectory() as tmp:
        server, addr = start(pathdb, os.path.join(tmp, "t.pathdb"), [])
        try:
            time.sleep(0.5)
            at_start = rss_kib(server.pid)
            for sock in open_case("keep-alive", addr, 20) + open_case("long-poll", addr, 1):
                sock.close()
            time.sleep(0.5)
            return at_start, rss_kib(server.pid)
        finally:
            server.terminate()
            server.wait()


def cache(pathdb, items, cache_mib, seconds=20):
    """RSS (KiB) of a server with `--cache-size cache_mib` after reading `items` items of 4 KiB
    at random for `seconds`, and the database file's size (MiB)."""
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "t.pathdb")
        bench = [pathdb, "bench", "http", "--concurrency", "16", "--keys", str(items),
                 "--groups", "1000", "--value-bytes", "4096"]
        server, addr = start(pathdb, db, [])
        try:
            url = f"http://{addr[0]}:{addr[1]}"
            subprocess.run(bench + ["--url", url, "--duration", "0.1", "--mix", "put=1"],
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        finally:
            server.terminate()
            server.wait()
        size = os.path.getsize(db) / 2**20
        server, addr = start(pathdb, db, ["--cache-size", str(cache_mib)])
        try:
            url = f"http://{addr[0]}:{addr[1]}"
            subprocess.run(bench + ["--url", url, "--no-preload", "--duration", str(seconds),
                                    "--mix", "get=1"],
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            return rss_kib(server.pid), size
        finally:
            server.terminate()
            server.wait()


def cpu_seconds(pid):
    """User and system CPU time of `pid` so far."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def follower_cost(pathdb, n):
    with tempfile.TemporaryDirectory() as tmp:
        server, addr = start(pathdb, os.path.join(tmp, "t.pathdb"), [])
        url = f"http://{addr[0]}:{addr[1]}"
        bench = [pathdb, "bench", "http", "--url", url, "--concurrency", "8", "--duration", "10",
                 "--mix", "put=1", "--keys", "10000", "--json"]

        def run(label, preload):
            before = cpu_seconds(server.pid)
            out = subprocess.run(bench + ([] if preload else ["--no-preload"]), check=True,
                                 capture_output=True, text=True).stdout
            spent = cpu_seconds(server.pid) - before
            report = json.loads(out)
            puts, latency = report["requests"], report["latency_ms"]
            per_put = "" if preload else f", {spent / puts * 1e6:.0f} us server CPU per put"
            print(f"{label:<26} {puts:>6} puts, p50 {latency['p50']:.3f} ms, "
                  f"p99 {latency['p99']:.3f} ms{per_put}")

        try:
            run("first run, after a preload", True)
            run("no followers", False)
            followers = open_case("sse", addr, n // 2) + open_case("long-poll", addr, n - n // 2)
            time.sleep(1.0)
            before = cpu_seconds(server.pid)
            time.sleep(5.0)
            print(f"{n} followers open and idle: {cpu_seconds(server.pid) - before:.2f} s "
                  "server CPU in 5 s")
            run(f"{n} followers", False)
            for sock in followers:
                sock.close()
            time.sleep(1.0)
            run("no followers again", False)
        finally:
            server.terminate()
            server.wait()


def measure(pathdb, kind, n):
    with tempfile.TemporaryDirectory() as tmp:
        server, addr = start(pathdb, os.path.join(tmp, "t.pathdb"), [
            "--header-timeout", "3600", "--idle-timeout", "3600",
            "--max-connections", str(n + 100), "--max-streams", str(n + 100)])
        try:
            # Warm up: the runtime's workers, the router, a feed read.
            warm = open_case("long-poll" if kind == "long-poll" else "keep-alive", addr, 20)
            for sock in warm:
                sock.close()
            time.sleep(0.5)
            before = rss_kib(server.pid)
            socks = open_case(kind, addr, n)
            time.sleep(1.0)
            after = rss_kib(server.pid)
            for sock in socks:
                sock.close()
            return before, after
        finally:
            server.terminate()
            server.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pathdb", default="target/release/pathdb")
    parser.add_argument("-n", type=int, default=2000)
    parser.add_argument("--cache-items", type=int, default=0)
    parser.add_argument("--follower-cost", action="store_true")
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if hard < args.n + 100:
        sys.exit(f"the open-file limit ({hard}) is too low for -n {args.n}")
    if args.follower_cost:
        follower_cost(args.pathdb, args.n)
        return
    at_start, warm = base(args.pathdb)
    print(f"base: {at_start} KiB at start, {warm} KiB after 20 requests and a long poll")
    print(f"{'case':<11} {'n':>6} {'RSS before':>11} {'RSS after':>10} {'per conn.':>10}")
    for kind in ["silent", "keep-alive", "sse", "long-poll"]:
        before, after = measure(args.pathdb, kind, args.n)
        per = (after - before) / args.n
        print(f"{kind:<11} {args.n:>6} {before:>8} KiB {after:>7} KiB {per:>6.1f} KiB")
    for cache_mib in [64, 1024] if args.cache_items else []:
        rss, size = cache(args.pathdb, args.cache_items, cache_mib)
        print(f"cache: --cache-size {cache_mib}: {rss} KiB after random reads of "
              f"{args.cache_items} items ({size:.0f} MiB file)")


if __name__ == "__main__":
    main()
