"""The base class for connectors written in Python."""

from __future__ import annotations

from typing import Any, Optional

from lucille._lucille import Publisher


class Connector:
    """Subclass this and implement :meth:`execute`; name the class in a config as
    ``class: "module:Class"``. ``self.config`` is the connector's config block, ``self.name``
    its name. The runner calls ``pre_execute``, ``execute``, ``post_execute`` (only after
    ``execute`` succeeded) and ``close`` (always), in that order.
    """

    def __init__(self, config: Optional[dict[str, Any]] = None) -> None:
        self.config: dict[str, Any] = dict(config or {})
        self.name: Optional[str] = self.config.get("name")

    def pre_execute(self, run_id: str) -> None:
        """Set-up that should not be repeated on retry."""

    def execute(self, publisher: Publisher) -> None:
        """Read the source and ``publisher.publish(Document(...))`` each document."""
        raise NotImplementedError(f"{type(self).__name__} must implement execute")

    def post_execute(self, run_id: str) -> None:
        """Called only when execute succeeded."""

    def close(self) -> None:
        """Always called."""

    def doc_id(self, id: str) -> str:
        """The id with this connector's ``docIdPrefix``."""
        return f"{self.config.get('docIdPrefix', '')}{id}"
