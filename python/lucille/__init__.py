"""Lucille-rs: search ETL with a Rust core.

Connectors read sources, a pipeline of stages enriches each document, and an indexer batches
documents into a search engine, while the Publisher accounts for every document.
"""

from lucille._lucille import Document, UpdateMode, __version__

__all__ = ["Document", "UpdateMode", "__version__"]
