"""A toy embedding stage and a small connector for the LanceDB example.

The embedding is a deterministic hashed bag of words (no model download), enough to show that
similar texts land near each other in the vector index.
"""

from __future__ import annotations

import hashlib

import numpy as np

import lucille

DIM = 64

ARTICLES = [
    ("rust", "Rust is a systems programming language focused on safety and speed"),
    ("python", "Python is a programming language loved for notebooks and data science"),
    ("tea", "Green tea is brewed from the leaves of the tea plant"),
    ("coffee", "Coffee is brewed from roasted coffee beans"),
    ("lucille", "Lucille is a search ETL framework that indexes documents into search engines"),
]


def embed(text: str) -> np.ndarray:
    v = np.zeros(DIM, dtype=np.float32)
    for word in text.lower().split():
        h = int.from_bytes(hashlib.md5(word.encode()).digest()[:4], "little")
        v[h % DIM] += 1.0
    n = np.linalg.norm(v)
    return v / n if n else v


class Articles(lucille.Connector):
    def execute(self, publisher: lucille.Publisher) -> None:
        for key, text in ARTICLES:
            publisher.publish(lucille.Document(key, {"title": key, "body": text}))


class Embed(lucille.Stage):
    def process_document(self, doc: lucille.Document) -> None:
        doc.set_vector("embedding", embed(doc.get_string("body") or ""))
