#!/usr/bin/env python3
"""Pipeline benchmark: prints one table comparing, in the same run, one ~1 KB document
(bench/sample_doc.json) going through the same six edits four ways:

(a) Rust: a `Pipeline` of six built-in stages (CopyFields, RenameFields, SetStaticValues,
    TrimWhitespace, Concatenate, Length) built with `PipelinePlan::from_config`, timed by
    bench/pipeline_bench.rs. Its input is a clone of a parsed Document (a'): parsed from the
    JSON bytes each time). The clone / parse is timed on its own and subtracted for "net".
(b) Python: the same six stages as `lucille.stages.*` in a `lucille.Pipeline`, one
    `Pipeline.process(lucille.Document.from_json(sample))` per document.
(c) Python: (b) plus one trivial Python stage (a `lucille.Stage` subclass setting one field);
    (c) - (b) is the per-document cost of a Python stage in a Rust pipeline.
(d) Python: a plain function making the same six edits on `json.loads(sample)`: the
    reference every ratio is against.

"input ns" is the cost of making the input document alone (clone, Document.from_json or
json.loads), measured in the same round; "net ns" is ns/doc minus it (median of per-round
differences), i.e. the stages alone plus the call into the pipeline.

Usage (from the repository root):
    pip install .            # or: maturin build --release, then pip install the wheel
    python bench/pipeline_bench.py
The Python rows measure the installed lucille build, which must be optimised (`pip install .`
and `maturin build --release` are). The Rust row runs `cargo bench --bench pipeline_bench`,
which honours CARGO_TARGET_DIR from the environment. Machines are noisy: every number is the
median of 7 interleaved rounds, and ratios are what count.
"""

from __future__ import annotations

import json
import pathlib
import statistics
import subprocess
import timeit

import lucille
from lucille import Document, Pipeline, Stage, stages

ROOT = pathlib.Path(__file__).resolve().parent.parent
SAMPLE = (ROOT / "bench" / "sample_doc.json").read_text().strip()
ROUNDS = 7
NUMBER = 20_000  # documents per timed batch

# The same six stages as stage_configs() in bench/pipeline_bench.rs.
STAGES = [
    ("CopyFields", {"fieldMapping": {"title": "title_display", "brand": "brand_facet"}}),
    ("RenameFields", {"fieldMapping": {"review_count": "reviews", "stock_count": "stock"}}),
    ("SetStaticValues", {"staticValues": {"source": "catalog", "indexed": True}}),
    ("TrimWhitespace", {"fields": ["title", "brand", "description"]}),
    ("Concatenate", {"dest": "label", "formatString": "{brand}: {title} [{sku}]"}),
    ("Length", {"fieldMapping": {"categories": "category_count", "tags": "tag_count"}}),
]


class MarkSeen(Stage):
    """The trivial Python stage of row (c)."""

    def process_document(self, doc):
        doc.set_field("py_seen", True)


def builtin_stages() -> list:
    return [getattr(stages, cls)(name=cls, **cfg) for cls, cfg in STAGES]


def _text(value) -> str:
    """A field's first value as text, as Concatenate reads it."""
    if isinstance(value, list):
        value = value[0]
    return value if isinstance(value, str) else json.dumps(value)


def edit_dict(d: dict) -> dict:
    """The six stages' edits, by hand, on a plain dict."""
    for src, dst in (("title", "title_display"), ("brand", "brand_facet")):  # CopyFields
        if src in d:
            d[dst] = d[src]
    for old, new in (("review_count", "reviews"), ("stock_count", "stock")):  # RenameFields
        if old in d:
            d[new] = d.pop(old)
    d["source"] = "catalog"  # SetStaticValues
    d["indexed"] = True
    for f in ("title", "brand", "description"):  # TrimWhitespace
        v = d.get(f)
        if isinstance(v, str):
            d[f] = v.strip()
        elif isinstance(v, list):
            d[f] = [x.strip() if isinstance(x, str) else x for x in v]
    d["label"] = f"{_text(d['brand'])}: {_text(d['title'])} [{_text(d['sku'])}]"  # Concatenate
    for src, dst in (("categories", "category_count"), ("tags", "tag_count")):  # Length
        v = d.get(src)
        d[dst] = len(v) if isinstance(v, list) else int(src in d)
    return d


def rust_numbers() -> dict:
    out = subprocess.run(
        ["cargo", "bench", "--quiet", "--bench", "pipeline_bench"],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def batch_ns(fn) -> float:
    return timeit.Timer(fn).timeit(number=NUMBER) / NUMBER * 1e9


def main() -> None:
    rust = rust_numbers()
    rust_only = Pipeline(builtin_stages())
    with_py = Pipeline(builtin_stages() + [MarkSeen({}, name="py_seen")])

    # The three Python variants must produce the same document.
    expected = edit_dict(json.loads(SAMPLE))
    (got,) = rust_only.process(Document.from_json(SAMPLE))
    assert got.to_dict() == expected, (got.to_dict(), expected)
    (got,) = with_py.process(Document.from_json(SAMPLE))
    assert got.to_dict() == {**expected, "py_seen": True}

    cases = {
        "from_json": lambda: Document.from_json(SAMPLE),
        "b": lambda: rust_only.process(Document.from_json(SAMPLE)),
        "c": lambda: with_py.process(Document.from_json(SAMPLE)),
        "loads": lambda: json.loads(SAMPLE),
        "d": lambda: edit_dict(json.loads(SAMPLE)),
    }
    runs: dict[str, list[float]] = {k: [] for k in [*cases, "b_net", "c_net", "d_net", "py_stage"]}
    for _ in range(ROUNDS):  # interleaved, so noise hits every case alike
        t = {k: batch_ns(fn) for k, fn in cases.items()}
        for k, v in t.items():
            runs[k].append(v)
        runs["b_net"].append(t["b"] - t["from_json"])
        runs["c_net"].append(t["c"] - t["from_json"])
        runs["d_net"].append(t["d"] - t["loads"])
        runs["py_stage"].append(t["c"] - t["b"])
    m = {k: statistics.median(v) for k, v in runs.items()}

    rows = [
        ("(a)  Rust: clone + 6-stage Pipeline", rust["clone_pipeline_ns"], rust["clone_ns"], rust["pipeline_ns"]),
        ("(a') Rust: parse + 6-stage Pipeline", rust["parse_pipeline_ns"], rust["parse_ns"], rust["parse_net_ns"]),
        ("(b)  Py: from_json + Pipeline.process", m["b"], m["from_json"], m["b_net"]),
        ("(c)  Py: (b) + 1 Python stage", m["c"], m["from_json"], m["c_net"]),
        ("(d)  Py: json.loads + 6 dict edits", m["d"], m["loads"], m["d_net"]),
    ]
    print(f"Pipeline benchmark ({rust['bytes']}-byte document, {rust['stages']} built-in stages; "
          f"ns/doc, median of {ROUNDS} rounds; lucille from {pathlib.Path(lucille.__file__).parent})")
    header = f"{'case':40} {'ns/doc':>9} {'input ns':>9} {'net ns':>9} {'vs (d)':>7} {'net vs (d)':>11}"
    print(header)
    print("-" * len(header))
    for name, ns, input_ns, net in rows:
        print(f"{name:40} {ns:9.1f} {input_ns:9.1f} {net:9.1f} {ns / m['d']:6.2f}x {net / m['d_net']:10.2f}x")
    print("-" * len(header))
    print(f"One Python stage, (c) - (b): {m['py_stage']:.1f} ns/doc "
          f"({m['py_stage'] / m['b_net']:.2f}x the six built-in stages' net time from Python, "
          f"{m['py_stage'] / rust['pipeline_ns']:.2f}x the Rust 6-stage net)")


if __name__ == "__main__":
    main()
