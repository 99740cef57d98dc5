"""Every code block of the user guide (docs/guide/*.md) is executed or checked.

Blocks of one page run in order, in one temporary working directory (the page's files are
written there) and, for ```python blocks, in one namespace:

- ```python: executed.
- ```hocon: ``lucille.validate(hocon=...)`` must return no errors; a block marked
  ``<!-- fragment -->`` (a piece of a config) must only parse (``lucille.render``).
- ```bash / ```console: each ``lucille ...`` command runs through the CLI and must exit 0
  (or the code given by ``<!-- exit: N -->``); in a console block, commands start with ``$ ``
  and the lines after one are output that must appear in what it printed (``...`` matches
  anything).
- ``<!-- file: PATH -->`` before a block writes it to PATH; a ``.py`` file must compile and a
  ``.conf`` file must validate.
- ``<!-- not run: REASON -->`` skips a block (a file block is still written), counted; any
  other block fails the test.

The counts are printed at the end (run with ``-s`` to see them).
"""

from __future__ import annotations

import dataclasses
import linecache

import pathlib
import re
import shlex
import subprocess
import sys
from collections import Counter
from typing import Any, Optional

import pytest

import lucille

ROOT = pathlib.Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "guide"
PAGES = sorted(GUIDE.glob("*.md"))

FENCE = re.compile(r"^```([\w-]*)\s*$")
MARK = re.compile(r"^<!--\s*(fragment|not run:.*|file:.*|exit:.*)\s*-->\s*$")

COUNTS: Counter[str] = Counter()
# Blocks run per page, for the pages this process ran.
PAGE_COUNTS: dict[str, int] = {}


@dataclasses.dataclass
class Block:
    page: str
    line: int
    lang: str
    text: str
    marks: list[str]

    def mark(self, kind: str) -> Optional[str]:
        for m in self.marks:
            if m == kind:
                return ""
            if m.startswith(kind + ":"):
                return m[len(kind) + 1 :].strip()
        return None

    def where(self) -> str:
        return f"{self.page}:{self.line} ({self.lang or 'no language'})"


def blocks(page: pathlib.Path) -> list[Block]:
    """The fenced blocks of a page, each with the marker comments right above it."""
    lines = page.read_text().splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        marks = []
        j = i - 1
        while j >= 0 and (not lines[j].strip() or MARK.match(lines[j].strip())):
            mm = MARK.match(lines[j].strip())
            if mm:
                marks.append(mm.group(1).strip())
            j -= 1
        end = i + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        assert end < len(lines), f"{page.name}:{i + 1}: unclosed code block"
        out.append(Block(page.name, i + 1, m.group(1), "\n".join(lines[i + 1 : end]) + "\n", marks))
        i = end + 1
    return out


def cli(args: list[str], cwd: pathlib.Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lucille.cli", *args], capture_output=True, text=True, cwd=cwd
    )


def commands(block: Block) -> list[tuple[str, list[str]]]:
    """(command line, expected output lines) pairs of a bash or console block."""
    joined = block.text.replace("\\\n", " ").splitlines()
    out: list[tuple[str, list[str]]] = []
    for line in joined:
        if block.lang == "console":
            if line.startswith("$ "):
                out.append((line[2:].strip(), []))
            elif line.strip() and out:
                out[-1][1].append(line.rstrip())
        elif line.strip() and not line.lstrip().startswith("#"):
            out.append((line.split(" #")[0].strip(), []))
    return out


def check_output(block: Block, command: str, expected: list[str], printed: str) -> None:
    for line in expected:
        pattern = ".*".join(re.escape(part) for part in line.strip().split("..."))
        assert re.search(pattern, printed), (
            f"{block.where()}: `{command}` did not print {line!r}; it printed:\n{printed}"
        )


def run_block(block: Block, ns: dict[str, Any], cwd: pathlib.Path) -> str:
    """Runs or checks one block; returns how it was counted."""
    target = block.mark("file")
    if target is not None:
        path = cwd / target
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(block.text)
    if block.mark("not run") is not None:
        assert block.mark("not run"), f"{block.where()}: `not run` needs a reason"
        return "not run"
    if target is not None:
        if path.suffix == ".py":

            compile(block.text, str(path), "exec")
            return "validated"
        if path.suffix == ".conf":
            if block.mark("fragment") is not None:
                lucille.render(str(path))
            else:
                errors = lucille.validate(str(path))
                assert errors == [], f"{block.where()}: {target} does not validate: {errors}"
            return "validated"
        return "file"
    if block.lang == "python":
        name = f"{block.page}:{block.line}"
        # Registered so that a traceback shows the guide's lines.
        linecache.cache[name] = (len(block.text), None, block.text.splitlines(True), name)
        exec(compile(block.text, name, "exec"), ns)
        return "run"
    if block.lang == "hocon":
        if block.mark("fragment") is not None:
            lucille.render(hocon=block.text)
            return "parsed (fragment)"
        errors = lucille.validate(hocon=block.text, base_dir=str(cwd))
        assert errors == [], f"{block.where()}: config errors {errors}"
        return "validated"
    if block.lang in ("bash", "console", "sh"):
        cmds = commands(block)
        assert cmds, f"{block.where()}: no command"
        expected_exit = int(block.mark("exit") or 0)
        for command, expected in cmds:
            argv = shlex.split(command)
            assert argv[0] == "lucille", (
                f"{block.where()}: `{command}` is not a lucille command: mark the block "
                "<!-- not run: reason -->"
            )
            r = cli(argv[1:], cwd)
            printed = r.stdout + r.stderr
            assert r.returncode == expected_exit, (
                f"{block.where()}: `{command}` exited {r.returncode}:\n{printed}"
            )
            check_output(block, command, expected, printed)
        return "run"
    raise AssertionError(
        f"{block.where()}: a block that is neither run nor marked "
        "(<!-- not run: reason -->, <!-- file: path -->, <!-- fragment -->)"
    )


def test_the_guide_exists_and_is_linked() -> None:
    names = {p.name for p in PAGES}
    assert {"index.md", "quickstart.md", "configs.md", "python-stages.md", "connectors.md",
            "indexers.md", "distributed.md", "migrating.md"} <= names
    index = (GUIDE / "index.md").read_text()
    for p in PAGES:
        if p.name != "index.md":
            assert f"({p.name})" in index, f"index.md does not link {p.name}"
    assert "docs/guide/" in (ROOT / "README.md").read_text()


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_page(page: pathlib.Path, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)
    ns: dict[str, Any] = {"__name__": "guide_" + page.stem.replace("-", "_")}
    PAGE_COUNTS[page.name] = 0
    try:
        for block in blocks(page):
            COUNTS[run_block(block, ns, tmp_path)] += 1
            PAGE_COUNTS[page.name] += 1
    finally:
        # Modules a page wrote and imported must not leak into the next page.
        for name in set(sys.modules) - before:
            if str(tmp_path) in str(getattr(sys.modules[name], "__file__", "") or ""):
                del sys.modules[name]


def test_migration_table_matches_what_is_built_in() -> None:
    """migrating.md's stage table says `built in` exactly for the stages this build has."""
    text = (GUIDE / "migrating.md").read_text()
    rows = re.findall(r"^\| `(\w+)` \| (built in|not yet)", text, re.M)
    stages_section = text.split("## Stages", 1)[1].split("\n## ", 1)[0]
    stage_rows = re.findall(r"^\| `(\w+)` \| (built in|not yet)", stages_section, re.M)
    assert stage_rows, "no stage table"
    built = {name for name, status in stage_rows if status == "built in"}
    assert built == set(lucille._lucille.builtin_stage_names())
    # Connectors and indexers marked built in are accepted by name; the others are not.
    for name, status in rows:
        if name in {n for n, _ in stage_rows}:
            continue
        if name.endswith("Indexer"):
            errors = lucille.validate(config={"indexer": {"class": name}})
            unknown = any("indexer class" in e and "not built in" in e or "unknown indexer class" in e
                          for e in errors)
        else:
            errors = lucille.validate(config={"connectors": [{"name": "c", "class": name}]})
            unknown = any("unknown connector class" in e for e in errors)
        assert unknown == (status == "not yet"), (name, status, errors)


def test_zz_block_counts(capsys: pytest.CaptureFixture[str]) -> None:
    """Runs after the pages: shows the counts, and checks that every block was counted."""
    total = sum(COUNTS.values())
    if not total:
        pytest.skip("the pages did not run in this session")
    with capsys.disabled():
        print(f"\nguide code blocks: {total} ({', '.join(f'{k}: {v}' for k, v in sorted(COUNTS.items()))})")
    # The pages this process ran (pytest-xdist spreads the pages over several).
    for p in PAGES:
        if p.name in PAGE_COUNTS:
            assert PAGE_COUNTS[p.name] == len(blocks(p)), f"{p.name} stopped before its last block"
    if len(PAGE_COUNTS) == len(PAGES):
        assert COUNTS["run"] > 0 and COUNTS["validated"] > 0

