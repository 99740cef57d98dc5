#!/usr/bin/env python3
"""The standard benchmark's job in Pathway: the six edits of `pure_python.py` as Pathway
expressions (copy, rename, summary, date) and deterministic UDFs (the regex, the list length),
the corpus read with Pathway's own JSON-lines connector in static mode and written with its
JSON-lines writer.

    PATHWAY_THREADS=2 python pathway_job.py CORPUS.jsonl OUT.jsonl

Threads: Pathway's documented way to run a program on N worker threads is `pathway spawn
--threads N python PROGRAM`, which sets PATHWAY_THREADS=N (and PATHWAY_PROCESSES=1) for the
program; `run.py` sets PATHWAY_THREADS=2 itself, the same run without the launcher's own
start-up (about a second: the CLI imports Pathway too). One process, so the workers share the
engine's memory and exchange no data over sockets; the Python UDFs hold the GIL while they run.
The writer adds Pathway's own `time` and `diff` columns to each line (a stream of updates); the
check drops them after checking every `diff` is 1 (an insert).
"""
import re
import sys

import pathway as pw

THE = re.compile(r"\bthe\b")


class Record(pw.Schema):
    # "id" is reserved for Pathway's own row ids (a table cannot have a column of that name):
    # the record's id is read into doc_id (json_field_paths below) and written as doc_id.
    doc_id: str
    title: str
    body: str
    tags: list[str]
    year: int
    price: float
    date: str
    author: pw.Json


@pw.udf(deterministic=True)
def strip_the(body: str) -> str:
    return THE.sub("", body)


@pw.udf(deterministic=True)
def count(tags: list[str]) -> int:
    return len(tags)


def main(src, dst):
    t = pw.io.jsonlines.read(src, schema=Record, mode="static", json_field_paths={"doc_id": "/id"})
    out = t.select(
        pw.this.doc_id,
        pw.this.title,
        pw.this.body,
        pw.this.tags,
        pw.this.price,
        pw.this.date,
        pw.this.author,
        # 1. copy title -> title_copy
        title_copy=pw.this.title,
        # 2. rename year -> publication_year (year is not selected)
        publication_year=pw.this.year,
        # 3. summary = "{title} ({publication_year}), {price}"
        # (Pathway's float to_string writes what Python's str does for the corpus's prices,
        # 1.00 to 500.00: "396.25", "100.0"; it differs only for exponents, 1e-5 vs 1e-05.)
        summary=pw.this.title
        + " ("
        + pw.this.year.to_string()
        + "), "
        + pw.this.price.to_string(),
        # 4. body_clean = body without the word "the" (Pathway's str.replace takes no regex)
        body_clean=strip_the(pw.this.body),
        # 5. tag_count = len(tags) (no length expression for lists)
        tag_count=count(pw.this.tags),
        # 6. date_parsed: yyyy-MM-dd -> YYYY-MM-DDT00:00:00Z
        date_parsed=pw.this.date.dt.strptime("%Y-%m-%d").dt.strftime("%Y-%m-%dT%H:%M:%SZ"),
    )
    pw.io.jsonlines.write(out, dst)
    pw.run(monitoring_level=pw.MonitoringLevel.NONE)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
