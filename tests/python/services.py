"""The real servers and tools the tests use (scripts/services/*.sh start them and export where
they are). A test whose service is missing is skipped, or fails under
LUCILLE_REQUIRE_SERVICES=1 (as scripts/test.sh runs the suite)."""

import os
from typing import NoReturn

import pytest


def missing(message: str, module: bool = False) -> NoReturn:
    """Skips the test (the whole module with `module`), or fails it under
    LUCILLE_REQUIRE_SERVICES=1."""
    if os.environ.get("LUCILLE_REQUIRE_SERVICES") == "1":
        pytest.fail(message)
    pytest.skip(message, allow_module_level=module)


def service_env(name: str, script: str, module: bool = False) -> str:
    """The value of environment variable `name`, which `scripts/services/{script}` exports;
    `missing` when it is not set."""
    value = os.environ.get(name)
    if not value:
        missing(f"{name} is not set (source scripts/services/{script})", module)
    return value
