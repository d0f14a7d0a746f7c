#!/usr/bin/env python3
"""Fails when the modules of a crate import each other in a circle (ARCHITECTURE.md, "The
store's layers": no module imports a module that imports it back, directly or through others).

Each source file of a crate's library or binary is a module: src/lib.rs, src/main.rs (the roots),
src/a.rs or src/a/mod.rs (`a`), src/a/b.rs (`a::b`), src/bin/x.rs and src/bin/x/main.rs (their
own roots). A module uses another when its code names it by path: `use crate::a::X`,
`use super::b`, `crate::a::f(...)` in an expression, `self::c::Y`. The target is the longest
module that the path names (`crate::write::items::stage` is `write::items`).

Resolution choices:
- A name the root re-exports (`pub use store::Store;` in lib.rs) is the module that defines it,
  so `use crate::Store` is a use of `store`, not of lib.rs.
- The roots only declare and re-export modules; their uses are not edges (otherwise every module
  that names `crate::Error` would be in a cycle with lib.rs).
- `mod child;` in a parent is ownership, not use; `use child::X` in the parent is a use.
- Comments, doc comments and string literals are ignored.

The rank (ARCHITECTURE.md, "The store's layers"): a crate whose root says "The layers, bottom
up" ranks its modules in the order lib.rs declares them, and each folder's files in the order its
mod.rs declares them. A module may use a module ranked below it: for two modules, take the
folder that holds both; the one of its entries that holds the user must come after the one that
holds the used. A folder's mod.rs ranks below its files: it is what they share (the backend's
traits, the `Store` type), and it only declares and re-exports them, never uses them. In such a crate a module also names what it uses by the module that defines
it, not through the root's re-exports (`use crate::Error` hides the edge). Test modules
(`#[cfg(test)] mod tests`) are left out of the rank. The ranks are printed.

Usage: python3 scripts/check-module-cycles.py [REPO]   (exit 1 when a cycle or a rank is broken)
       python3 scripts/check-module-cycles.py --self-test
"""

import os
import re
import sys
import tempfile

PATH = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
USE_GROUP = re.compile(r"\b(crate|super|self)::((?:[A-Za-z_][A-Za-z0-9_]*::)*)\{([^}]*)\}")
REEXPORT = re.compile(r"pub(?:\([^)]*\))?\s+use\s+([A-Za-z_][A-Za-z0-9_]*)((?:::\w+)*)::(\{[^}]*\}|\w+)")


def strip(code):
    """The code without comments and string, byte-string or char literals (their text could look
    like paths), read left to right as rustc does: a `/*` inside a string or a `//` comment
    (`Accept: */*`) opens nothing, block comments nest, and a lifetime (`'a`) is not a char.
    Line breaks are kept so that line numbers stay right."""
    out = []
    i, n = 0, len(code)

    def skip_to(j):
        """Blanks code[i:j], keeping its line breaks."""
        out.append(" " + "\n" * code.count("\n", i, j) + " ")
        return j

    while i < n:
        c = code[i]
        two = code[i:i + 2]
        if two == "//":
            end = code.find("\n", i)
            i = skip_to(n if end < 0 else end)
        elif two == "/*":
            depth, j = 1, i + 2
            while j < n and depth:
                if code.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif code.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            i = skip_to(j)
        elif (raw := RAW_STRING.match(code, i)) and (i == 0 or not IDENT_CHAR.match(code[i - 1])):
            close = '"' + raw.group(1)
            end = code.find(close, raw.end())
            i = skip_to(n if end < 0 else end + len(close))
        elif c == '"':
            j = i + 1
            while j < n and code[j] != '"':
                j += 2 if code[j] == "\\" else 1
            i = skip_to(j + 1)
        elif c == "'" and (char := CHAR.match(code, i)):
            i = skip_to(char.end())
        else:
            out.append(c)
            i += 1
    return "".join(out)


RAW_STRING = re.compile(r'[bc]?r(#*)"')
IDENT_CHAR = re.compile(r"[A-Za-z0-9_]")
# A char literal, not a lifetime or label: one char or escape between quotes.
CHAR = re.compile(r"'(?:\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F_]{1,6}\}|.)|[^'\\\n])'")


def modules(src):
    """{module name: file} for one crate's src/ ('' for lib.rs / main.rs, 'bin:x' for bins)."""
    found = {}
    for dirpath, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, f), src)[:-3].split(os.sep)
            if rel[0] == "bin":
                found["bin:" + rel[1]] = os.path.join(dirpath, f) if len(rel) <= 3 else None
                if len(rel) == 2 or rel[-1] == "main":
                    found["bin:" + rel[1]] = os.path.join(dirpath, f)
                else:
                    found["bin:" + rel[1] + "::" + "::".join(rel[2:])] = os.path.join(dirpath, f)
                continue
            if rel[-1] == "mod":
                rel = rel[:-1]
            name = "::".join(rel)
            found["" if name in ("lib", "main") else name] = os.path.join(dirpath, f)
    return {k: v for k, v in found.items() if v}


def reexports(root_code):
    """{name: module} for the root's `pub use module::Name` re-exports."""
    out = {}
    for m in REEXPORT.finditer(root_code):
        module = m.group(1) + m.group(2)
        module = module.replace("crate::", "")
        names = m.group(3).strip("{}")
        for name in re.split(r"\s*,\s*", names):
            name = name.split(" as ")[-1].strip()
            if name and name != "self":
                out[name] = module
    return out


def resolve(current, kind, rest, mods, exported):
    """The module a path `kind::rest` in module `current` names, or None."""
    parts = current.split("::") if current else []
    if current.startswith("bin:"):
        return None  # a binary's submodules are checked below its own root
    if kind == "super":
        parts = parts[:-1]
        while rest and rest[0] == "super":
            parts, rest = parts[:-1], rest[1:]
    elif kind == "crate":
        parts = []
        if rest and rest[0] in exported and rest[0] not in mods:
            # A re-export of another crate's item (`pub use uuid::Uuid`) is no module here.
            return exported[rest[0]] if exported[rest[0]] in mods else None
    target = None
    for i in range(len(rest) + 1):
        candidate = "::".join(parts + rest[:i])
        if candidate in mods:
            target = candidate
    return target


TESTS = re.compile(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{")


def edges(mods, through_root=None, skip_tests=False):
    """{module: {used module: 'file:line'}}. With `through_root` (a dict), also collects there
    {module: [(name, 'file:line')]} for each name taken through the root's re-exports. With
    `skip_tests`, inline test modules (`#[cfg(test)] mod tests {...}`, at a file's end) and
    test files are left out."""
    root = mods.get("", "")
    exported = reexports(strip(open(root).read())) if root else {}
    out = {m: {} for m in mods}
    for name, path in mods.items():
        if name == "" or name.startswith("bin:"):
            continue
        if skip_tests and name.split("::")[-1] in ("test", "tests"):
            continue
        code = strip(open(path).read())
        if skip_tests and (cut := TESTS.search(code)):
            code = code[: cut.start()]
        hits = []
        for m in USE_GROUP.finditer(code):
            prefix = [p for p in m.group(2).split("::") if p]
            for item in m.group(3).split(","):
                item = item.strip().split(" as ")[0].split("::")
                if item and item[0]:
                    hits.append((m.start(), m.group(1), prefix + [p for p in item if p and p != "self"]))
        for m in PATH.finditer(code):
            hits.append((m.start(), m.group(1), [p for p in m.group(2).split("::") if p]))
        for pos, kind, rest in hits:
            if (
                through_root is not None
                and kind == "crate"
                and rest
                and rest[0] in exported
                and rest[0] not in mods
                and exported[rest[0]] in mods
            ):
                line = code.count("\n", 0, pos) + 1
                through_root.setdefault(name, []).append((rest[0], f"{path}:{line}"))
            target = resolve(name, kind, rest, mods, exported)
            if target is not None and target != name and target != "":
                line = code.count("\n", 0, pos) + 1
                out[name].setdefault(target, f"{path}:{line}")
    return out


def cycles(graph):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, result, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                result.append(sorted(component))

    sys.setrecursionlimit(10000)
    for v in graph:
        if v not in index:
            visit(v)
    return result



DECLARED = re.compile(r"^\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", re.M)
RANKED = "The layers, bottom up"


def declared(mods, folder):
    """The modules `folder` ('' for the root) declares, in order, tests left out."""
    path = mods.get(folder)
    if not path:
        return []
    names = DECLARED.findall(strip_comments_only(open(path).read()))
    full = [(folder + "::" + n) if folder else n for n in names]
    return [m for m in full if m in mods and m.split("::")[-1] not in ("test", "tests")]


def strip_comments_only(code):
    """The code without comments (string literals kept: none declares a module)."""
    return strip(code)


def rank_violations(mods, graph):
    """Edges that run up the rank: [(user, used, where, why)]."""
    order = {}

    def walk(folder):
        for i, m in enumerate(declared(mods, folder)):
            order[m] = i
            walk(m)

    walk("")
    out = []
    for a, targets in graph.items():
        if a == "" or a.startswith("bin:") or a not in order:
            continue
        for b, where in sorted(targets.items()):
            if b not in order:
                continue
            pa, pb = a.split("::"), b.split("::")
            common = 0
            while common < min(len(pa), len(pb)) and pa[common] == pb[common]:
                common += 1
            if common == len(pb):
                continue  # a file uses its folder's mod.rs, the interface its files share
            if common == len(pa):
                out.append((a, b, where, "a folder's mod.rs uses one of its own files"))
                continue
            ca, cb = "::".join(pa[: common + 1]), "::".join(pb[: common + 1])
            if order[cb] > order[ca]:
                out.append((a, b, where, f"{cb} is ranked above {ca}"))
    return out


def print_ranks(crate, mods):
    """The ranks of a ranked crate, bottom up, one line per top-level module."""
    print(f"{crate}: ranks, bottom up (lib.rs; each folder's files as its mod.rs lists them)")

    def inside(folder):
        names = []
        for m in declared(mods, folder):
            sub = inside(m)
            short = m.split("::")[-1]
            names.append(f"{short}({', '.join(sub)})" if sub else short)
        return names

    for i, m in enumerate(declared(mods, ""), 1):
        sub = inside(m)
        print(f"  {i:2} {m}" + (f": {', '.join(sub)}" if sub else ""))


def check(repo):
    """Prints the cycles of every crate under repo/crates (and repo/fuzz); returns their count."""
    crates = sorted(
        os.path.join(repo, "crates", c) for c in os.listdir(os.path.join(repo, "crates"))
    )
    if os.path.isdir(os.path.join(repo, "fuzz", "src")):
        crates.append(os.path.join(repo, "fuzz"))
    found, total = 0, 0
    for crate in crates:
        src = os.path.join(crate, "src")
        if not os.path.isdir(src):
            continue
        mods = modules(src)
        total += len(mods)
        graph = edges(mods)
        for component in cycles(graph):
            found += 1
            inside = set(component)
            print(f"{os.path.basename(crate)}: module cycle among {', '.join(component)}")
            for a in component:
                for b, where in sorted(graph[a].items()):
                    if b in inside:
                        print(f"  {a} -> {b}  ({os.path.relpath(where, repo)})")
    if found == 0:
        print(f"no module cycles in {total} modules of {len(crates)} crates")
    for crate in crates:
        src = os.path.join(crate, "src")
        root = os.path.join(src, "lib.rs")
        if not os.path.isfile(root) or RANKED not in open(root).read():
            continue
        mods = modules(src)
        through_root = {}
        graph = edges(mods, through_root, skip_tests=True)
        name = os.path.basename(crate)
        print_ranks(name, mods)
        broken = rank_violations(mods, graph)
        for a, b, where, why in broken:
            print(f"{name}: {a} -> {b} runs up the rank ({why})  ({os.path.relpath(where, repo)})")
        hidden = [(m, n, w) for m, uses in sorted(through_root.items()) for n, w in uses]
        for m, n, where in hidden:
            print(f"{name}: {m} takes {n} through the crate root; name its module  ({os.path.relpath(where, repo)})")
        found += len(broken) + len(hidden)
        if not broken and not hidden:
            print(f"{name}: every module uses only modules ranked below it, by their own names")
    return found


def self_test():
    with tempfile.TemporaryDirectory() as tmp:
        def crate(name, files):
            for rel, text in files.items():
                path = os.path.join(tmp, "crates", name, "src", rel)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                open(path, "w").write(text)

        crate("cyclic", {
            "lib.rs": "mod a;\nmod b;\npub use a::A;\npub use b::B;\n",
            "a.rs": "use crate::B; // crate::b in a comment is not a use\npub struct A;\n",
            "b.rs": "pub struct B;\npub fn f() -> crate::A { crate::A }\n",
        })
        crate("layered", {
            "lib.rs": "mod low;\nmod high;\nmod w;\npub use low::{Low, helper};\npub use high::High;\n",
            "low.rs": 'pub struct Low;\npub fn helper() { let _ = "crate::high::High"; }\n',
            "high.rs": "use crate::{Low, helper};\npub struct High(Low);\nfn g() { helper(); crate::w::run(); }\n",
            "w/mod.rs": "mod plan;\nmod stage;\npub(crate) use plan::Plan;\npub fn run() { stage::go(); }\n",
            "w/plan.rs": "pub struct Plan;\n",
            "w/stage.rs": "use super::plan::Plan;\npub fn go() { let _ = Plan; }\n",
        })
        # The server's old cycle: `gate` imports `error` below a doc comment that says
        # `Accept: */*` (which a regex stripper read as the start of a block comment that hid
        # the imports), and `error` names `crate::gate::Failure` inline, in an expression.
        crate("inline", {
            "lib.rs": "mod error;\nmod gate;\n",
            "error.rs": (
                "pub struct ApiError;\n"
                "fn into() -> Option<u8> { Some(1).map(|_| crate::gate::Failure { code: 1 }.code) }\n"
            ),
            "gate.rs": (
                "//! Answers `Accept: */*` requests.\n"
                "use crate::error::ApiError;\n"
                "pub struct Failure { pub code: u8 }\n"
                "/* a /* nested */ comment: crate::error::Hidden */\n"
                "fn f<'a>(x: &'a str) -> char { let _ = ApiError; let _ = r#\"crate::x\"#; '\"' }\n"
            ),
        })
        # Comments and literals with every shape that could look like code, and no cycle.
        crate("tricky", {
            "lib.rs": "mod a;\nmod b;\n",
            "a.rs": (
                "//! `*/*` and `/*` in a doc comment\n"
                "pub fn a() -> (char, &'static str) { ('\\'', \"/* crate::b::b \\\" */\") }\n"
                "pub fn c() -> &'static core::ffi::CStr { cr#\"crate::b::b \\\"#; c\"crate::b\" }\n"
            ),
            "b.rs": "pub fn b() { let _ = crate::a::a(); let _ = b'\"'; }\n",
        })
        # A ranked crate: an import up the rank at the top and inside a folder, a folder's
        # mod.rs that uses its own file, and a name taken through the root's re-exports.
        crate("ranked", {
            "lib.rs": (
                "// The layers, bottom up.\nmod low;\nmod mid;\nmod w;\nmod high;\n"
                "pub use low::Low;\n"
            ),
            "low.rs": "pub struct Low;\npub fn f() -> u8 { crate::high::N }\n",
            "mid.rs": "use crate::Low;\npub fn g() -> Low { Low }\n",
            "w/mod.rs": "mod first;\nmod second;\npub fn h() { self::second::s(); }\n",
            "w/first.rs": "pub fn f() { super::second::s(); }\n",
            "w/second.rs": "pub fn s() { crate::low::f(); }\n",
            "high.rs": "pub const N: u8 = 1;\n",
        })
        # A ranked crate that keeps its rank: files use their folder's mod.rs and lower files.
        crate("orderly", {
            "lib.rs": "// The layers, bottom up.\nmod base;\nmod top;\npub use base::B;\n",
            "base/mod.rs": "mod one;\nmod two;\npub struct B;\n",
            "base/one.rs": "pub fn one() -> super::B { super::B }\n",
            "base/two.rs": "pub fn two() { super::one::one(); }\n",
            "top.rs": "use crate::base::B;\npub fn t() -> B { B }\n",
        })
        import io
        import contextlib
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            n = check(tmp)
        text = buffer.getvalue()
        assert n == 6, text
        assert "ranked: low -> high runs up the rank (high is ranked above low)" in text, text
        assert "ranked: mid takes Low through the crate root" in text, text
        assert "ranked: w::first -> w::second runs up the rank" in text, text
        assert "ranked: w -> w::second runs up the rank (a folder's mod.rs uses one of its own files)" in text, text
        assert "orderly: every module uses only modules ranked below it" in text, text
        assert "  2 top" in text and "  1 base: one, two" in text, text
        assert "cyclic: module cycle among a, b" in text, text
        assert "inline: module cycle among error, gate" in text, text
        assert "error -> gate  (crates/inline/src/error.rs:2)" in text, text
        assert "gate -> error  (crates/inline/src/gate.rs:2)" in text, text
        assert "layered" not in text, text
        assert "tricky" not in text, text
    print(
        "self-test passed: cycles through re-exports and through inline paths are found, "
        "after comments that hold `*/*`; layers, nested stages, comments and literals are "
        "not cycles; imports up the rank, a mod.rs using its files and names taken through "
        "the root are found in a ranked crate"
    )


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        sys.exit(0)
    repo = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    sys.exit(1 if check(os.path.abspath(repo)) else 0)
