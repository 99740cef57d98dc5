"""Lucille's own configs, run here unchanged: a ratchet on how many of them Lucille-rs accepts.

The corpus is `../shared/conformance/lucille` (Lucille's example run configs, its core test run
configs and the stage confs its unit tests load; `manifest.json` says which Lucille accepts). It
is other projects' data and is read in place; where it is absent the test skips.

Every config Lucille accepts is validated as Lucille would see it: from the folder Lucille is
started in (`cwd` in the manifest: an example's root, `lucille-core` for test resources). A
stage conf is validated as the only stage of a pipeline, with the class Lucille's test builds.
Example configs that validate are also run in test mode (the indexer bypassed, as their backends
cannot be installed here). The counts only go up: lower the floors below never, raise them when
more configs pass.
"""

import json
import os
import pathlib
from typing import Any


import pytest

import lucille

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORPUS = (ROOT / ".." / "shared" / "conformance" / "lucille").resolve()

# The ratchet: counts reached so far (validated run configs, example configs that ran in test
# mode, validated stage confs). A change that lowers one fails.
FLOOR_RUN_VALID = 19
FLOOR_EXAMPLES_RAN = 2
FLOOR_STAGES_VALID = 186


def manifest() -> dict[str, Any]:
    path = CORPUS / "manifest.json"
    if not path.is_file():
        pytest.skip(f"Lucille's configs are not here ({CORPUS}); the conformance corpus lives beside the repository as ../shared")
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def only_fixtures(m: dict[str, Any], errors: list[str]) -> bool:
    """Whether every error names a class that exists only in Lucille's test code."""
    fixtures = m["test_fixture_classes"]
    return bool(errors) and all(
        any(f'.{f}"' in e or f'"{f}"' in e for f in fixtures) for e in errors
    )


def run_configs(m: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in m["configs"] if c["kind"] == "run" and c["lucille_expects"] == "valid"]


def stage_configs(m: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in m["configs"] if c["kind"] == "stage" and c["lucille_expects"] == "accept"]


def validate_run_config(c: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> tuple[str, list[str]]:
    monkeypatch.chdir(CORPUS / c["cwd"])
    rel = os.path.relpath(CORPUS / c["path"], CORPUS / c["cwd"])
    return rel, lucille.validate(rel)


def test_lucille_run_configs_validate_and_examples_run(monkeypatch: pytest.MonkeyPatch) -> None:
    m = manifest()
    configs = run_configs(m)
    valid = ran = examples = fixtures = 0
    failures = []
    for c in configs:
        rel, errors = validate_run_config(c, monkeypatch)
        fixtures += only_fixtures(m, errors)
        if errors:
            failures.append(f"{c['path']}: {errors[0]}")
        else:
            valid += 1
        if c["source"] != "example":
            continue
        examples += 1
        if errors:
            continue
        result = lucille.run(rel, mode="test", progress=False)
        if result.status == "Success":
            ran += 1
        else:
            failures.append(f"{c['path']}: run: {result.summary.splitlines()[1:2]}")
    print(
        f"\nLucille run configs: {valid}/{len(configs)} validated; "
        f"examples: {ran}/{examples} ran in test mode; "
        f"{fixtures} fail only on classes of Lucille's test code"
    )
    for f in failures:
        print("  " + f[:300])
    assert valid >= FLOOR_RUN_VALID, f"run configs validated: {valid}, was {FLOOR_RUN_VALID}"
    assert ran >= FLOOR_EXAMPLES_RAN, f"examples ran: {ran}, was {FLOOR_EXAMPLES_RAN}"


def test_lucille_stage_confs_validate(monkeypatch: pytest.MonkeyPatch) -> None:
    m = manifest()
    configs = stage_configs(m)
    valid = fixtures = 0
    failures = []
    for c in configs:
        monkeypatch.chdir(CORPUS / c["cwd"])
        rel = os.path.relpath(CORPUS / c["path"], CORPUS / c["cwd"])
        try:
            stage = json.loads(lucille.render(rel, json=True))
        except lucille.ConfigError as e:
            failures.append(f"{c['path']}: {e}")
            continue
        # StageFactory builds the class the test names, whatever the conf's own `class` says.
        stage["class"] = c["stage"]
        config = {
            "connectors": [{"name": "c", "class": "SequenceConnector", "numDocs": 1, "pipeline": "p"}],
            "pipelines": [{"name": "p", "stages": [stage]}],
        }
        errors = lucille.validate(config=config, base_dir=str((CORPUS / c["path"]).parent))
        fixtures += only_fixtures(m, errors)
        if errors:
            failures.append(f"{c['path']}: {errors[0]}")
        else:
            valid += 1
    print(
        f"\nLucille stage confs: {valid}/{len(configs)} validated; "
        f"{fixtures} fail only on classes of Lucille's test code"
    )
    for f in failures:
        print("  " + f[:300])
    assert valid >= FLOOR_STAGES_VALID, f"stage confs validated: {valid}, was {FLOOR_STAGES_VALID}"
