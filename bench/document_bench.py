#!/usr/bin/env python3
"""Document benchmark: prints one table comparing, in the same run,

* the Rust Document JSON round trip (from_json + to_json) against a raw serde_json::Value
  round trip of the same ~1 KB bytes (goal: within 1.2x), and
* the Python call overhead of Document operations against the same operation on a dict.

Usage: pip install . && python bench/document_bench.py
(the Python rows measure the installed lucille build; `pip install .` builds it optimised).
Machines are noisy: every number is the median of several runs, and ratios are what count.
"""

from __future__ import annotations

import json
import pathlib
import statistics
import subprocess
import timeit

import lucille

ROOT = pathlib.Path(__file__).resolve().parent.parent
SAMPLE = (ROOT / "bench" / "sample_doc.json").read_text().strip()


def rust_numbers() -> dict:
    out = subprocess.run(
        ["cargo", "bench", "--quiet", "--bench", "document_bench"],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def py_ns(stmt, number: int = 200_000, repeat: int = 7) -> float:
    runs = timeit.repeat(stmt, number=number, repeat=repeat)
    return statistics.median(runs) / number * 1e9


def main() -> None:
    rust = rust_numbers()
    doc = lucille.Document.from_json(SAMPLE)
    plain = json.loads(SAMPLE)

    rows = [
        ("Rust: Document from_json+to_json", rust["doc_ns"], "raw serde_json Value round trip", rust["raw_ns"]),
        ("Rust: round trip + 2 field edits", rust["doc_edit_ns"], "raw serde_json Value round trip", rust["raw_ns"]),
        ("Py: Document.from_json+to_json", py_ns(lambda: lucille.Document.from_json(SAMPLE).to_json(), 50_000),
         "json.loads+json.dumps", py_ns(lambda: json.dumps(json.loads(SAMPLE)), 50_000)),
        ("Py: doc.set_field('f', 1)", py_ns(lambda: doc.set_field("f", 1)), "dict['f'] = 1", py_ns(lambda: plain.__setitem__("f", 1))),
        ("Py: doc['f'] = 1", py_ns(lambda: doc.__setitem__("f", 1)), "dict['f'] = 1", py_ns(lambda: plain.__setitem__("f", 1))),
        ("Py: doc.get('title')", py_ns(lambda: doc.get("title")), "dict.get('title')", py_ns(lambda: plain.get("title"))),
        ("Py: doc.get_string('price')", py_ns(lambda: doc.get_string("price")), "str(dict['price'])", py_ns(lambda: str(plain["price"]))),
    ]
    print(f"Document benchmark ({rust['bytes']}-byte document; ns/op, median of 7 runs)")
    header = f"{'operation':36} {'ns/op':>9}   {'reference':34} {'ns/op':>9} {'ratio':>7}"
    print(header)
    print("-" * len(header))
    for name, ns, ref_name, ref_ns in rows:
        print(f"{name:36} {ns:9.1f}   {ref_name:34} {ref_ns:9.1f} {ns / ref_ns:6.2f}x")


if __name__ == "__main__":
    main()
