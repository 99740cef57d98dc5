"""The Kafka-protocol broker the distributed tests use (scripts/services/kafka.sh exports its
address and, for tests that start a broker of their own, the tansu binary)."""

import os

import pytest


def service_env(name: str) -> str:
    """The value of `name`; skips the test when it is not set (fails it under
    LUCILLE_REQUIRE_SERVICES=1)."""
    value = os.environ.get(name)
    if not value:
        msg = f"{name} is not set (source scripts/services/kafka.sh)"
        if os.environ.get("LUCILLE_REQUIRE_SERVICES") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    return value


def bootstrap() -> str:
    return service_env("LUCILLE_TEST_KAFKA_BOOTSTRAP")
