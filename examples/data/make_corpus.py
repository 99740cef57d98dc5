"""Builds the quickstart's sample corpus: the Python standard library's API reference (one
record per public function, class and method, with its signature and docstring), as JSON lines.

The committed stdlib-reference.jsonl was made with CPython 3.11 by running this script; it is
real text, so searches behave as they would on real content.
"""

from __future__ import annotations

import importlib
import inspect
import json
import sys
from typing import Any, Iterator

MODULES = """
abc argparse array asyncio base64 bisect calendar collections contextlib copy csv dataclasses
datetime decimal difflib email.message email.utils enum filecmp fnmatch fractions functools
getpass gettext glob gzip hashlib heapq hmac html html.parser http.client http.cookies imaplib
inspect io ipaddress itertools json logging lzma math mimetypes operator os os.path pathlib
pickle platform pprint queue random re sched secrets selectors shelve shlex shutil signal
smtplib socket sqlite3 ssl statistics string struct subprocess tarfile tempfile textwrap
threading time timeit tokenize traceback types typing unicodedata unittest urllib.parse
urllib.request uuid warnings weakref xml.dom.minidom xml.etree.ElementTree zipfile zlib
""".split()


def summary(doc: str) -> str:
    first = doc.strip().split("\n\n")[0]
    return " ".join(first.split())


def signature(obj: Any) -> str:
    try:
        return str(inspect.signature(obj))
    except (TypeError, ValueError):
        return ""


def records() -> Iterator[dict[str, str]]:
    seen: set[str] = set()
    for name in MODULES:
        mod = importlib.import_module(name)
        for attr, obj in sorted(vars(mod).items()):
            if attr.startswith("_") or getattr(obj, "__module__", None) not in (name, "_" + name.split(".")[-1]):
                continue
            kind = "class" if inspect.isclass(obj) else "function" if callable(obj) else None
            if kind is None:
                continue
            yield from one(name, attr, obj, kind, seen)
            if kind == "class":
                for m, meth in sorted(vars(obj).items()):
                    if m.startswith("_") or not callable(meth):
                        continue
                    yield from one(name, f"{attr}.{m}", meth, "method", seen)


def one(module: str, qualname: str, obj: Any, kind: str, seen: set[str]) -> Iterator[dict[str, str]]:

    key = f"{module}.{qualname}"
    doc = inspect.getdoc(obj) or ""
    if key in seen or not doc.strip():
        return
    seen.add(key)
    yield {
        "id": key,
        "module": module,
        "name": qualname,
        "kind": kind,
        "signature": signature(obj),
        "summary": summary(doc)[:300],
        "doc": doc[:2000],
        "python": f"{sys.version_info.major}.{sys.version_info.minor}",
    }


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "stdlib-reference.jsonl"
    with open(out, "w", encoding="utf-8") as f:
        for r in records():
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
