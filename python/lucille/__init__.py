"""Lucille-rs: search ETL with a Rust core.

Connectors read sources, a pipeline of stages enriches each document, and an indexer batches
documents into a search engine, while the Publisher accounts for every document.
"""

from lucille._lucille import Document, Pipeline, StageError, UpdateMode, __version__
from lucille.stage import Stage
from lucille import stages

__all__ = ["Document", "Pipeline", "Stage", "StageError", "UpdateMode", "stages", "__version__"]
