#!/usr/bin/env python3
"""Import circles between the files of each crate of the workspace (scripts/test.sh runs it;
exit 1 when there is one).

A crate's files import each other through `crate::...` and `super::...` paths. Each path is
resolved to the deepest module file it names (`crate::indexer::op::ToIndex` -> src/indexer/op.rs),
and a group of files that reach each other through such imports is a circle: none of them can be
understood, moved or split out alone. Cargo already forbids circles between crates; this check
does the same inside each one. Comments and test modules (`#[cfg(test)] mod x { ... }`, and the
files of `#[cfg(test)] mod x;`) are left out: tests may use anything.

usage: scripts/modcycles.py [REPO]
"""
import pathlib
import re
import sys

SKIP_DIRS = {"target", "third_party", "fuzz", "bench", ".git", ".venv", "node_modules"}
PATH = re.compile(r"\b(crate|super)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
GROUP = re.compile(r"\b(crate|super)((?:::[A-Za-z_][A-Za-z0-9_]*)*)::\{([^;]*?)\}", re.S)
TEST_MOD_FILE = re.compile(r"#\[cfg\(test\)\]\s*(?:pub(?:\([a-z]+\))?\s+)?mod\s+([a-z_0-9]+)\s*;")
TEST_MOD_INLINE = re.compile(r"#\[cfg\(test\)\]\s*(?:pub(?:\([a-z]+\))?\s+)?mod\s+[a-z_0-9]+\s*\{")


def strip(text: str) -> str:
    """Removes comments and inline test modules."""
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    while (m := TEST_MOD_INLINE.search(text)) is not None:
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        text = text[: m.start()] + text[i:]
    return text


def module_of(src: pathlib.Path, f: pathlib.Path) -> tuple[str, ...]:
    parts = list(f.relative_to(src).with_suffix("").parts)
    if parts[-1] in ("mod", "lib", "main"):
        parts.pop()
    return tuple(parts)


def circles(src: pathlib.Path) -> list[list[str]]:
    files = {module_of(src, f): f for f in sorted(src.rglob("*.rs"))}
    # Files only compiled in tests: declared with `#[cfg(test)] mod x;`, and all below them.
    test_only: set[tuple[str, ...]] = set()
    for mod, f in files.items():
        for name in TEST_MOD_FILE.findall(f.read_text(encoding="utf-8")):
            test_only.add(mod + (name,))
    live = {m: f for m, f in files.items()
            if not any(m[: len(t)] == t for t in test_only)}

    def resolve(path: tuple[str, ...]) -> tuple[str, ...] | None:
        for n in range(len(path), 0, -1):
            if path[:n] in live:
                return path[:n]
        return None

    edges: dict[tuple[str, ...], set[tuple[str, ...]]] = {m: set() for m in live}
    for mod, f in live.items():
        text = strip(f.read_text(encoding="utf-8"))
        paths: list[tuple[str, str]] = [(m.group(1), m.group(2)) for m in PATH.finditer(text)]
        for g in GROUP.finditer(text):
            for item in re.split(r",", g.group(3)):
                item = item.strip().split(" as ")[0].strip()
                item = re.sub(r"::\{.*", "", item, flags=re.S)
                if item and item != "self":
                    paths.append((g.group(1), g.group(2) + "::" + item))
        for root, rest in paths:
            names = tuple(p for p in rest.split("::") if p)
            if root == "crate":
                target = names
            else:
                base = list(mod[:-1])
                while names and names[0] == "super":
                    base = base[:-1]
                    names = names[1:]
                target = tuple(base) + names
            found = resolve(target)
            # Nothing, itself, or one of its own submodules (their parent owns them; an import
            # from a submodule back up to it is an edge).
            if found is None or found[: len(mod)] == mod:
                continue
            edges[mod].add(found)

    # Tarjan's strongly connected components.
    index: dict[tuple[str, ...], int] = {}
    low: dict[tuple[str, ...], int] = {}
    stack: list[tuple[str, ...]] = []
    on: set[tuple[str, ...]] = set()
    out: list[list[str]] = []
    sys.setrecursionlimit(10000)

    def visit(v: tuple[str, ...]) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(str(live[m].relative_to(src.parent)) for m in group))

    for v in live:
        if v not in index:
            visit(v)
    return out


def main() -> int:
    repo = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    total = 0
    for toml in sorted(repo.rglob("Cargo.toml")):
        rel = toml.relative_to(repo)
        if SKIP_DIRS & set(rel.parts[:-1]):
            continue
        src = toml.parent / "src"
        if not ((src / "lib.rs").exists() or (src / "main.rs").exists()):
            continue
        for group in circles(src):
            total += 1
            crate = str(rel.parent) if str(rel.parent) != "." else "."
            print(f"{crate}: " + " <-> ".join(group))
    print(f"circles: {total}")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
