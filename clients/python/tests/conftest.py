"""Starts one `pathdb serve` (from $PATHDB_BIN, default target/debug/pathdb) on a free loopback
port for the whole session, with a read-write, a read-only and an admin token."""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Iterator

import httpx
import pytest
from hypothesis import settings

from pathdb import Client, KeyPath

# No example database in the working tree; the tests' own sizes keep them to seconds.
settings.register_profile("pathdb", database=None, deadline=None)
settings.load_profile("pathdb")

REPO = Path(__file__).resolve().parents[3]
TOKEN = "secret"
READ_TOKEN = "ro"
ADMIN_TOKEN = "adm"


class Server:
    def __init__(self, url: str) -> None:
        self.url = url


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    binary = Path(os.environ.get("PATHDB_BIN", REPO / "target" / "debug" / "pathdb"))
    if not binary.exists():
        pytest.fail(f"no pathdb binary at {binary}: cargo build -p pathdb-cli, or set PATHDB_BIN")
    with tempfile.TemporaryDirectory(prefix="pathdb-py-") as work:
        env = dict(os.environ, PATHDB_TOKENS=f"{TOKEN}=read-write,{READ_TOKEN}=read,{ADMIN_TOKEN}=admin", RUST_LOG="warn")
        process = subprocess.Popen(
            [str(binary), "--db", str(Path(work) / "test.pathdb"), "serve", "--addr", "127.0.0.1:0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            text=True,
        )
        try:
            assert process.stdout is not None
            line = process.stdout.readline().strip()
            if not line.startswith("listening on "):
                pytest.fail(f"pathdb serve did not start: {line!r}")
            url = line[len("listening on ") :]
            for _ in range(100):
                try:
                    if httpx.get(f"{url}/healthz").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                time.sleep(0.05)
            yield Server(url)
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@pytest.fixture
def client(server: Server) -> Iterator[Client]:
    with Client(server.url, token=TOKEN) as c:
        yield c


@pytest.fixture
def admin(server: Server) -> Iterator[Client]:
    """A client with the admin scope, which namespace definitions need."""
    with Client(server.url, token=ADMIN_TOKEN) as c:
        yield c


@pytest.fixture
def group() -> KeyPath:
    """A group of its own for each test, so tests never see each other's items."""
    return KeyPath().add("t", uuid.uuid4())
