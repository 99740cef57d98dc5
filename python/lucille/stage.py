"""The base class for stages written in Python."""

from __future__ import annotations

from typing import Any, Iterable, Optional

from lucille._lucille import Document


class Stage:
    """Subclass this and implement :meth:`process_document`.

    One instance is made per pipeline instance (one per worker thread), so a stage may keep
    state between documents without locks. ``self.config`` is the stage's config block as a
    dict and ``self.name`` its configured name (``stage_N`` by position once in a pipeline).

    Batches: a stage may also define ``process_batch(self, docs)``, which receives a list of
    up to ``batchSize`` documents (the ``batchSize`` config key, default 1) and returns None
    or a list with one entry per document, each None or an iterable of its children. With
    ``batchSize`` above 1 a worker hands the stage that many documents at once (waiting at
    most 100 ms to fill a batch); an exception fails every document of the batch. A stage
    that defines only ``process_batch`` gets single documents as batches of one.
    """

    def __init__(self, config: Optional[dict[str, Any]] = None, name: Optional[str] = None) -> None:
        self.config: dict[str, Any] = dict(config or {})
        self.name: Optional[str] = name if name is not None else self.config.get("name")

    def start(self) -> None:
        """Called once before the first document."""

    def process_document(self, doc: Document) -> Optional[Iterable[Document]]:
        """Modify ``doc`` in place; return None, or an iterable (list, generator) of children.

        The document object is only valid during this call: keep its values, not the object.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement process_document")

    def stop(self) -> None:
        """Called once after the last document."""
