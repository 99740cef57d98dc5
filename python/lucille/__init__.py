"""Lucille-rs: search ETL with a Rust core.

Connectors read sources, a pipeline of stages enriches each document, and an indexer batches
documents into a search engine, while the Publisher accounts for every document.
"""

import os as _os

# The native module allocates with mimalloc, which reads its options from the environment when
# the module loads. Its default returns freed pages to the OS after 10 ms; documents are
# allocated and freed at a high rate across threads, so each returned page was soon faulted
# back in and zeroed again (~5% of a run's CPU in the kernel's clear_page under perf). A
# one-second delay keeps them; a user's own setting wins.
_os.environ.setdefault("MIMALLOC_PURGE_DELAY", "1000")

from lucille._lucille import (  # noqa: E402
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
    run_service,
    search,
    embed,
    serve,
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
    "run_service",
    "search",
    "embed",
    "serve",
    "stages",
    "validate",
]
