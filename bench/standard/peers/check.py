#!/usr/bin/env python3
"""Checks a peer row's output against the reference (`pure_python.py`'s output on the same
corpus). Exits 1 with what differs.

    python check.py jsonl REFERENCE.jsonl OUT.jsonl [--pathway]
    python check.py tantivy REFERENCE.jsonl INDEX_DIR [--samples 8]

jsonl: every output line parsed, matched to the reference record of the same id, and compared as
dicts (key order and formatting do not matter); no id missing, none extra, none twice. With
--pathway, the id is read from `doc_id` (Pathway reserves `id`) and Pathway's `time` and `diff`
columns are dropped after checking each `diff` is 1 (an insert).

tantivy: the index holds as many documents as the reference; a few documents spread over the
corpus, looked up by id, come back (the stored `id` plus the `_source` JSON) equal to the
reference records; and a word of each of their titles is indexed in `_fields.title`. Needs the
`tantivy` package (run with the peers' interpreter).
"""
import json
import re
import sys


def reference_offsets(path):
    """id -> byte offset of its line in the reference (the records stay on disk)."""
    offsets = {}
    with open(path, "rb") as f:
        pos = 0
        for line in f:
            offsets[json.loads(line)["id"]] = pos
            pos += len(line)
    return offsets


def read_at(f, offset):
    f.seek(offset)
    return json.loads(f.readline())


def short(v, n=120):
    s = json.dumps(v, ensure_ascii=False)
    return s if len(s) <= n else s[:n] + "..."


def differences(want, got):
    """Field by field: what differs between the reference record and an output record."""
    out = []
    for k in sorted(set(want) | set(got)):
        if k not in got:
            out.append(f"{k}: missing (reference {short(want[k])})")
        elif k not in want:
            out.append(f"{k}: not in the reference ({short(got[k])})")
        elif want[k] != got[k]:
            g, w = got[k], want[k]
            if isinstance(g, str) and isinstance(w, str) and max(len(g), len(w)) > 60:
                # Long strings: show them from a little before the first character that differs.
                i = next((i for i, (a, b) in enumerate(zip(g, w)) if a != b), min(len(g), len(w)))
                at = max(0, i - 20)
                g, w = f"...{g[at:at + 60]}...", f"...{w[at:at + 60]}..."
                k = f"{k} (from character {at})"
            out.append(f"{k}: {short(g)} != reference {short(w)}")
    return out


SHOWN = 5


def check_jsonl(ref, out, pathway=False):
    """(problems, records read): every line is checked; the first few problems are described,
    and the last entry counts them all."""
    offsets = reference_offsets(ref)
    seen = set()
    problems = []
    bad = 0
    n = 0
    with open(ref, "rb") as rf, open(out, "rb") as of:
        for lineno, line in enumerate(of, 1):
            if not line.strip():
                continue
            n += 1
            try:
                got = json.loads(line)
            except ValueError as e:
                bad += 1
                if len(problems) < SHOWN:
                    problems.append(f"line {lineno}: not a JSON record ({e})")
                continue
            problem = None
            if pathway:
                if got.pop("diff", None) != 1:
                    problem = f"line {lineno}: Pathway diff is not 1 (not an insert)"
                got.pop("time", None)
                if "doc_id" in got and "id" not in got:
                    got["id"] = got.pop("doc_id")
            doc_id = got.get("id")
            if doc_id not in offsets:
                problem = f"line {lineno}: id {doc_id!r} is not in the reference"
            elif doc_id in seen:
                problem = f"line {lineno}: id {doc_id!r} written twice"
            else:
                seen.add(doc_id)
                diff = differences(read_at(rf, offsets[doc_id]), got)
                if diff:
                    problem = problem or f"id {doc_id}: " + "; ".join(diff)
            if problem:
                bad += 1
                if len(problems) < SHOWN:
                    problems.append(problem)
    if bad:
        problems.append(f"{bad} of {n} output records differ from the reference"
                        + (f" (the first {SHOWN} above)" if bad > SHOWN else ""))
    if len(seen) != len(offsets):
        missing = [i for i in offsets if i not in seen]
        problems.append(f"{len(missing)} of {len(offsets)} reference records missing "
                        f"(first: {missing[:3]})")
    return problems, n


def check_tantivy(ref, index_dir, samples=8):
    import tantivy

    offsets = reference_offsets(ref)
    index = tantivy.Index.open(index_dir)
    index.reload()
    searcher = index.searcher()
    problems = []
    if searcher.num_docs != len(offsets):
        problems.append(f"the index holds {searcher.num_docs} documents, the reference "
                        f"{len(offsets)}")
    ids = list(offsets)
    picks = sorted({ids[round(i * (len(ids) - 1) / max(1, samples - 1))] for i in range(samples)})
    schema = index.schema
    with open(ref, "rb") as rf:
        for doc_id in picks:
            want = read_at(rf, offsets[doc_id])
            hits = searcher.search(tantivy.Query.term_query(schema, "id", doc_id), 2).hits
            if len(hits) != 1:
                problems.append(f"id {doc_id}: {len(hits)} documents with this id")
                continue
            doc = searcher.doc(hits[0][1])
            source = doc.get_first("_source")
            if isinstance(source, (bytes, bytearray, list)):
                source = bytes(source).decode("utf-8")
            got = {"id": doc.get_first("id"), **json.loads(source)}
            diff = differences(want, got)
            if diff:
                problems.append(f"id {doc_id}: stored document differs: " + "; ".join(diff))
            word = re.findall(r"[a-z0-9]+", want["title"].lower())[0]
            if searcher.doc_freq("_fields.title", word) < 1:
                problems.append(f"id {doc_id}: the title word {word!r} is not indexed in "
                                f"_fields.title")
    return problems, searcher.num_docs


def main(argv):
    if len(argv) < 3 or argv[0] not in ("jsonl", "tantivy"):
        print(__doc__, file=sys.stderr)
        return 2
    kind, ref, out = argv[:3]
    rest = argv[3:]
    if kind == "jsonl":
        problems, n = check_jsonl(ref, out, pathway="--pathway" in rest)
        what = f"{n} records"
    else:
        samples = int(rest[rest.index("--samples") + 1]) if "--samples" in rest else 8
        problems, n = check_tantivy(ref, out, samples)
        what = f"an index of {n} documents"
    if problems:
        print(f"{out} ({what}) does not match the reference {ref}:", file=sys.stderr)
        for p in problems:
            print(f"  {p}", file=sys.stderr)
        return 1
    print(f"{out}: {what}, equal to the reference")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
