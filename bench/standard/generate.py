#!/usr/bin/env python3
"""Writes the standard benchmark corpus: N JSON-lines records of ~920 bytes, reproducible.

Each record has an id, a title, a ~650-character body (English-like words, "the" among them,
so ReplacePatterns has work), a tags list, a year, a price, an ISO date and a nested author
object, like a catalogue or article feed.

    python3 bench/standard/generate.py --docs 1000000 --out /tmp/lucille-bench/corpus-1000000.jsonl
"""
import argparse
import json
import random
import sys

WORDS = (
    "the search engine index stores documents that a pipeline of stages enriches before the "
    "indexer sends them in batches while the publisher accounts for every record it was given "
    "and the run knows when it is done because each document reaches a terminal event data "
    "stream connector file database queue worker thread field value title body price tag "
    "library archive catalogue report article chapter section summary review market science "
    "history music travel garden kitchen energy climate ocean mountain river city village"
).split()
TAGS = ["news", "science", "books", "travel", "music", "sports", "tech", "food", "art", "health",
        "finance", "history", "design", "film", "games", "nature"]
COUNTRIES = ["US", "GB", "FR", "DE", "JP", "BR", "IN", "CA", "AU", "ES", "IT", "NL"]
FIRST = ["Ada", "Alan", "Grace", "Edsger", "Barbara", "Donald", "Margaret", "Ken", "Frances", "John"]
LAST = ["Lovelace", "Turing", "Hopper", "Dijkstra", "Liskov", "Knuth", "Hamilton", "Thompson",
        "Allen", "Backus"]


def words(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n))


def record(rng, i):
    body = words(rng, 100)
    while len(body) < 640:
        body += " " + rng.choice(WORDS)
    title = words(rng, rng.randint(5, 9)).capitalize()
    return {
        "id": f"doc-{i:08d}",
        "title": title,
        "body": body[:655],
        "tags": rng.sample(TAGS, rng.randint(2, 5)),
        "year": rng.randint(1950, 2025),
        "price": round(rng.uniform(1, 500), 2),
        "date": f"{rng.randint(1990, 2025):04d}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
        "author": {
            "name": f"{rng.choice(FIRST)} {rng.choice(LAST)}",
            "affiliation": words(rng, 3).title(),
            "country": rng.choice(COUNTRIES),
            "orcid": f"0000-000{rng.randint(1, 9)}-{rng.randint(1000, 9999)}-{rng.randint(1000, 9999)}",
        },
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    with open(a.out, "w", encoding="utf-8") as f:
        for i in range(a.docs):
            f.write(json.dumps(record(rng, i), separators=(",", ":")))
            f.write("\n")
    print(f"wrote {a.docs} records to {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
