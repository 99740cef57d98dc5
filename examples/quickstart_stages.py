"""The quickstart's Python stage: derives search-friendly fields from an API record."""

from __future__ import annotations

import re

import lucille

PARAM = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class Describe(lucille.Stage):
    """Adds `title` ("json.dumps(obj, *, skipkeys=False, ...)"), `params` (parameter names)
    and `deprecated` (the docstring says so)."""

    def process_document(self, doc: lucille.Document) -> None:
        name = doc.get_string("name") or doc.id
        module = doc.get_string("module") or ""
        signature = doc.get_string("signature") or ""
        doc.set_field("title", f"{module}.{name}{signature}")
        inner = signature[1:-1] if signature.startswith("(") else ""
        params = [
            m.group(0)
            for part in inner.split(",")
            if (m := PARAM.search(part.split("=")[0].split(":")[0])) and m.group(0) != "self"
        ]
        if params:
            doc.set_field("params", params)
        doc.set_field("deprecated", "deprecated" in (doc.get_string("doc") or "").lower())
