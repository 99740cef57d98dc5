"""Reading a JSONL indexer's output, possibly while a run still writes it."""

import json
import pathlib


def ids_in(path: pathlib.Path) -> list[str]:
    """Ids of the complete lines. The file may be read while a run writes it, or after a run
    was killed mid-write: a batch lands with one write(2), which a concurrent reader, or
    SIGKILL, can see half done, so a last line without its newline is not a document yet."""
    if not path.exists():
        return []
    text = path.read_text()
    complete = text[: text.rfind("\n") + 1]
    return [json.loads(line)["id"] for line in complete.splitlines() if line.strip()]
