"""A Python stage used by examples/pipeline.conf."""

import lucille


class Describe(lucille.Stage):
    """Writes a short description built from fields the earlier stages set."""

    def process_document(self, doc: lucille.Document) -> None:
        title = doc.get_string("title") or ""
        doc.set_field("description", f"{doc.get_string('kind')} #{doc.id}: {title} ({len(title)} chars)")
