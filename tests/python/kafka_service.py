"""The Kafka-protocol broker the distributed tests use (scripts/services/kafka.sh exports its
address and, for tests that start a broker of their own, the tansu binary)."""

import signal
import subprocess
from collections.abc import Iterable
from typing import Any

from services import service_env


def bootstrap() -> str:
    return service_env("LUCILLE_TEST_KAFKA_BOOTSTRAP", "kafka.sh")


def tansu() -> str:
    return service_env("LUCILLE_TEST_TANSU", "kafka.sh")


def stop_gracefully(procs: "Iterable[subprocess.Popen[Any]]", secs: float = 60) -> None:
    """SIGTERM to every long-running process still up (workers, indexers), then waits for each
    (killed after `secs`): they finish what they hold and commit their offsets."""
    procs = list(procs)
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=secs)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
