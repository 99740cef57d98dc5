"""JSON log lines (`log { format: json }`, `--log-format json`): one object per line, for log
shippers. The extension gives each record of the "lucille" logger its parts as
`record.lucille` (target, message, run id, fields); records from elsewhere are written with what
the record itself holds."""

from __future__ import annotations

import datetime
import json
import logging
import sys
import threading
from typing import Any


class JsonFormatter(logging.Formatter):
    """A record as one JSON object: timestamp (UTC, ISO 8601), level, target, message, run_id
    (when the line belongs to a run), fields (the event's own), exception (a traceback)."""

    def format(self, record: logging.LogRecord) -> str:
        parts: dict[str, Any] = getattr(record, "lucille", None) or {}
        stamp = datetime.datetime.fromtimestamp(record.created, datetime.timezone.utc)
        line: dict[str, Any] = {
            "timestamp": stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname,
            "target": parts.get("target") or record.name,
            "message": parts["message"] if "message" in parts else record.getMessage(),
        }
        if parts.get("run_id"):
            line["run_id"] = parts["run_id"]
        if parts.get("fields"):
            line["fields"] = parts["fields"]
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


class JsonLogs:
    """The "lucille" logger writing JSON lines to stderr, its records kept from the handlers
    above it (so nothing is written twice, once as text); `detach` puts it back as it was.
    Runs that overlap (threads of one process) share one attachment: the first attaches, the
    last to end detaches."""

    _lock = threading.Lock()
    _users = 0
    _saved: tuple[logging.Handler, bool, int] | None = None

    def __init__(self) -> None:
        with JsonLogs._lock:
            JsonLogs._users += 1
            self.attached = True
            if JsonLogs._users > 1:
                return
            logger = logging.getLogger("lucille")
            handler = logging.StreamHandler(sys.stderr)
            handler.setFormatter(JsonFormatter())
            JsonLogs._saved = (handler, logger.propagate, logger.level)
            logger.addHandler(handler)
            logger.propagate = False
            # What is written is what the extension emits: its filter (LUCILLE_LOG, info by
            # default) decides, not the root logger's level (WARNING when nothing set logging
            # up).
            logger.setLevel(logging.DEBUG)

    def detach(self) -> None:
        with JsonLogs._lock:
            if not self.attached:
                return
            self.attached = False
            JsonLogs._users -= 1
            if JsonLogs._users > 0 or JsonLogs._saved is None:
                return
            handler, propagate, level = JsonLogs._saved
            JsonLogs._saved = None
            logger = logging.getLogger("lucille")
            logger.removeHandler(handler)
            logger.propagate = propagate
            logger.setLevel(level)


def attach_json() -> JsonLogs:
    return JsonLogs()
