#!/usr/bin/env bash
# Fuzzes each cargo-fuzz target in fuzz/ for SECONDS (default 60), one at a time, and prints
# a table: target, executions, exec/s, crashes. Not part of scripts/test.sh (CI time).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# Needs cargo-fuzz (`cargo install cargo-fuzz`). libFuzzer needs nightly compiler flags; on a
# stable toolchain they are allowed with RUSTC_BOOTSTRAP=1, which this script sets.
# Corpora live in fuzz/corpus/<target>/ (committed, minimised with `cargo fuzz cmin` after each
# run); each run also reads seeds made from the project's test data (tests/data and the test
# folders of crates/lucille-hocon and crates/lucille-jsonata). A crash stops libFuzzer: the
# input is saved in fuzz/artifacts/<target>/ and
# fuzzing resumes for the time left, so several crashes can be counted. Each crash found must
# become a regression test in the main crate (see docs/RELIABILITY.md, "Fuzzing").
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"

SECONDS_PER_TARGET="${1:-60}"
shift || true
ALL_TARGETS=(document_json nested_path hocon jsonata file_csv file_jsonl file_xml)
if [ "$#" -gt 0 ]; then TARGETS=("$@"); else TARGETS=("${ALL_TARGETS[@]}"); fi

export RUSTC_BOOTSTRAP=1
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/fuzz/target}"
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "cargo-fuzz is missing: cargo install cargo-fuzz" >&2
    exit 2
fi

SEEDS="$(mktemp -d)"
trap 'rm -rf "$SEEDS"' EXIT

# ----- seeds from the project's test data -----
seed() { # seed TARGET NAME < content
    mkdir -p "$SEEDS/$1"
    cat > "$SEEDS/$1/$2"
}
n=0
for f in tests/data/files/*.jsonl; do
    while IFS= read -r line || [ -n "$line" ]; do
        n=$((n + 1))
        printf '%s' "$line" | seed document_json "line$n"
        printf 'a.b[0].c\n%s' "$line" | seed nested_path "line$n"
    done < "$f"
done
for p in 'id' 'a.b' 'a.b[1].c' 'l[0][0]' 'x[0].y' 'a..b' 'a[' 'a[99999999999999999999]' 'ü.名前[3]'; do
    n=$((n + 1))
    printf '%s\n{"id":"d","a":{"b":[1,{"c":2}]},"l":[[0]]}' "$p" | seed nested_path "path$n"
done
for f in crates/lucille-hocon/tests/hocon/corpus/*.conf crates/lucille-hocon/tests/hocon/corpus/inc/*.conf crates/lucille-hocon/tests/hocon/corpus/inc/*.json examples/*.conf; do
    [ -e "$f" ] || continue
    # the first byte picks whether includes resolve (even) or not: the corpus files want them
    { printf '\n'; cat "$f"; } | seed hocon "$(basename "$f")"
done
if command -v python3 >/dev/null; then
    python3 - "$SEEDS" <<'PY'
import json, os, sys
out = os.path.join(sys.argv[1], "jsonata")
os.makedirs(out, exist_ok=True)
corpus = json.load(open("crates/lucille-jsonata/tests/jsonata/oracle_corpus.json"))
for i, case in enumerate(corpus["cases"]):
    doc = json.dumps(corpus["inputs"][case["input"]], ensure_ascii=False)
    with open(os.path.join(out, f"case{i}"), "wb") as f:
        f.write(case["expr"].encode() + b"\0" + doc.encode())
for name, doc in corpus["inputs"].items():
    with open(os.path.join(sys.argv[1], "document_json", f"input-{name}"), "wb") as f:
        f.write(json.dumps(doc, ensure_ascii=False).encode())
PY
fi
for ext in csv jsonl xml; do
    for f in tests/data/files/*."$ext" tests/data/files/junk.bin; do
        [ -e "$f" ] || continue
        # one seed per config block (the first byte chooses it, see fuzz/fuzz_targets/common.rs)
        for sel in 0 1 2 3 4 65 128; do
            { printf "\\$(printf '%03o' "$sel")"; cat "$f"; } | seed "file_$ext" "$(basename "$f").$sel"
        done
    done
done

# ----- build once, then run each target -----
echo "== building the fuzz targets (release, address sanitizer)"
if ! cargo fuzz build --fuzz-dir fuzz --target-dir "$TARGET_DIR" >"$SEEDS/build.log" 2>&1; then
    tail -40 "$SEEDS/build.log" >&2
    exit 1
fi

declare -A EXECS CRASHES
for t in "${TARGETS[@]}"; do
    corpus="fuzz/corpus/$t"
    artifacts="fuzz/artifacts/$t"
    mkdir -p "$corpus" "$artifacts" "$SEEDS/$t"
    execs=0
    crashes=0
    last_written=
    start=$(date +%s)
    while :; do
        left=$((SECONDS_PER_TARGET - ($(date +%s) - start)))
        [ "$left" -gt 0 ] || break
        log="$SEEDS/$t.log"
        ASAN_OPTIONS="detect_leaks=1" cargo fuzz run --fuzz-dir fuzz --target-dir "$TARGET_DIR" "$t" "$corpus" "$SEEDS/$t" -- \
            -max_total_time="$left" -timeout=10 -rss_limit_mb=2048 -max_len=16384 \
            -print_final_stats=1 -artifact_prefix="$artifacts/" >"$log" 2>&1
        rc=$?
        runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
        if [ -z "$runs" ]; then # a crash: libFuzzer prints the last status line instead
            runs=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#')
        fi
        execs=$((execs + ${runs:-0}))
        if [ "$rc" -ne 0 ]; then
            crashes=$((crashes + 1))
            echo "!! $t crashed (exit $rc); input and log:" >&2
            grep -E 'Test unit written|panicked|ERROR: ' "$log" | head -5 >&2
            cp "$log" "$artifacts/last-crash.log"
            # the same input again (a seed that crashes at once): stop rather than spin
            written=$(grep -o 'Test unit written to .*' "$log" | tail -1)
            [ -n "$written" ] && [ "$written" = "${last_written:-}" ] && break
            last_written="$written"
        fi
    done
    EXECS[$t]=$execs
    CRASHES[$t]=$crashes
    # keep the committed corpus minimal
    cargo fuzz cmin --fuzz-dir fuzz --target-dir "$TARGET_DIR" "$t" "$corpus" >"$SEEDS/$t.cmin.log" 2>&1 ||
        echo "cmin failed for $t (see the corpus as it is)" >&2
done

echo
printf '%-14s %12s %8s %8s %8s\n' target executions exec/s crashes corpus
for t in "${TARGETS[@]}"; do
    printf '%-14s %12s %8s %8s %8s\n' "$t" "${EXECS[$t]}" "$((EXECS[$t] / SECONDS_PER_TARGET))" \
        "${CRASHES[$t]}" "$(find "fuzz/corpus/$t" -type f | wc -l)"
done
total=0
for t in "${TARGETS[@]}"; do total=$((total + CRASHES[$t])); done
[ "$total" -eq 0 ]
