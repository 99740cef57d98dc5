"""A worker process of a run with ``worker { processes: N }``: the run starts one per worker
thread as ``python -m lucille._worker_process`` and feeds it documents over stdin; it runs the
pipeline (Python stages on this process's own interpreter, so on a core of its own) and writes
the outputs back. Its stdout carries only that protocol: whatever a stage prints goes to stderr.
"""

from __future__ import annotations

import os
import signal
import sys


def main() -> None:
    # Ctrl-C reaches the whole process group: the run drains gracefully and ends this process
    # by closing its input; an interrupt here would fail the document a stage is working on.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # The protocol keeps the real stdout; fd 1 and sys.stdout now lead to stderr.
    protocol = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    from lucille._lucille import _serve_pipeline

    limit_memory(os.environ.pop("LUCILLE_WORKER_MEMORY_BYTES", None))
    _serve_pipeline(0, protocol)


def limit_memory(limit: str | None) -> None:
    """``worker.maxProcessMemoryBytes``: caps this process's data segment (heap and private
    writable mappings), so a stage that allocates without bound gets a ``MemoryError`` (its
    document FAILs) or, in native code, ends this process (the run FAILs its document and
    starts another process) instead of exhausting the machine."""
    if not limit:
        return
    import resource

    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    n = int(limit)
    if hard != resource.RLIM_INFINITY:
        n = min(n, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (n, n))


if __name__ == "__main__":
    main()
