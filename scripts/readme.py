#!/usr/bin/env python3
"""Runs the console blocks of README.md and docs/*.md and compares their output with the docs.

    python3 scripts/readme.py [--pathdb target/debug/pathdb] [FILE.md ...]

(scripts/readme.sh builds target/debug/pathdb and calls this.) Each page runs in a fresh
temporary directory, its blocks in order, as a newcomer would type them:

- A console block is a fenced block whose info string is `console`. A line starting with `$ `
  is a command (a line ending with `\\` continues it); the lines after it, up to the next `$ `
  or the end of the block, are its output as the docs show it. Other fenced blocks (```sh,
  ```python, ...) are not run.
- Commands run one at a time in bash, in the page's directory, with target/debug first on PATH
  (so `pathdb` is the build under test), HOME in the temporary directory and no PATHDB_*
  variables from the caller. A page's commands share variables and the working directory, as
  one shell session would (`T=$(...)`, `export PATHDB_SERVER=...`, `cd`), and history
  expansion is on, as in an interactive shell: an unquoted `!1500` fails, as it would there.
- Output is compared only where the docs show some: stdout and stderr together, each line
  without trailing blanks. In the docs' output, `...` alone on a line matches any number of
  lines (none included), and `...` inside a line matches any text on that line (like doctest's
  ELLIPSIS): for timestamps, ids and versions. curl runs with `--silent --show-error` (a
  ~/.curlrc), as its progress meter only shows when its output is not a terminal.
- A command must exit 0, unless its comment says `# exit N` (then N), or its documented output
  shows an `error:` line (then any failure status).
- A command ending with `&` runs in the background until the page ends (then SIGTERM, and
  SIGKILL after 10 s). A background `pathdb serve` is waited for until it prints
  `listening on`; its output goes to a log that is printed if something fails.
- Port 7070 (the server's default, which the docs use) stands for a free port picked per run:
  `7070` is replaced in commands and in documented output, and a `pathdb serve` without `--addr`
  gets `--addr 127.0.0.1:PORT`. So a server the reader already runs on 7070 does not interfere.
- HTML comments steer the script:
  `<!-- readme.sh: skip (needs AWS) -->` right before a block: the block is not run, and the
  reason is printed;
  `<!-- readme.sh: run COMMAND -->`: a command the page implies but does not show as a console
  block (README.md's set-up starts `pathdb serve` with `cargo run --release`; the script runs
  the debug build instead), run at that point like a command of a block;
  `<!-- readme.sh: stop (why) -->`: ends the background commands started so far (the reader
  stops a server with Ctrl-C).
- In the docs' output, an RFC 3339 timestamp (`2026-06-23T10:00:00.000000Z`) matches any
  timestamp, so tables of items can be shown as they are.

Exits 1 when a command fails or its output differs, printing the difference.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC_PORT = "7070"
COMMAND_TIMEOUT = 60

DIRECTIVE = re.compile(r"^\s*<!--\s*readme\.sh:\s*(.*?)\s*-->\s*$")


@dataclass
class Command:
    line: int  # 1-based line of the `$ ` in the page
    text: str
    expected: list[str] = field(default_factory=list)


@dataclass
class Step:
    """A console block to run, a block skipped with its reason, or a `run` directive."""

    line: int
    commands: list[Command]
    skip: str | None = None
    stop: bool = False  # a `stop` directive: end the background commands started so far


def parse(path: Path, rel: str) -> list[Step]:
    lines = path.read_text(encoding="utf-8").split("\n")
    steps: list[Step] = []
    pending_skip: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        m = DIRECTIVE.match(line)
        if m:
            body = m.group(1)
            if body.startswith("skip"):
                reason = body[len("skip"):].strip().strip(":").strip()
                pending_skip = reason.removeprefix("(").removesuffix(")") or "no reason given"
            elif body.startswith("run "):
                steps.append(Step(i + 1, [Command(i + 1, body[len("run "):].strip())]))
            elif body.split(" ")[0] == "stop":
                steps.append(Step(i + 1, [], stop=True))
            else:
                sys.exit(f"{rel}:{i + 1}: unknown readme.sh directive: {body!r}")
            i += 1
            continue
        fence = re.match(r"^(\s*)(```+)\s*(\S*)", line)
        if not fence:
            if line.strip():
                pending_skip = None  # a skip applies to the block right after it
            i += 1
            continue
        ticks, info = fence.group(2), fence.group(3)
        start = i
        body: list[str] = []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(ticks):
            body.append(lines[i])
            i += 1
        i += 1  # the closing fence
        if info != "console":
            pending_skip = None
            continue
        commands: list[Command] = []
        j = 0
        while j < len(body):
            text = body[j]
            lineno = start + 2 + j
            if text.startswith("$ ") or text == "$":
                cmd = text[2:]
                while cmd.endswith("\\") and j + 1 < len(body):
                    j += 1
                    cmd = cmd + "\n" + body[j]
                commands.append(Command(lineno, cmd))
            elif commands:
                commands[-1].expected.append(text)
            elif text.strip():
                sys.exit(f"{rel}:{lineno}: a console block must start with a `$ ` command")
            j += 1
        skip = pending_skip
        pending_skip = None
        steps.append(Step(start + 1, commands, skip))
    return steps


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# An RFC 3339 UTC timestamp in the docs' output stands for any such timestamp.
TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z")


def to_regex(expected: list[str]) -> re.Pattern[str]:
    parts = []
    for line in expected:
        if line.strip() == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            pieces = [
                TIMESTAMP.pattern.join(re.escape(q) for q in TIMESTAMP.split(p)) for p in line.split("...")
            ]
            parts.append(r"[^\n]*?".join(pieces) + r"\n")
    return re.compile("".join(parts))


def normalise(output: str) -> list[str]:
    lines = [line.rstrip() for line in output.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def expected_status(cmd: Command) -> int | None:
    """The status the docs promise: N for `# exit N`, None (any failure) when they show an
    error, else 0."""
    m = re.search(r"#.*\bexit (\d+)", cmd.text)
    if m:
        return int(m.group(1))
    if any(re.match(r"^(error|Error)\b", line) for line in cmd.expected):
        return None
    return 0


BACKGROUND = re.compile(r"(?<![&|])&\s*(#.*)?$")


class Page:
    def __init__(self, rel: str, bin_dir: Path, port: int, keep: bool):
        self.rel = rel
        self.port = str(port)
        self.tmp = Path(tempfile.mkdtemp(prefix="pathdb-readme-"))
        self.keep = keep
        self.work = self.tmp / "work"
        self.work.mkdir()
        (self.tmp / "home").mkdir()
        self.state = self.tmp / "state"
        self.state.mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith("PATHDB_")}
        env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
        # cargo and rustup keep finding their toolchains under the reader's own home.
        real_home = Path.home()
        env.setdefault("CARGO_HOME", str(real_home / ".cargo"))
        env.setdefault("RUSTUP_HOME", str(real_home / ".rustup"))
        env["HOME"] = str(self.tmp / "home")
        # curl shows no progress meter on a terminal; here its stderr is a pipe.
        (self.tmp / "home" / ".curlrc").write_text("silent\nshow-error\n")
        env["NO_COLOR"] = "1"
        env.pop("RUST_LOG", None)
        self.env = env
        (self.state / "cwd").write_text(str(self.work))
        (self.state / "env.sh").write_text("")
        self.background: list[tuple[subprocess.Popen[bytes], Path, str]] = []
        self.groups: list[int] = []  # the process groups of the foreground commands

    def localise(self, text: str) -> str:
        return re.sub(rf"\b{DOC_PORT}\b", self.port, text)

    def wrap(self, cmd: str) -> list[str]:
        """bash's arguments to run CMD in the page's session: a script file, as history
        expansion works in one and not in `bash -c`."""
        s = self.state
        script = s / "command.sh"
        script.write_text(
            f'. "{s}/env.sh"; cd "$(cat "{s}/cwd")" || exit 97; set -a -H -o history\n'
            f"{cmd}\n"
            f'__status=$?; export -p >"{s}/env.sh"; pwd >"{s}/cwd"; exit $__status\n'
        )
        copy = s / f"command-{len(list(s.iterdir()))}.sh"  # a background one keeps its own
        shutil.copy(script, copy)
        return ["bash", str(copy)]

    def run(self, cmd: Command) -> tuple[bool, str]:
        text = self.localise(cmd.text)
        if re.match(r"^\s*pathdb\b(.*\s)?serve\b", text) and "--addr" not in text and "--backend" not in text:
            text = re.sub(r"\bserve\b", f"serve --addr 127.0.0.1:{self.port}", text, count=1)
        if BACKGROUND.search(text):
            return self.start_background(cmd, BACKGROUND.sub("", text))
        proc = subprocess.Popen(
            self.wrap(text),
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.groups.append(proc.pid)
        try:
            stdout, _ = proc.communicate(timeout=COMMAND_TIMEOUT)
        except subprocess.TimeoutExpired:
            # The whole process group: a server started in the foreground is bash's child.
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return False, f"did not finish in {COMMAND_TIMEOUT} s (a server in the foreground? end it with `&`)"
        output = stdout.decode("utf-8", "replace")
        problems = []
        if "event not found" in output:
            problems.append("bash's history expansion failed: quote the `!` ('/score-!1500')")
        want = expected_status(cmd)
        if want is None and proc.returncode == 0:
            problems.append("exited 0, but the docs show an error")
        elif want is not None and proc.returncode != want:
            problems.append(f"exited {proc.returncode}, expected {want}")
        if cmd.expected:
            expected = [self.localise(line.rstrip()) for line in cmd.expected]
            while expected and not expected[-1]:
                expected.pop()
            actual = normalise(output)
            if not to_regex(expected).fullmatch("".join(line + "\n" for line in actual)):
                diff = difflib.unified_diff(expected, actual, "documented", "actual", lineterm="")
                problems.append("output differs:\n" + "\n".join(diff))
        elif problems:
            problems.append("output:\n" + output.rstrip())
        return not problems, "\n".join(problems)

    def start_background(self, cmd: Command, text: str) -> tuple[bool, str]:
        log = self.tmp / f"background-{cmd.line}.log"
        out = open(log, "wb")
        proc = subprocess.Popen(
            self.wrap("exec " + text.strip()),
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        out.close()
        self.background.append((proc, log, text.strip()))
        if re.search(r"\bpathdb\b.*\bserve\b", text):
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                if "listening on" in log.read_text(errors="replace"):
                    return True, ""
                if proc.poll() is not None:
                    return False, f"exited {proc.returncode} before listening:\n{log.read_text(errors='replace')}"
                time.sleep(0.05)
            return False, "printed no 'listening on' in 30 s"
        time.sleep(0.3)
        if proc.poll() not in (None, 0):
            return False, f"exited {proc.returncode}:\n{log.read_text(errors='replace')}"
        return True, ""

    def close(self) -> list[str]:
        """Stops the background commands and removes the directory; returns problems."""
        problems = self.stop_background()
        # Whatever a foreground command left running in its process group (`cmd & other`).
        for group in self.groups:
            try:
                os.killpg(group, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if not self.keep:
            shutil.rmtree(self.tmp, ignore_errors=True)
        return problems

    def stop_background(self) -> list[str]:
        """Stops the background commands; returns their logs if one of them misbehaved."""
        problems = []
        for proc, log, text in self.background:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                    problems.append(f"`{text}` ignored SIGTERM for 10 s:\n{log.read_text(errors='replace')}")
        for problem in problems:
            print("   FAIL  " + problem.replace("\n", "\n        "))
        self.background = []
        return problems

    def background_logs(self) -> str:
        return "\n".join(f"--- `{t}` (background) printed:\n{log.read_text(errors='replace')}" for _, log, t in self.background)


def pages(args: list[str]) -> list[Path]:
    if args:
        return [Path(a).resolve() for a in args]
    return [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pathdb", default=str(ROOT / "target" / "debug" / "pathdb"))
    parser.add_argument("--keep", action="store_true", help="keep the temporary directories")
    parser.add_argument("files", nargs="*")
    args = parser.parse_args()
    pathdb = Path(args.pathdb).resolve()
    if not os.access(pathdb, os.X_OK):
        sys.exit(f"error: {pathdb} is not built (cargo build -p pathdb-cli)")
    # The run's own link to the binary: a cargo build elsewhere that replaces target/debug/pathdb
    # meanwhile does not pull it from under the docs' commands.
    bin_dir = Path(tempfile.mkdtemp(prefix="pathdb-readme-bin-"))
    try:
        os.link(pathdb, bin_dir / "pathdb")
    except OSError:
        shutil.copy2(pathdb, bin_dir / "pathdb")

    started = time.monotonic()
    failures = ran = skipped = 0
    try:
        for path in pages(args.files):
            rel = os.path.relpath(path, ROOT)
            steps = parse(path, rel)
            if not any(s.commands for s in steps):
                continue
            print(f"== {rel}")
            page = Page(rel, bin_dir, free_port(), args.keep)
            try:
                for step in steps:
                    if step.stop:
                        print(f"   stop  {rel}:{step.line}: the background commands")
                        failures += len(page.stop_background())
                        continue
                    if step.skip is not None:
                        skipped += 1
                        first = step.commands[0].text.split("\n")[0] if step.commands else ""
                        print(f"   skip  {rel}:{step.line} ({step.skip}): $ {first}")
                        continue
                    for cmd in step.commands:
                        ran += 1
                        t0 = time.monotonic()
                        ok, why = page.run(cmd)
                        took = time.monotonic() - t0
                        shown = cmd.text.replace("\n", "\n         ")
                        slow = f" ({took:.1f} s)" if took >= 1 else ""
                        print(f"   {'ok   ' if ok else 'FAIL '} {rel}:{cmd.line}: $ {shown}{slow}")
                        if not ok:
                            failures += 1
                            print("        " + why.replace("\n", "\n        "))
                            if page.background:
                                print("        " + page.background_logs().replace("\n", "\n        "))
            finally:
                t0 = time.monotonic()
                failures += len(page.close())
                if time.monotonic() - t0 >= 1:
                    print(f"   (stopping the background commands took {time.monotonic() - t0:.1f} s)")
        took = time.monotonic() - started
    finally:
        shutil.rmtree(bin_dir, ignore_errors=True)
    print(f"readme.py: {ran} commands run, {skipped} blocks skipped, {failures} failed, in {took:.1f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
