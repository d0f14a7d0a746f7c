#!/usr/bin/env python3
"""Stress and acceptance run of `Client.transaction` against a running `pathdb serve`.

    python clients/python/examples/transactions_stress.py --server http://127.0.0.1:7070 \\
        [--token T] [--clients 8] [--seconds 10] [--rounds 50] [transfers write-skew phantoms bench]

Parts (all by default), each on groups of its own (`--run N` picks their ids; random otherwise):

- transfers: `--accounts` accounts (100) with balance 100 each over `--groups` groups (10),
  `/bank-{run}{g:02}/account-{i}`; `--clients` threads do random transfers for `--seconds`
  (read two balances, refuse an overdraft, write two). Meanwhile a checker thread reads all
  accounts with one `POST /v1/get` (the route takes 100 paths) over and over and checks each
  snapshot sums to 100 x accounts with no negative balance; every few snapshots it also reads
  them in a read-only `transaction` (validated at its commit). At the end: the final balances,
  and committed transfers == put changes in the groups' change feeds since the start / 2.
- write-skew: `/hospital-{run}/doctor-1` and `-2` both on call; each round `--clients` threads
  run "take doctor k off call if the other is still on" (k = client % 2 + 1): never both off.
- phantoms: each round empties `/user-{run}/order`, then `--clients` threads each add an order
  if the listing shows fewer than 3 (even clients `put` a random path, odd ones `create`): at
  most 3 after each round.
- bench: a two-item read-modify-write through `transaction` on disjoint items (a group per
  thread) against two plain `put`s, for `--seconds` each; then every thread's read-modify-write
  on one item: commits/s and runs per commit. Both also check that no update was lost.

Prints a summary per part and exits 1 if any invariant broke (2 for a usage error). Uses the
installed `pathdb` client (`pip install ./clients/python`). Not a pytest module.
"""

from __future__ import annotations

import argparse
import multiprocessing
import random
import statistics
import sys
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, TypeVar

from pathdb import (
    Client,
    ConditionFailed,
    Delete,
    DeleteChange,
    Item,
    KeyPath,
    PathDBError,
    Put,
    PutChange,
    Transaction,
)

T = TypeVar("T")

PARTS = ("transfers", "write-skew", "phantoms", "bench")


@dataclass
class Outcomes:
    """What a thread's transactions did."""

    committed: int = 0
    refused: int = 0  # the callback decided not to write
    gave_up: int = 0  # ConditionFailed after max_attempts runs
    runs: List[int] = field(default_factory=list)  # runs per committed transaction
    errors: List[str] = field(default_factory=list)

    def merge(self, other: Outcomes) -> None:
        self.committed += other.committed
        self.refused += other.refused
        self.gave_up += other.gave_up
        self.runs += other.runs
        self.errors += other.errors


class Run:
    """The command line, and the failures found so far."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.failures: List[str] = []
        self.run_id: int = args.run if args.run is not None else random.randrange(1, 10**6)

    def client(self) -> Client:
        return Client(self.args.server, token=self.args.token, timeout=60.0)

    def fail(self, message: str) -> None:
        self.failures.append(message)
        print(f"   VIOLATION: {message}", flush=True)

    def counted(
        self, client: Client, fn: Callable[[Transaction], T], outcomes: Outcomes, wrote: Callable[[T], bool]
    ) -> Optional[T]:
        """Runs `fn` in a transaction and records the outcome: committed (with its runs),
        refused (`wrote(value)` false), gave up, or an error."""
        runs = 0

        def counting(tx: Transaction) -> T:
            nonlocal runs
            runs += 1
            return fn(tx)

        try:
            value = client.transaction(counting, max_attempts=self.args.max_attempts)
        except ConditionFailed:
            outcomes.gave_up += 1
            return None
        except PathDBError as e:
            outcomes.errors.append(f"{type(e).__name__} {e.status}: {e}")
            return None
        if wrote(value):
            outcomes.committed += 1
            outcomes.runs.append(runs)
        else:
            outcomes.refused += 1
        return value


def run_threads(n: int, target: Callable[[int], None]) -> None:
    threads = [threading.Thread(target=target, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def runs_summary(runs: Sequence[int]) -> str:
    if not runs:
        return "no commits"
    histogram = Counter(runs)
    shown = ", ".join(f"{k}: {histogram[k]}" for k in sorted(histogram))
    return f"runs per commit: mean {statistics.mean(runs):.2f}, max {max(runs)}; histogram {{{shown}}}"


def report_outcomes(run: Run, what: str, outcomes: Outcomes) -> None:
    print(
        f"   {what}: {outcomes.committed} committed, {outcomes.refused} refused, "
        f"{outcomes.gave_up} gave up after {run.args.max_attempts} runs, {len(outcomes.errors)} errors",
        flush=True,
    )
    print(f"   {runs_summary(outcomes.runs)}", flush=True)
    for error in sorted(set(outcomes.errors))[:5]:
        run.fail(f"{what}: server error: {error}")


def balance(item: Optional[Item]) -> int:
    if item is None:
        raise LookupError("an account is missing")
    return int(item.value["balance"])


# ------------------------------------------------------------------------------------------------
# Transfers


def checker(
    server: str,
    token: Optional[str],
    paths: List[str],
    total: int,
    stop: Any,
    results: Any,
) -> None:
    """The transfers' checker (a process of its own): until `stop`, one thread reads every account
    with one POST /v1/get over and over, another in read-only transactions (validated at their
    commit); each snapshot must sum to `total` with no negative balance. Puts its counts on
    `results`."""
    snapshots = {"raw": 0, "raw_bad": 0, "tx": 0, "tx_gave_up": 0, "tx_bad": 0}
    tx_runs: List[int] = []
    bad_examples: List[str] = []
    errors: List[str] = []
    lock = threading.Lock()
    accounts = [KeyPath.parse(p) for p in paths]

    def check(kind: str, items: Sequence[Optional[Item]]) -> None:
        present = [i for i in items if i is not None]
        balances = [balance(i) for i in present]
        with lock:
            snapshots[kind] += 1
            if len(present) != len(accounts) or sum(balances) != total or min(balances) < 0:
                snapshots[kind + "_bad"] += 1
                if len(bad_examples) < 5:
                    bad_examples.append(
                        f"{kind} snapshot: {len(present)} accounts, sum {sum(balances)} "
                        f"(off by {sum(balances) - total:+d}), min {min(balances) if balances else None}"
                    )

    def loop(kind: str) -> None:
        with Client(server, token=token, timeout=60.0) as c:
            while not stop.is_set():
                try:
                    if kind == "raw":
                        check("raw", c.get_many(accounts))  # one POST /v1/get of every account
                        continue
                    runs = 0

                    def snapshot(tx: Transaction) -> List[Optional[Item]]:
                        nonlocal runs
                        runs += 1
                        return tx.get_many(accounts)

                    try:
                        items = c.transaction(snapshot, max_attempts=64)
                    except ConditionFailed:
                        with lock:
                            snapshots["tx_gave_up"] += 1
                    else:
                        tx_runs.append(runs)
                        check("tx", items)
                except PathDBError as e:
                    with lock:
                        errors.append(f"checker: {type(e).__name__} {e.status}: {e}")
                    time.sleep(0.1)

    threads = [threading.Thread(target=loop, args=(kind,), daemon=True) for kind in ("raw", "tx")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    results.put((snapshots, tx_runs, bad_examples, errors))


def transfers(run: Run) -> None:
    args = run.args
    groups = [KeyPath().add("bank", run.run_id * 100 + g) for g in range(args.groups)]
    accounts = [groups[i % args.groups].add("account", i) for i in range(args.accounts)]
    total = 100 * args.accounts
    print(
        f"== transfers: {args.accounts} accounts in {args.groups} groups ({groups[0]} ...), "
        f"{args.clients} clients, {args.seconds} s",
        flush=True,
    )
    with run.client() as c:
        for g in groups:
            mine = [a for a in accounts if a.elements[0] == g.elements[0]]
            for start in range(0, len(mine), 100):
                c.transact([Put(a, {"balance": 100}) for a in mine[start : start + 100]])
        tokens = {str(g): c.changes(g).next_token for g in groups}
    outcomes = Outcomes()
    lock = threading.Lock()
    deadline = 0.0  # set when the workers start

    def worker(i: int) -> None:
        rng = random.Random(i * 7919 + run.run_id)
        mine = Outcomes()
        with run.client() as c:
            while time.monotonic() < deadline:
                src, dst = rng.sample(accounts, 2)
                amount = rng.randint(1, 50)

                def transfer(tx: Transaction) -> bool:
                    a, b = tx.get_many([src, dst])
                    have, other = balance(a), balance(b)
                    if have < amount:
                        return False  # refused: would overdraw
                    tx.put(src, {"balance": have - amount})
                    tx.put(dst, {"balance": other + amount})
                    return True

                run.counted(c, transfer, mine, bool)
        with lock:
            outcomes.merge(mine)

    # The checker runs in a process of its own: as a thread beside the workers it got about one
    # snapshot a second (the GIL), as a process dozens of times more.
    context = multiprocessing.get_context("spawn")
    stop = context.Event()
    results: Any = context.Queue()
    check_process = context.Process(
        target=checker,
        args=(args.server, args.token, [str(a) for a in accounts], total, stop, results),
        daemon=True,
    )
    check_process.start()
    started = time.monotonic()
    deadline = started + args.seconds
    run_threads(args.clients, worker)
    elapsed = time.monotonic() - started
    stop.set()
    snapshots, tx_runs, bad_examples, checker_errors = results.get(timeout=300)
    check_process.join()
    outcomes.errors += checker_errors
    report_outcomes(run, "transfers", outcomes)
    print(f"   {outcomes.committed / elapsed:.1f} transfers/s committed over {elapsed:.1f} s", flush=True)
    print(
        f"   checker: {snapshots['raw']} snapshots with one POST /v1/get of {len(accounts)} paths, "
        f"{snapshots['raw_bad']} broken; {snapshots['tx']} read-only transaction snapshots, "
        f"{snapshots['tx_bad']} broken, {snapshots['tx_gave_up']} gave up after 64 runs",
        flush=True,
    )
    if tx_runs:
        print(f"     read-only transactions of {len(accounts)} reads: {runs_summary(tx_runs)}", flush=True)
    for example in bad_examples:
        print(f"     {example}", flush=True)
    if snapshots["raw_bad"]:
        run.fail(
            f"{snapshots['raw_bad']} of {snapshots['raw']} POST /v1/get snapshots of all accounts "
            f"did not sum to {total} (or had a negative balance)"
        )
        if not snapshots["tx_bad"]:
            print(
                "     (the read-only transactions' snapshots held: the one-request reads were not "
                "snapshots, e.g. DynamoDB's get_many reads 25 paths per TransactGetItems)",
                flush=True,
            )
    if snapshots["tx_bad"]:
        run.fail(f"{snapshots['tx_bad']} read-only transaction snapshots did not sum to {total}")
    with run.client() as c:
        final = [balance(i) for i in c.get_many(accounts)]
        puts = deletes = 0
        for g in groups:
            since = tokens[str(g)]
            while True:
                page = c.changes(g, since, limit=1000)
                puts += sum(1 for ch in page.changes if isinstance(ch, PutChange))
                deletes += sum(1 for ch in page.changes if isinstance(ch, DeleteChange))
                since = page.next_token
                if not page.changes:
                    break
    print(f"   final: sum {sum(final)}, min {min(final)}, max {max(final)}", flush=True)
    if sum(final) != total or min(final) < 0:
        run.fail(f"final balances sum to {sum(final)}, min {min(final)}")
    print(
        f"   change feeds since the start: {puts} puts, {deletes} deletes; "
        f"2 x {outcomes.committed} committed = {2 * outcomes.committed}",
        flush=True,
    )
    if puts != 2 * outcomes.committed or deletes:
        run.fail(f"{puts} put changes for {outcomes.committed} committed transfers (expected {2 * outcomes.committed})")


# ------------------------------------------------------------------------------------------------
# Write skew


def write_skew(run: Run) -> None:
    args = run.args
    hospital = KeyPath().add("hospital", run.run_id)
    doctors = {1: hospital.add("doctor", 1), 2: hospital.add("doctor", 2)}
    print(f"== write skew: {hospital}/doctor-1 and -2, {args.clients} clients, {args.rounds} rounds", flush=True)
    outcomes = Outcomes()
    lock = threading.Lock()
    clients = [run.client() for _ in range(args.clients)]
    finals: Counter[str] = Counter()
    try:
        for _ in range(args.rounds):
            clients[0].transact([Put(doctors[1], {"on_call": True}), Put(doctors[2], {"on_call": True})])
            barrier = threading.Barrier(args.clients)

            def worker(i: int) -> None:
                me, other = doctors[i % 2 + 1], doctors[2 - i % 2]

                def off_call(tx: Transaction) -> bool:
                    mine, theirs = tx.get(me), tx.get(other)
                    if mine is None or theirs is None:
                        raise LookupError("a doctor is missing")
                    if not (mine.value["on_call"] and theirs.value["on_call"]):
                        return False  # the other is off already: stay on call
                    tx.put(me, {"on_call": False})
                    return True

                mine = Outcomes()
                barrier.wait()
                run.counted(clients[i], off_call, mine, bool)
                with lock:
                    outcomes.merge(mine)

            run_threads(args.clients, worker)
            d1, d2 = clients[0].get_many([doctors[1], doctors[2]])
            on = [bool(d is not None and d.value["on_call"]) for d in (d1, d2)]
            finals[f"{sum(on)} on call"] += 1
            if not any(on):
                run.fail(f"both doctors off call after a round ({d1}, {d2})")
    finally:
        for c in clients:
            c.close()
    report_outcomes(run, "take-off-call transactions", outcomes)
    print(f"   after each round: {dict(finals)} (1 on call is the only right answer)", flush=True)
    if finals["2 on call"]:
        run.fail(f"{finals['2 on call']} rounds ended with both doctors still on call")


# ------------------------------------------------------------------------------------------------
# Phantoms


def phantoms(run: Run) -> None:
    args = run.args
    user = KeyPath().add("user", run.run_id)
    orders = user.add("order")
    print(f"== phantoms: at most 3 orders under {orders}, {args.clients} clients, {args.rounds} rounds", flush=True)
    outcomes = Outcomes()
    lock = threading.Lock()
    clients = [run.client() for _ in range(args.clients)]
    counts: Counter[int] = Counter()
    try:
        clients[0].put(user.add("profile", 1), {"name": "Ada"})  # outside the listing's range
        for r in range(args.rounds):
            old = list(clients[0].list(orders))
            if old:
                clients[0].transact([Delete(i.path) for i in old])
            barrier = threading.Barrier(args.clients)

            def worker(i: int) -> None:
                def add_order(tx: Transaction) -> bool:
                    if len(list(tx.list(orders))) >= 3:
                        return False
                    if i % 2 == 0:
                        tx.put(user.add("order", uuid.uuid4()), {"by": i})
                    else:
                        tx.create(str(orders), {"by": i})
                    return True

                mine = Outcomes()
                barrier.wait()
                if i == 0 and r % 2 == 1:
                    clients[0].put(user.add("profile", 1), {"name": f"Ada {r}"})  # must not matter
                run.counted(clients[i], add_order, mine, bool)
                with lock:
                    outcomes.merge(mine)

            run_threads(args.clients, worker)
            n = len(list(clients[0].list(orders)))
            counts[n] += 1
            if n > 3:
                run.fail(f"round {r}: {n} orders under {orders}")
    finally:
        for c in clients:
            c.close()
    report_outcomes(run, "add-order transactions", outcomes)
    print(f"   orders after each round: {dict(sorted(counts.items()))} (at most 3; 3 unless some gave up)", flush=True)
    lone_order(run, orders)


def lone_order(run: Run, orders: KeyPath) -> None:
    """With no other writer, a listing's check has nothing to fail on: empty the orders, then one
    transaction adds one and must commit on its first run (a failure is a false conflict)."""
    with run.client() as c:
        old = list(c.list(orders))
        if old:
            c.transact([Delete(i.path) for i in old])

        def add_order(tx: Transaction) -> bool:
            if len(list(tx.list(orders))) >= 3:
                return False
            tx.create(str(orders), {"lone": True})
            return True

        try:
            added = c.transaction(add_order, max_attempts=1)
        except ConditionFailed as e:
            print(f"   lone transaction after emptying {orders}: failed its first run: {e.message}", flush=True)
            run.fail(f"a lone listing transaction failed with no concurrent writer (a false conflict): {e.message}")
            return
        print(f"   lone transaction after emptying {orders}: committed on its first run ({added})", flush=True)


# ------------------------------------------------------------------------------------------------
# Bench


def timed(run: Run, seconds: float, body: Callable[[int, Client, Outcomes], None]) -> Tuple[Outcomes, float]:
    """Runs `body(i, client, outcomes)` in a loop in each thread for `seconds`."""
    outcomes = Outcomes()
    lock = threading.Lock()
    barrier = threading.Barrier(run.args.clients + 1)
    deadline: List[float] = []

    def worker(i: int) -> None:
        mine = Outcomes()
        with run.client() as c:
            barrier.wait()
            while time.monotonic() < deadline[0]:
                body(i, c, mine)
        with lock:
            outcomes.merge(mine)

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(run.args.clients)]
    for t in threads:
        t.start()
    deadline.append(time.monotonic() + seconds)
    started = time.monotonic()
    barrier.wait()
    for t in threads:
        t.join()
    return outcomes, time.monotonic() - started


def bench(run: Run) -> None:
    args = run.args
    n = args.clients
    groups = [KeyPath().add("bench", run.run_id * 100 + i) for i in range(n)]
    pairs = [(g.add("item", 1), g.add("item", 2)) for g in groups]
    print(f"== bench: {n} clients, {args.seconds} s per measure", flush=True)
    with run.client() as c:
        for a, b in pairs:
            c.transact([Put(a, {"n": 0}), Put(b, {"n": 0})])

    per_thread = [0] * n  # each thread's commits (a thread writes only its own slot)

    def rmw(i: int, c: Client, out: Outcomes) -> None:
        a, b = pairs[i]

        def bump(tx: Transaction) -> bool:
            x, y = tx.get_many([a, b])
            if x is None or y is None:
                raise LookupError("a bench item is missing")
            tx.put(a, {"n": x.value["n"] + 1})
            tx.put(b, {"n": y.value["n"] + 1})
            return True

        if run.counted(c, bump, out, bool):
            per_thread[i] += 1

    tx_out, tx_elapsed = timed(run, args.seconds, rmw)
    with run.client() as c:
        for i, (a, b) in enumerate(pairs):
            x, y = c.get_many([a, b])
            pair = (x.value["n"] if x else None, y.value["n"] if y else None)
            if pair != (per_thread[i], per_thread[i]):
                run.fail(f"{a} and {b} hold {pair} after {per_thread[i]} committed read-modify-writes")

    def plain(i: int, c: Client, out: Outcomes) -> None:
        a, b = pairs[i]
        try:
            c.put(a, {"n": -1})
            c.put(b, {"n": -1})
        except PathDBError as e:
            out.errors.append(f"{type(e).__name__} {e.status}: {e}")
            return
        out.committed += 1

    put_out, put_elapsed = timed(run, args.seconds, plain)
    tx_rate, put_rate = tx_out.committed / tx_elapsed, put_out.committed / put_elapsed
    print(
        f"   disjoint items: transaction read-modify-write of 2 items {tx_rate:.1f}/s "
        f"({tx_out.committed} in {tx_elapsed:.1f} s, 2 requests each); "
        f"2 plain puts {put_rate:.1f} pairs/s ({put_out.committed}); ratio {tx_rate / put_rate if put_rate else float('nan'):.2f}",
        flush=True,
    )
    report_outcomes(run, "disjoint read-modify-writes", tx_out)
    for error in sorted(set(put_out.errors))[:5]:
        run.fail(f"plain puts: server error: {error}")

    hot = KeyPath().add("bench", run.run_id * 100 + 99).add("counter", 1)
    with run.client() as c:
        c.put(hot, {"n": 0})

    def hot_rmw(i: int, c: Client, out: Outcomes) -> None:
        def bump(tx: Transaction) -> bool:
            item = tx.get(hot)
            if item is None:
                raise LookupError("the counter is missing")
            tx.put(hot, {"n": item.value["n"] + 1})
            return True

        run.counted(c, bump, out, bool)

    hot_out, hot_elapsed = timed(run, args.seconds, hot_rmw)
    print(
        f"   one item, {n} clients: {hot_out.committed / hot_elapsed:.1f} commits/s "
        f"({hot_out.committed} in {hot_elapsed:.1f} s)",
        flush=True,
    )
    report_outcomes(run, "hot read-modify-writes", hot_out)
    with run.client() as c:
        counter = c.get(hot)
    got = counter.value["n"] if counter is not None else None
    print(f"   counter {got} = {hot_out.committed} commits: {'OK' if got == hot_out.committed else 'LOST UPDATES'}", flush=True)
    if got != hot_out.committed:
        run.fail(f"the hot counter is {got} after {hot_out.committed} committed increments")


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        description="Stress and acceptance run of PathDB's interactive transactions (see the module docstring)."
    )
    parser.add_argument("parts", nargs="*", metavar="part", help=f"parts to run: {', '.join(PARTS)} (all by default)")
    parser.add_argument("--server", required=True, help="the server's URL, e.g. http://127.0.0.1:7070")
    parser.add_argument("--token", default=None, help="a read-write token, when the server has tokens")
    parser.add_argument("--clients", type=int, default=8, help="threads, each with a client of its own")
    parser.add_argument("--seconds", type=float, default=10.0, help="how long transfers and each bench measure run")
    parser.add_argument("--rounds", type=int, default=50, help="rounds of write-skew and phantoms")
    parser.add_argument("--accounts", type=int, default=100, help="transfer accounts (at most 100: one POST /v1/get)")
    parser.add_argument("--groups", type=int, default=10, help="groups the accounts are spread over")
    parser.add_argument("--max-attempts", type=int, default=16, help="transaction(max_attempts=...)")
    parser.add_argument("--run", type=int, default=None, help="the id in this run's group names (random by default)")
    args = parser.parse_args(argv)
    if not 2 <= args.accounts <= 100 or args.groups < 1 or args.clients < 1:
        parser.error("--accounts is 2..=100, --groups and --clients at least 1")
    unknown = [p for p in args.parts if p not in PARTS]
    if unknown:
        parser.error(f"unknown parts {unknown}: choose from {', '.join(PARTS)}")
    parts = [p for p in PARTS if not args.parts or p in args.parts]
    run = Run(args)
    print(f"run {run.run_id} against {args.server}: {', '.join(parts)}", flush=True)
    started = time.monotonic()
    for part in parts:
        {"transfers": transfers, "write-skew": write_skew, "phantoms": phantoms, "bench": bench}[part](run)
    print(f"\n{len(run.failures)} violations in {time.monotonic() - started:.1f} s", flush=True)
    for failure in run.failures:
        print(f"  - {failure}", flush=True)
    print("FAIL" if run.failures else "PASS", flush=True)
    return 1 if run.failures else 0


if __name__ == "__main__":
    sys.exit(main())
