#!/usr/bin/env python3
"""The standard benchmark's embedded-index job with tantivy-py: the six edits of
`pure_python.py` in Python, then each document added to a Tantivy index built with tantivy-py,
one commit at the end. The peer of row 4 (`lucille run six_stages.conf --set indexer.type=tantivy`).

    python tantivy_py_job.py CORPUS.jsonl INDEX_DIR

The schema mirrors the one Lucille-rs's tantivy indexer builds without `tantivy.fields` (the
dynamic schema, `build_schema(&[])` in crates/lucille-tantivy/src/indexer/tantivy.rs):
- `id`: raw string, indexed without freqs/positions, stored, fast (Rust: STRING | STORED | FAST);
- `_fields`: a JSON field holding every other field, the default tokenizer, freqs and
  positions, not stored, not fast, dots not expanded (Rust: JsonObjectOptions::default() with
  that indexing);
- `_source`: the JSON text of those same fields, stored only.
The writer: 128 MB (the indexer's default writerMemoryMb) over one indexing thread per core, at
most 8 and at most one per 15 MB, as the indexer's `writer()` does (2 here); no deletes (a fresh
index, as the indexer skips them for ids new to an index that started empty).

What differs, because tantivy-py cannot say it:
- `_source` is a stored-only *bytes* field holding the UTF-8 JSON text: tantivy-py's text fields
  are always indexed (`add_text_field` has no "not indexed"), and a text field indexed with the
  raw tokenizer would add a 1.8 KB term per document that Rust's STORED-only field does not
  index. The stored bytes are the same.
- tantivy-py (0.27) turns a string that reads as an RFC 3339 date into a date inside a JSON
  field, whichever way the document is built (add_json with text or a dict, Document.from_dict):
  `date_parsed` ("2017-10-03T00:00:00Z") is indexed in `_fields` as one date term, where the
  Rust indexer keeps it a string (it builds OwnedValue::Str) and tokenizes it with positions
  (five tokens). A little less work for this row; searching `_fields.date_parsed:2017` finds
  nothing in this index.
"""
import json
import os
import shutil
import sys

import tantivy

# The six edits, as the pure-Python reference makes them (bench/standard/pure_python.py).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import pure_python  # noqa: E402
WRITER_MEMORY_MB = 128  # the tantivy indexer's default writerMemoryMb
MIN_MB_PER_THREAD = 15  # Tantivy's floor per indexing thread


def schema():
    b = tantivy.SchemaBuilder()
    b.add_text_field("id", stored=True, fast=True, tokenizer_name="raw", index_option="basic")
    b.add_json_field("_fields", stored=False, fast=False, tokenizer_name="default",
                     index_option="position")
    b.add_bytes_field("_source", stored=True, indexed=False, fast=False)
    return b.build()


def main(src, dst):
    shutil.rmtree(dst, ignore_errors=True)
    os.makedirs(dst)
    s = schema()
    index = tantivy.Index(s, path=dst)
    threads = max(1, min(WRITER_MEMORY_MB // MIN_MB_PER_THREAD, os.cpu_count() or 1, 8))
    writer = index.writer(heap_size=WRITER_MEMORY_MB * 1024 * 1024, num_threads=threads)
    n = 0
    with open(src, encoding="utf-8") as f:
        for line in f:
            d = pure_python.edit(json.loads(line))
            doc_id = d.pop("id")
            source = json.dumps(d, ensure_ascii=False, separators=(",", ":"))
            doc = tantivy.Document()
            doc.add_text("id", doc_id)
            doc.add_json("_fields", source)
            doc.add_bytes("_source", source.encode())
            writer.add_document(doc)
            n += 1
    writer.commit()
    writer.wait_merging_threads()
    print(f"{n} records", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
