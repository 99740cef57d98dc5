"""Lucille-rs: search ETL with a Rust core.

Connectors read sources, a pipeline of stages enriches each document, and an indexer batches
documents into a search engine, while the Publisher accounts for every document.
"""

from lucille._lucille import (
    ConfigError,
    ConnectorResult,
    Document,
    Pipeline,
    Publisher,
    RunResult,
    StageError,
    UpdateMode,
    __version__,
    render,
    run,
    search,
    validate,
)
from lucille.connector import Connector
from lucille.indexer import Indexer
from lucille.stage import Stage
from lucille import stages

__all__ = [
    "ConfigError",
    "Connector",
    "ConnectorResult",
    "Document",
    "Indexer",
    "Pipeline",
    "Publisher",
    "RunResult",
    "Stage",
    "StageError",
    "UpdateMode",
    "__version__",
    "render",
    "run",
    "search",
    "stages",
    "validate",
]
