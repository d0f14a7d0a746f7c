#!/usr/bin/env python3
"""A soak run of `pathdb serve`: mixed load for a while, sampling memory, files and latency.

Starts `pathdb serve` on a new database (`--cache-size` as given) and keeps it busy with:

- writers: puts (a quarter of them transactions of 2 puts and a delete), JSON Patch increments,
  deletes, over a bounded key space (`--groups` x 200 keys), so the live data reaches a steady
  size while the change log keeps growing;
- readers: gets and list pages of 100, forward and reverse;
- watchers: event streams (SSE) that each follow a group for about a minute, then reopen, and
  long polls (`wait=10`) in a loop.

Every `--interval` seconds it samples the server's resident memory (VmRSS), its open files
(/proc/PID/fd), and the p50/p99 of the requests answered in that interval, and writes
`soak.csv`, then `soak.png` (memory, files and p99 over time) into `--out`. It fails if a
request got an answer other than the expected ones, or if the server died.

Usage: bash scripts/soak.sh [--minutes 30] [--out target/soak] [--cache-size MB]
Linux only (reads /proc). Not part of the test suite: docs/reliability.md records a run.
"""

import argparse
import csv
import http.client
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

stop = threading.Event()
lock = threading.Lock()
latencies = []  # (op, seconds) answered since the last sample
counts = {}  # op -> requests answered
unexpected = []  # descriptions of answers no operation expects


def record(op, seconds):
    with lock:
        latencies.append((op, seconds))
        counts[op] = counts.get(op, 0) + 1


def fail(message):
    with lock:
        if len(unexpected) < 20:
            unexpected.append(message)


class Client:
    """One keep-alive connection, reopened when the server closes it."""

    def __init__(self, host, port):
        self.host, self.port = host, port
        self.conn = None

    def request(self, op, method, path, body=None, headers=None, expect=(200,)):
        for attempt in range(2):
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
            started = time.perf_counter()
            try:
                self.conn.request(method, path, body=body, headers=headers or {})
                response = self.conn.getresponse()
                data = response.read()
            except (ConnectionError, http.client.HTTPException, socket.timeout) as e:
                # A kept-alive connection the server closed (its idle timeout): reopen once.
                self.conn.close()
                self.conn = None
                if attempt == 1:
                    fail(f"{op} {path}: {e!r}")
                    return None, None
                continue
            record(op, time.perf_counter() - started)
            if response.status not in expect:
                fail(f"{op} {method} {path}: {response.status} {data[:200]!r}")
            return response.status, data
        return None, None


def key(rng, groups):
    return f"/soak-{rng.randrange(groups)}/item-{rng.randrange(200)}"


def writer(host, port, groups, seed):
    rng = random.Random(seed)
    client = Client(host, port)
    json_headers = {"Content-Type": "application/json"}
    while not stop.is_set():
        roll = rng.random()
        path = key(rng, groups)
        if roll < 0.45:
            value = json.dumps({"n": rng.randrange(1 << 30), "pad": "x" * rng.randrange(50, 2000)})
            client.request("put", "PUT", f"/v1/items{path}", value, json_headers, (200, 201))
        elif roll < 0.65:
            patch = json.dumps([{"op": "increment", "path": "/n", "value": 1}])
            headers = {"Content-Type": "application/json-patch+json"}
            # 404 when the item is not there: patches do not create by default.
            client.request("patch", "PATCH", f"/v1/items{path}", patch, headers, (200, 404))
        elif roll < 0.85:
            client.request("delete", "DELETE", f"/v1/items{path}", None, None, (200, 204, 404))
        else:
            group = f"/soak-{rng.randrange(groups)}"
            # Three different items: a transaction names each path once.
            a, b, c = rng.sample(range(200), 3)
            ops = [
                {"op": "put", "path": f"{group}/item-{a}", "value": {"n": 1}},
                {"op": "put", "path": f"{group}/item-{b}", "value": {"n": 2}},
                {"op": "delete", "path": f"{group}/item-{c}"},
            ]
            client.request("transact", "POST", "/v1/transact", json.dumps({"ops": ops}),
                           json_headers, (200, 409))


def reader(host, port, groups, seed):
    rng = random.Random(seed)
    client = Client(host, port)
    while not stop.is_set():
        if rng.random() < 0.7:
            client.request("get", "GET", f"/v1/items{key(rng, groups)}", expect=(200, 404))
        else:
            reverse = "&reverse=true" if rng.random() < 0.5 else ""
            group = f"soak-{rng.randrange(groups)}"
            client.request("list", "GET", f"/v1/list/{group}?limit=100{reverse}")


def streamer(host, port, groups, seed):
    """Event streams of a group, each open for about a minute."""
    rng = random.Random(seed)
    while not stop.is_set():
        group = f"soak-{rng.randrange(groups)}"
        try:
            conn = http.client.HTTPConnection(host, port, timeout=30)
            conn.request("GET", f"/v1/changes/{group}", headers={"Accept": "text/event-stream"})
            response = conn.getresponse()
            if response.status != 200:
                fail(f"sse {group}: {response.status}")
                time.sleep(1)
                continue
            until = time.monotonic() + rng.uniform(30, 90)
            while time.monotonic() < until and not stop.is_set():
                if not response.fp.readline():
                    break
            conn.close()
        except (OSError, http.client.HTTPException) as e:
            fail(f"sse {group}: {e!r}")
            time.sleep(1)


def poller(host, port, groups, seed):
    """Long polls (`wait=10`) of a group, each from the position the last one returned."""
    rng = random.Random(seed)
    client = Client(host, port)
    group = f"soak-{rng.randrange(groups)}"
    _, data = client.request("feed", "GET", f"/v1/changes/{group}")
    token = json.loads(data)["next_token"] if data else None
    while not stop.is_set():
        if token is None:
            time.sleep(1)
            _, data = client.request("feed", "GET", f"/v1/changes/{group}")
            token = json.loads(data)["next_token"] if data else None
            continue
        _, data = client.request("poll", "GET", f"/v1/changes/{group}?since={token}&wait=10")
        token = json.loads(data).get("next_token") if data else None


def sample(pid):
    rss = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) * 1024
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    return rss, fds


def percentile(values, p):
    if not values:
        return 0.0
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))]


def plot(rows, out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    minutes = [r["seconds"] / 60 for r in rows]
    fig, axes = plt.subplots(3, 1, figsize=(9, 8), sharex=True)
    axes[0].plot(minutes, [r["rss_mb"] for r in rows], color="tab:blue")
    axes[0].set_ylabel("RSS (MB)")
    axes[0].set_ylim(bottom=0)
    files = [r["open_files"] for r in rows]
    axes[1].plot(minutes, files, color="tab:green")
    axes[1].set_ylabel("open files")
    axes[1].set_ylim(0, max(files) * 1.25 + 1)
    axes[2].plot(minutes, [r["p99_ms"] for r in rows], label="p99", color="tab:red")
    axes[2].plot(minutes, [r["p50_ms"] for r in rows], label="p50", color="tab:orange")
    axes[2].set_ylabel("latency (ms)")
    axes[2].set_xlabel("minutes")
    axes[2].set_ylim(bottom=0)
    axes[2].legend()
    fig.suptitle("pathdb serve under mixed load (scripts/soak.sh)")
    fig.tight_layout()
    fig.savefig(out, dpi=100)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pathdb", default="target/release/pathdb")
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--interval", type=float, default=30)
    parser.add_argument("--out", default="target/soak")
    parser.add_argument("--groups", type=int, default=200)
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--readers", type=int, default=2)
    parser.add_argument("--streams", type=int, default=50)
    parser.add_argument("--polls", type=int, default=50)
    parser.add_argument("--cache-size", type=int, default=None, help="MB, passed to serve")
    parser.add_argument("--replot", action="store_true",
                        help="only draw soak.png again from the soak.csv in --out")
    args = parser.parse_args()
    if args.replot:
        with open(os.path.join(args.out, "soak.csv"), newline="") as f:
            rows = [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]
        plot(rows, os.path.join(args.out, "soak.png"))
        return
    os.makedirs(args.out, exist_ok=True)

    work = tempfile.mkdtemp(prefix="soak-")
    serve = [args.pathdb, "--db", os.path.join(work, "soak.db"), "serve", "--addr", "127.0.0.1:0"]
    if args.cache_size is not None:
        serve += ["--cache-size", str(args.cache_size)]
    server = subprocess.Popen(serve, stdout=subprocess.PIPE, stderr=open(os.path.join(args.out, "serve.log"), "w"),
                              text=True)
    line = server.stdout.readline().strip()
    if not line.startswith("listening on http://"):
        sys.exit(f"error: pathdb serve printed {line!r}")
    host, port = line.removeprefix("listening on http://").rsplit(":", 1)
    port = int(port)
    print(f"soak: {args.minutes} min on {line.removeprefix('listening on ')} (pid {server.pid}), "
          f"database in {work}", flush=True)

    workers = []
    kinds = [(writer, args.writers), (reader, args.readers), (streamer, args.streams),
             (poller, args.polls)]
    seed = 0
    for target, n in kinds:
        for _ in range(n):
            seed += 1
            t = threading.Thread(target=target, args=(host, port, args.groups, seed), daemon=True)
            t.start()
            workers.append(t)

    rows = []
    started = time.monotonic()
    end = started + args.minutes * 60
    csv_path = os.path.join(args.out, "soak.csv")
    with open(csv_path, "w", newline="") as f:
        fields = ["seconds", "rss_mb", "open_files", "requests", "p50_ms", "p99_ms"]
        out = csv.DictWriter(f, fieldnames=fields)
        out.writeheader()
        while time.monotonic() < end:
            time.sleep(min(args.interval, max(0.0, end - time.monotonic())))
            if server.poll() is not None:
                stop.set()
                sys.exit(f"error: pathdb serve exited with {server.returncode} (see {args.out}/serve.log)")
            with lock:
                window = [s for op, s in latencies if op not in ("poll",)]
                latencies.clear()
            rss, fds = sample(server.pid)
            row = {
                "seconds": round(time.monotonic() - started),
                "rss_mb": round(rss / 2**20, 1),
                "open_files": fds,
                "requests": len(window),
                "p50_ms": round(percentile(window, 0.50) * 1000, 2),
                "p99_ms": round(percentile(window, 0.99) * 1000, 2),
            }
            rows.append(row)
            out.writerow(row)
            f.flush()
            print(" ".join(f"{k}={v}" for k, v in row.items()), flush=True)

    stop.set()
    # What of the resident memory is live: ask glibc to give back what it holds free (through
    # gdb, when there is one), and sample again.
    time.sleep(5)
    idle_rss, _ = sample(server.pid)
    trimmed_rss = None
    if shutil.which("gdb"):
        subprocess.run(["gdb", "-p", str(server.pid), "-batch", "-ex", "call (int) malloc_trim(0)"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
        trimmed_rss, _ = sample(server.pid)
    server.terminate()
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
    db_size = os.path.getsize(os.path.join(work, "soak.db"))
    shutil.rmtree(work, ignore_errors=True)
    png = os.path.join(args.out, "soak.png")
    plot(rows, png)
    with lock:
        print("requests:", json.dumps(counts, sort_keys=True))
    rss = [r["rss_mb"] for r in rows]
    half = rows[len(rows) // 2:] if len(rows) > 1 else rows
    print(f"RSS: first {rss[0]} MB, max {max(rss)} MB, last {rss[-1]} MB; "
          f"second half {min(r['rss_mb'] for r in half)}-{max(r['rss_mb'] for r in half)} MB")
    print(f"RSS 5 s after the load stopped: {idle_rss / 2**20:.1f} MB" + (
        f"; after malloc_trim: {trimmed_rss / 2**20:.1f} MB" if trimmed_rss else ""))
    print(f"database file: {db_size / 2**20:.0f} MB at the end")
    print(f"open files: {min(r['open_files'] for r in rows)}-{max(r['open_files'] for r in rows)}")
    print(f"wrote {csv_path} and {png}")
    if unexpected:
        print("unexpected answers:", *unexpected, sep="\n  ")
        sys.exit(1)


if __name__ == "__main__":
    main()
