"""The README's snippets run as written, against the test server."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path
from typing import List

import pytest

from .conftest import ADMIN_TOKEN, TOKEN, Server

README = Path(__file__).resolve().parents[1] / "README.md"
DEFAULT = 'Client("http://127.0.0.1:7070")'


def snippets() -> List[str]:
    """The README's Python snippets: the quick start, following changes, filters, generated
    ids, partial updates, transactions, namespaces, alias paths, roles and tokens. (Blocks marked
    ```py, the use of generated code, are shown, not run: scripts/codegen.sh type-checks and
    runs a program like them.)"""
    found = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert len(found) == 9
    for snippet in found:
        assert DEFAULT in snippet
    return found


def run(server: Server, code: str, token: str = TOKEN) -> List[str]:
    """Runs a snippet against the test server; what it printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = code.replace(DEFAULT, f'Client("{server.url}", token="{token}")')
        exec(compile(code, str(README), "exec"), {})
    return out.getvalue().splitlines()


def test_readme_quick_start(server: Server) -> None:
    snippet = snippets()[0]
    assert len(snippet.strip().splitlines()) <= 15
    # A newcomer runs it again, on the same server: it must pass again (a group of its own per
    # run), and stay off the paths of the repository's README.
    assert "/user-7" not in snippet and '"user", 7' not in snippet
    assert run(server, snippet) == ["condition_failed", "[1500, 20]"]
    assert run(server, snippet) == ["condition_failed", "[1500, 20]"]


def test_readme_follow_changes(server: Server) -> None:
    snippet = snippets()[1]
    assert len(snippet.strip().splitlines()) <= 18
    code = snippet.replace('"user", 8', '"user", 8000')
    assert code != snippet
    assert run(server, code) == ["{'title': 'from another writer'}"]


@pytest.mark.needs_filters
def test_readme_filters(server: Server) -> None:
    snippet = snippets()[2]
    assert len(snippet.strip().splitlines()) <= 15
    code = snippet.replace('"/shop-3/', '"/shop-3000/')
    assert code != snippet and "/shop-3/" not in code
    printed = ["[{'title': 'order 2'}]", "2", "invalid_filter", "True"]
    assert run(server, code) == printed
    assert run(server, code) == printed  # it writes the same orders again


def test_readme_generated_ids(server: Server) -> None:
    snippet = snippets()[3]
    assert len(snippet.strip().splitlines()) <= 10
    code = snippet.replace('"/user-9"', '"/user-9000"')
    assert code != snippet
    assert run(server, code) == ["/user-9000/post-1", "/user-9000/order-1/line-1"]


def test_readme_partial_updates(server: Server) -> None:
    snippet = snippets()[4]
    assert len(snippet.strip().splitlines()) <= 14
    code = snippet.replace('"/user-10/', '"/user-10000/')
    assert code != snippet
    assert run(server, code) == [
        "{'title': 'hello', 'tags': ['a', 'b'], 'views': 2}",
        "patch_test_failed",
        "{'posts': 1}",
    ]


def test_readme_transactions(server: Server) -> None:
    snippet = snippets()[5]
    assert len(snippet.strip().splitlines()) <= 18
    code = snippet.replace('"/bank-1/', '"/bank-1000/')
    assert code != snippet
    assert run(server, code) == ["True", "[70, 30]"]
    assert run(server, code) == ["True", "[70, 30]"]


def test_readme_namespaces(server: Server) -> None:
    snippet = snippets()[6]
    assert len(snippet.strip().splitlines()) <= 18
    code = snippet.replace('"/club-1/', '"/club-1000/')
    assert code != snippet
    printed = ["1", "[('/age', '/properties/age/type')]", "['/club-1000/person-1']"]
    assert f"It prints `{printed[0]}`, `{printed[1]}` and `{printed[2].replace('1000', '1')}`." in (
        README.read_text(encoding="utf-8")
    )
    assert run(server, code, ADMIN_TOKEN) == printed
    assert run(server, code, ADMIN_TOKEN) == printed  # it removes its definition again


def test_readme_alias_paths(server: Server) -> None:
    snippet = snippets()[7]
    assert len(snippet.strip().splitlines()) <= 15
    code = snippet.replace('"/club-2/', '"/club-2000/')
    assert code != snippet
    printed = [
        "/club-2000/member-1 /email-ann@example.org",
        "['/club-2000/member-1', '/club-2000/member-2']",
        "/club-2000/member-1",
    ]
    assert run(server, code, ADMIN_TOKEN) == printed
    assert run(server, code, ADMIN_TOKEN) == printed  # a second run finds it all in place


def test_readme_roles_and_tokens(server: Server) -> None:
    snippet = snippets()[8]
    assert len(snippet.strip().splitlines()) <= 18
    code = snippet.replace('"member"', '"member_readme"')
    assert code != snippet
    printed = ["write /team-8/doc-1", "member_readme", "unknown_token"]
    assert run(server, code, ADMIN_TOKEN) == printed
    assert run(server, code, ADMIN_TOKEN) == printed  # the role is replaced, a new token issued
