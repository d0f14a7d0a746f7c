#!/usr/bin/env python3
"""Splits a profile of durable puts (scripts/profile-put.sh) into its parts.

    profile-put-split.py PUTS FILE...                  # callgrind files, one per thread
    profile-put-split.py --folded US_PER_PUT FILE      # perf samples folded by inferno

The second form splits the server's CPU time per put (measured from /proc by the same run) by
the share of perf's samples in each thread and part.

FILE is one callgrind output per thread (valgrind --separate-threads=yes). Each thread is named
by what it runs: the commit thread runs the store's commit loop, the checkpoint thread puts the
overlay's rows into redb, an HTTP worker runs hyper; the rest (the sweeper, the archive, idle runtime threads) are "other". Inside them, a part's
instructions are the inclusive cost of the functions that begin it (callgrind_annotate
--inclusive=yes), divided by PUTS. Prints a Markdown table, instructions per put.
"""

import re
import subprocess
import sys

# (thread, part, the functions that begin it: a regex on callgrind's function names). A part
# is the most costly matching function's inclusive cost, so nested matches do not add up twice.
PARTS = [
    ("HTTP workers", "planning the write (read, validate, plan the batch)", r"pathdb_store::write::commit::Db<B>::plan"),
    ("HTTP workers", "of which the change log entry", r"pathdb_store::write::stages::changelog::log_changes"),
    ("HTTP workers", "the body read and parsed", r"pathdb_server::calls::body_value"),
    ("commit thread", "applying the batches (checked and written into the overlay)", r"pathdb_store::backend::file::apply"),
    ("commit thread", "the journal (encode and append; fdatasync is a system call)", r"pathdb_store::backend::journal::Journal::"),
    ("commit thread", "a group too large for the journal, into redb", r"pathdb_store::backend::file::commit_direct"),
    ("checkpoint thread", "the overlay's rows into redb (inserts)", r"pathdb_store::backend::file::put::put_sorted"),
    ("checkpoint thread", "the durable redb commit (pages written, checksums, freed-page lists)", r"redb::transactions::WriteTransaction::commit(_with)?$"),
]


def annotate(path):
    """(total instructions, [(inclusive instructions, function name)]) of one callgrind file."""
    out = subprocess.run(
        ["callgrind_annotate", "--inclusive=yes", "--threshold=100", path],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    total = 0
    functions = []
    for line in out.splitlines():
        m = re.match(r"^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.*?)\s*(\[.*\])?$", line)
        if not m:
            continue
        count = int(m.group(1).replace(",", ""))
        name = m.group(2)
        if name.startswith("PROGRAM TOTALS"):
            total = count
            continue
        # "file:function" (the file is ??? without line tables)
        name = name.split(":", 1)[1] if ":" in name and not name.startswith("<") else name
        functions.append((count, name))
    if not total and functions:
        total = max(c for c, _ in functions)
    return total, functions


def kind(functions):
    names = " ".join(name for _, name in functions[:100])
    if "pathdb_store::backend::file::committer_loop" in names:
        return "commit thread"
    if "hyper::" in names:
        return "HTTP workers"
    # Checkpoints run on a thread of their own beside the committer
    # (crates/pathdb-store/src/backend/file/put.rs).
    if "pathdb_store::backend::file::put_layer" in names or "put::put_sorted" in names:
        return "checkpoint thread"
    return "other"


def folded(us_per_put, path):
    """The parts as shares of perf's samples (stacks folded by inferno-collapse-perf)."""
    total = 0
    threads = {}
    parts = {}
    patterns = [(t, part, re.compile(p)) for t, part, p in PARTS]
    with open(path) as f:
        for line in f:
            stack, _, count = line.rstrip().rpartition(" ")
            n = int(count)
            total += n
            frames = stack.split(";")
            if "committer_loop" in stack:
                thread = "commit thread"
            elif "hyper::" in stack or frames[0].startswith("tokio"):
                thread = "HTTP workers"
            elif frames[0].startswith("pathdb-checkpo") or "put::put_sorted" in stack:
                thread = "checkpoint thread"
            else:
                thread = "other"
            threads[thread] = threads.get(thread, 0) + n
            for t, part, pattern in patterns:
                if t == thread and any(pattern.search(fr) for fr in frames):
                    parts[(t, part)] = parts.get((t, part), 0) + n
    print(f"{us_per_put:.1f} us of server CPU per put, {total:,} samples\n")
    table(
        "share of the server's CPU | us per put",
        threads,
        parts,
        lambda n: f"{n / total:.1%} | {n / total * us_per_put:.1f}",
    )


def table(columns, threads, parts, cells):
    """The Markdown table of `threads` and their `parts` (counts), each count shown by `cells`."""
    print(f"| thread | part | {columns} |")
    print("| --- | --- |" + " ---: |" * (columns.count("|") + 1))
    for thread in ("HTTP workers", "commit thread", "checkpoint thread", "other"):
        if thread not in threads:
            continue
        print(f"| {thread} | all of it | {cells(threads[thread])} |")
        for (t, part), count in parts.items():
            if t == thread:
                print(f"| | {part} | {cells(count)} |")


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--folded":
        folded(float(sys.argv[2]), sys.argv[3])
        return
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    puts = int(sys.argv[1])
    threads = {}
    parts = {}
    for path in sys.argv[2:]:
        total, functions = annotate(path)
        if not total:
            continue
        k = kind(functions)
        threads[k] = threads.get(k, 0) + total
        for thread, part, pattern in PARTS:
            if thread != k:
                continue
            matching = [c for c, name in functions if re.search(pattern, name)]
            if matching:
                parts[(thread, part)] = parts.get((thread, part), 0) + max(matching)
    every = sum(threads.values())
    print(f"{puts} puts, {every // max(puts, 1):,} instructions per put\n")
    table("instructions per put", threads, parts, lambda n: f"{n // max(puts, 1):,}")


if __name__ == "__main__":
    main()
