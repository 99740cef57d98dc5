#!/usr/bin/env python3
"""A tour of the Lucille-rs Document: run it after `pip install .`."""

import numpy as np

import lucille
from lucille import Document, UpdateMode


def main() -> None:
    # A connector would build this from a source record, with a stable id (spec §1.2).
    doc = Document.from_json(
        '{"id": "article-42", "title": "Search ETL in practice", '
        '"body": "Lucille moves documents from sources to search engines. Every document is accounted for.", "views": "1200"}'
    )

    doc.add_to_field("tags", "search")               # tags: ["search"]
    doc.set_or_add("tags", "etl")                    # tags: ["search", "etl"]
    doc.update("title", UpdateMode.SKIP, "ignored")  # title exists: left alone
    doc.update("lang", UpdateMode.OVERWRITE, "en")
    views = doc.get_int("views")                     # "1200" read as an int
    doc.set_field("views", views)
    doc.set_nested("meta.authors[0].name", "Ada")
    doc.set_vector("embedding", np.array([0.12, -0.5, 0.33], dtype=np.float32))

    # JSONata over the document's own JSON.
    doc.set_field("summary", doc.evaluate("$substring(body, 0, 24) & '…'"))

    # A stage may split a document into children (ids parentId-N).
    for n, sentence in enumerate((doc.get_string("body") or "").split(". "), start=1):

        doc.add_child(Document(f"{doc.id}-{n}", {"text": sentence}))

    print("fields:     ", doc.field_names())
    print("tags:       ", doc.get_list("tags"))
    print("author:     ", doc.get_nested("meta.authors[0].name"))
    print("embedding:  ", doc.get_vector("embedding"))
    print("children:   ", [c.id for c in doc.children()])
    print("repr:       ", repr(doc))
    print("json:       ", doc.to_json())

    try:
        doc.get_int("meta")
    except TypeError as e:
        print("wrong type: ", e)
    try:
        doc.set_field("id", "other")
    except ValueError as e:
        print("reserved:   ", e)
    print(f"lucille-rs {lucille.__version__}: document tour complete")


if __name__ == "__main__":
    main()
