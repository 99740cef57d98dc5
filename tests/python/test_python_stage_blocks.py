"""A Python stage that processes one document at a time is handed a worker's whole block in one
call (one acquisition of the interpreter's lock per block): the block then runs eagerly, stage
by stage, with each document's own outcome (FAIL, children before their parent) as before."""

import threading
import time
from typing import Iterator, Optional

import pytest

import lucille
from lucille import Document

CALLS: list[tuple[str, str]] = []
LOCK = threading.Lock()


class Logged(lucille.Stage):
    """Logs (tag, id) per call; stage "a" holds document 0 a while (so the rest queue up),
    fails document 5 and gives document 9 two children."""

    def process_document(self, doc: Document) -> Optional[list[Document]]:
        tag = self.config["tag"]
        with LOCK:
            CALLS.append((tag, doc.id))
        if tag == "a" and doc.id == "0":
            time.sleep(0.3)
        if tag == "a" and doc.id == "5":
            raise ValueError("five is rejected")
        if tag == "a" and doc.id == "9":
            return [Document("9-x"), Document("9-y")]
        return None


@pytest.fixture(autouse=True)
def _reset() -> Iterator[None]:
    CALLS.clear()
    yield


def test_a_python_stage_gets_blocks_and_each_document_keeps_its_own_outcome() -> None:
    n = 1000
    result = lucille.run(config={
        "connectors": [{"name": "seq", "class": "SequenceConnector", "numDocs": n, "pipeline": "p"}],
        "pipelines": [{"name": "p", "stages": [
            {"class": f"{__name__}:Logged", "tag": "a"},
            {"class": f"{__name__}:Logged", "tag": "b"},
        ]}],
        "worker": {"threads": 1},
    }, mode="test")
    c = result.connectors[0]
    assert (c.succeeded, c.failed) == (n - 1 + 2, 1), result.summary
    failed = [(doc_id, "five is rejected" in (message or ""))
              for doc_id, kind, message in result.events if kind == "FAIL"]
    assert failed == [("5", True)]
    # Stage "a" ran several documents before stage "b" ran the first of them: a block went
    # through "a" in one call. (Run one document at a time, "b" follows "a" for every one.)
    # (The failed document 5 is the one "a" may be followed by "a" without blocks.)
    in_a_row = sum(1 for x, y in zip(CALLS, CALLS[1:]) if x[0] == y[0] == "a" and x[1] != "5")
    assert in_a_row > 0, CALLS[:40]
    # Per document: "a" before "b"; the failed one never reaches "b"; the children only "b".
    seen_a = set()
    for tag, doc_id in CALLS:
        if tag == "a":
            seen_a.add(doc_id)
        else:
            assert doc_id in seen_a or doc_id in ("9-x", "9-y"), doc_id
    assert ("b", "5") not in CALLS
    assert [d for t, d in CALLS if t == "b"].count("9-x") == 1
    indexed = [d.id for d in result.documents]
    assert indexed.index("9-x") < indexed.index("9-y") < indexed.index("9")
