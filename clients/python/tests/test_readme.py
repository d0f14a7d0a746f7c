"""The README's quick start runs as written, against the test server."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

from .conftest import TOKEN, Server

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_quick_start(server: Server) -> None:
    [snippet] = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert len(snippet.strip().splitlines()) <= 13
    default = 'Client("http://127.0.0.1:7070")'
    assert default in snippet
    # A fresh group: the snippet's /user-7 is the test server's own.
    code = snippet.replace(default, f'Client("{server.url}", token="{TOKEN}")')
    code = code.replace('"user", 7', '"user", 7000').replace("/user-7/", "/user-7000/")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(README), "exec"), {})
    assert out.getvalue().splitlines() == ["condition_failed", "[1500, 20]"]
