#!/usr/bin/env bash
# Builds Lucille-rs's wheel once, to install on machines without Rust (README, "Install from a
# wheel"): one abi3 wheel (cp39-abi3, any CPython >= 3.9) for this OS, architecture and libc
# family, built with maturin exactly as `pip install .` builds the package (the release
# profile, the `extension-module` feature of pyproject.toml's [tool.maturin]).
#
# On a fresh machine it needs Rust (stable) and Python >= 3.9 with maturin (`pip install
# maturin`): the maturin of the Python it builds against, else the one on PATH, else it is
# installed into ./.venv.
#
#   scripts/wheel.sh                    # dist/lucille_rs-<version>-cp39-abi3-<platform>.whl
#   scripts/wheel.sh --out /tmp/wheels  # another folder
#   scripts/wheel.sh --profile dev      # a quick, unoptimised build (tests), any cargo profile
#   scripts/wheel.sh -- --timings       # anything after `--` goes to `maturin build`
#
# PYTHON picks the interpreter maturin builds against (default: ./.venv/bin/python if there,
# else python3); the wheel is abi3 either way. Prints the wheel's path and size.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"

usage() {
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$REPO/scripts/wheel.sh"
}

OUT="$REPO/dist"
PROFILE="release"
EXTRA=()
while [ $# -gt 0 ]; do
    case "$1" in
        -o | --out) OUT="$2"; shift 2 ;;
        --out=*) OUT="${1#*=}"; shift ;;
        --profile) PROFILE="$2"; shift 2 ;;
        --profile=*) PROFILE="${1#*=}"; shift ;;
        -h | --help) usage; exit 0 ;;
        --) shift; EXTRA+=("$@"); break ;;
        *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done
# --out and PYTHON are taken from the caller's folder; the build runs in the repository's.
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
if [ -n "${PYTHON:-}" ]; then
    found="$(command -v "$PYTHON")" || { echo "PYTHON=$PYTHON: not found" >&2; exit 2; }
    PYTHON="$found"
    case "$PYTHON" in /*) ;; *) PYTHON="$PWD/$PYTHON" ;; esac
fi
cd "$REPO"
if [ -z "${PYTHON:-}" ]; then
    if [ -x .venv/bin/python ]; then PYTHON="$REPO/.venv/bin/python"; else PYTHON="$(command -v python3)"; fi
fi

if "$PYTHON" -m maturin --version >/dev/null 2>&1; then
    MATURIN=("$PYTHON" -m maturin)
elif maturin --version >/dev/null 2>&1; then
    MATURIN=(maturin)
else
    echo "== maturin not found: installing it into .venv"
    [ -x .venv/bin/python ] || python3 -m venv .venv
    .venv/bin/python -m pip install --quiet "maturin>=1.5,<2"
    MATURIN=(.venv/bin/maturin)
fi

stamp="$(mktemp)"
trap 'rm -f "$stamp"' EXIT
echo "== maturin build --profile $PROFILE --out $OUT (interpreter $PYTHON)"
start=$(date +%s)
"${MATURIN[@]}" build --profile "$PROFILE" --interpreter "$PYTHON" --out "$OUT" ${EXTRA[@]+"${EXTRA[@]}"}
end=$(date +%s)

# The wheel this build wrote (maturin replaces a file of the same name).
wheel="$(find "$OUT" -maxdepth 1 -name 'lucille_rs-*.whl' -newer "$stamp" -print | head -n 1)"
if [ -z "$wheel" ]; then
    echo "no wheel written to $OUT" >&2
    exit 1
fi
bytes=$(stat -c %s "$wheel")
echo "== wheel: $wheel"
awk -v b="$bytes" -v s="$((end - start))" \
    'BEGIN { printf "== size: %.1f MB (%d bytes), built in %d s\n", b / 1048576, b, s }'
