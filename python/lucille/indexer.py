"""The base class for indexers written in Python (LanceDB, Chroma, pgvector, ...)."""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence, Union

from lucille._lucille import Document

#: What a batch call returns: ``None`` when every document succeeded, a sequence with one entry
#: per document (``None`` for success, an error message for a rejection), or a mapping of
#: rejected document id -> error message. Raising fails every document of the call.
BatchErrors = Optional[Union[Sequence[Optional[str]], Mapping[str, str]]]


class Indexer:
    """Subclass this and implement :meth:`send_batch`; name the class in a config as
    ``indexer { class: "module:Class", batchSize: 100, ... }``. ``self.config`` is the indexer
    block as a dict (your own keys sit beside Lucille's). The Rust indexer thread batches
    documents by ``batchSize`` / ``batchTimeout``, applies ``idOverrideField``, whitelist /
    blacklist and deletion markers, and turns each document's result into its FINISH or FAIL
    event. Operations reach you in arrival order: a run of upserts, then a run of deletes, ...
    """

    def __init__(self, config: Optional[dict[str, Any]] = None) -> None:
        self.config: dict[str, Any] = dict(config or {})

    def validate_connection(self) -> None:
        """Called once before the run; raise to fail the run up front."""

    def send_batch(self, docs: list[Document]) -> BatchErrors:
        """Write (upsert by ``doc.id``) these documents. Children a stage attached to one
        (``doc.add_child``) come with it: ``doc.children()``, filtered by whitelist /
        blacklist as the document is."""
        raise NotImplementedError(f"{type(self).__name__} must implement send_batch")

    def delete_batch(self, ids: list[str]) -> BatchErrors:
        """Delete these ids (documents marked by ``deletionMarkerField``)."""
        raise NotImplementedError(f"{type(self).__name__} does not support deletes")

    def delete_by_field(self, field: str, value: str) -> BatchErrors:
        """Delete every document whose ``field`` equals ``value`` (``deleteByFieldField``)."""
        raise NotImplementedError(f"{type(self).__name__} does not support delete by field")

    def close(self) -> None:
        """Called at the end of the run: flush and make writes durable."""
