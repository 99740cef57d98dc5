"""The Python stage of the standard benchmark's row 3: sets a field from another."""
import lucille


class TitleLength(lucille.Stage):
    def process_document(self, doc):
        doc.set_field("title_len", len(doc.get_string("title") or ""))
