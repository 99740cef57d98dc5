"""Python stages named from configs in the tests."""

from typing import Any, Optional

import lucille



class Shout(lucille.Stage):
    def process_document(self, doc: lucille.Document) -> None:
        doc.set_field("shout", (doc.get_string(self.config.get("field", "text")) or "").upper())
        doc.set_field("stage_name", self.name)


class NotAStage:
    pass


class FailsInInit(lucille.Stage):
    def __init__(self, config: Optional[dict[str, Any]] = None) -> None:
        raise RuntimeError("cannot start")
