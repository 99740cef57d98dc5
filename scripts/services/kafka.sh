# A Kafka-compatible broker for the distributed-mode tests: tansu (crates.io; Apache Kafka
# cannot be installed from the registries here). Sourced by scripts/test.sh
# (set -euo pipefail); can also be sourced by hand: `source scripts/services/kafka.sh`.
#
# Storage engine: SQLite (`sqlite://`, tansu's `libsql` feature), in a throwaway folder. Not
# tansu's in-memory engine: that one (and its S3 engine, the same code) answers a fetch whose
# offset falls inside a record batch with the batches that start after it, so a consumer that
# resumes from a committed offset in the middle of a batch (what every crash with commits
# behind it does) silently skips the rest of that batch. The SQLite and PostgreSQL engines
# store records one by one and serve any offset, as Kafka does
# (tests/python/test_at_least_once.py checks the SQLite and memory engines with a plain client).
#
# tansu 0.6.0 with three patches, next to this script, making it behave as Apache Kafka does:
#
# - tansu-0.6.0-group-rebalance.patch (tansu-broker, the group coordinator). Unpatched, when a
#   member dies (SIGKILL) and another member's heartbeat is the first to notice, the
#   coordinator drops the dead member but leaves the group Formed, with the dead member still
#   its leader and its partitions assigned to nobody: the survivors rejoin, get their old
#   assignment back, and the dead member's partitions are never read again (a distributed run
#   then waits for ever). Apache Kafka rebalances instead; the patch makes tansu do the same:
#   the heartbeat only reports the expired member, the removal moves the group back to Forming
#   with a new leader, and every removal starts a new generation, so an assignment the leader
#   computed for the old member list (the dead member still in it) is refused and recomputed
#   instead of leaving the dead member's partitions to nobody. The at-least-once tests kill
#   processes and start their replacements at once, so they need it.
# - tansu-0.6.0-storage-prompt-fetch.patch (tansu-storage, the fetch service). Unpatched, a
#   fetch sleeps for the rest of `fetch.wait.max.ms` after it was served, records or not, so
#   every fetch response takes the whole wait: a consumer gets one response per wait (with
#   librdkafka's 500 ms, two a second) and a message waits up to the wait at each hop. Apache
#   Kafka answers as soon as `fetch.min.bytes` of records are there; the patch does the same,
#   and a fetch that finds nothing waits for the next produce to one of its partitions (or the end
#   of the wait). bench/distributed/broker_limit.py shows both with a plain client
#   (bench/distributed/README.md).
# - tansu-0.6.0-storage-header-index.patch (tansu-storage, the SQLite engine's schema). A
#   fetch reads each record's headers by (topition, offset_id), and the header table had no
#   index on them: every record fetched scanned the whole table, so a broker serving the test
#   suite slowed down quadratically with the headers it held (Lucille-rs's messages carry two
#   or three) until a 2,000-document run stalled on it. The patch adds the index.
#
# Sources: tansu's three crates through cargo itself (`cargo fetch` of a throwaway manifest, so
# no script names a download host), their checksums checked against the ones pinned here, then
# patched and built with the published crate's own Cargo.lock.

_lucille_kafka_main() {
    local dir="${LUCILLE_TEST_KAFKA_DIR:-/tmp/lucille-test-kafka}"
    local port="${LUCILLE_TEST_KAFKA_PORT:-19092}"
    local features="dynostore,libsql"
    # Pinned: the tests pin this version's behaviour (its memory engine's fetch bug; README).
    local version="0.6.0"
    local here
    here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
    local patch="$here/tansu-$version-group-rebalance.patch"
    local storage_patches=("$here/tansu-$version-storage-prompt-fetch.patch"
        "$here/tansu-$version-storage-header-index.patch")
    local build_id
    build_id="tansu $version $features patches $(cat "$patch" "${storage_patches[@]}" | sha256sum | cut -c1-16)"
    local tansu="${CARGO_HOME:-$HOME/.cargo}/bin/tansu-lucille-test"

    # Whether this tansu binary is the patched build with the storage engines the tests use:
    # the stamp written next to it after the build, and its start banner ("storage: URL
    # [engines]", printed before it binds, so an address that cannot be bound (TEST-NET-1)
    # ends the probe at once).
    _lucille_tansu_is_current() {
        [ -x "$tansu" ] && [ "$(cat "$tansu.build" 2>/dev/null)" = "$build_id" ] || return 1
        local banner
        banner="$(timeout 10 "$tansu" broker --listener-url tcp://192.0.2.1:9 \
            --advertised-listener-url tcp://192.0.2.1:9 --storage-engine "memory://probe/" 2>&1 \
            | grep -m1 '^storage:' || true)"
        [[ "$banner" == *'"libsql"'* && "$banner" == *'"dynostore"'* ]]
    }
    # A crate's source: fetched by cargo into its download cache when it is not there yet (a
    # throwaway manifest that depends on the three crates), its pinned checksum checked, then
    # unpacked.
    _lucille_crate() {
        local name="$1" sum="$2" into="$3" cached
        local registry="${CARGO_HOME:-$HOME/.cargo}/registry/cache"
        cached="$(ls "$registry"/*/"$name-$version.crate" 2>/dev/null | head -n 1 || true)"
        if [ -z "$cached" ]; then
            mkdir -p "$into/fetch/src"
            printf '[package]\nname = "tansu-sources"\nversion = "0.0.0"\nedition = "2021"\npublish = false\n\n[dependencies]\ntansu = "=%s"\ntansu-broker = "=%s"\ntansu-storage = "=%s"\n' \
                "$version" "$version" "$version" >"$into/fetch/Cargo.toml"
            : >"$into/fetch/src/lib.rs"
            (cd "$into/fetch" && cargo fetch --quiet) || return 1
            cached="$(ls "$registry"/*/"$name-$version.crate" 2>/dev/null | head -n 1 || true)"
            [ -n "$cached" ] || return 1
        fi
        cp "$cached" "$into/$name.crate"
        echo "$sum  $into/$name.crate" | sha256sum -c --quiet \
            && tar -xzf "$into/$name.crate" -C "$into"
    }
    if ! _lucille_tansu_is_current; then
        echo "kafka.sh: building $build_id (once; ~15-25 min)"
        local work="${TMPDIR:-/tmp}/lucille-tansu-build"
        local log="${TMPDIR:-/tmp}/tansu-build.log"
        rm -rf "$work/src" && mkdir -p "$work/src"
        _lucille_crate tansu 4fdd85473ec265140488cf8d55e82b844f5c051c8916fabdd4a71156ac053f6d "$work/src" \
            && _lucille_crate tansu-broker 93c1e91b40c2a706dfdbe9a795c08c70918c874ad23f6e0e87564cc0a180e720 "$work/src" \
            && _lucille_crate tansu-storage 720d2ed8e6010c70f7f06e5af5a7274ebbf6e42fdcd9e46de542b10dc4d2f35d "$work/src" \
            || { echo "kafka.sh: could not fetch tansu $version with cargo" >&2; return 1; }
        (cd "$work/src/tansu-broker-$version" && git apply -p1 "$patch") \
            || { echo "kafka.sh: $patch does not apply" >&2; return 1; }
        local p
        for p in "${storage_patches[@]}"; do
            (cd "$work/src/tansu-storage-$version" && git apply -p1 "$p") \
                || { echo "kafka.sh: $p does not apply" >&2; return 1; }
        done
        # The published crate's own lock file pins every dependency; only the patched crates'
        # entries change (to their patched paths).
        printf '\n[patch.crates-io]\ntansu-broker = { path = "../tansu-broker-%s" }\ntansu-storage = { path = "../tansu-storage-%s" }\n' \
            "$version" "$version" >>"$work/src/tansu-$version/Cargo.toml"
        (cd "$work/src/tansu-$version" \
            && CARGO_TARGET_DIR="$work/target" cargo build --release --features "$features") \
            >"$log" 2>&1 || { tail -n 30 "$log" >&2; return 1; }
        mkdir -p "$(dirname "$tansu")"
        cp "$work/target/release/tansu" "$tansu.new" && mv "$tansu.new" "$tansu"
        echo "$build_id" >"$tansu.build"
        rm -rf "$work" 2>/dev/null || true
        _lucille_tansu_is_current \
            || { echo "kafka.sh: $tansu is not $build_id after building it" >&2; return 1; }
    fi
    export LUCILLE_TEST_TANSU="$tansu"
    mkdir -p "$dir"
    if [ -f "$dir/pid" ] && [ -f "$dir/port" ] && kill -0 "$(cat "$dir/pid")" 2>/dev/null \
        && [ "$(cat "$dir/build" 2>/dev/null)" = "$build_id" ] \
        && (echo >"/dev/tcp/127.0.0.1/$(cat "$dir/port")") 2>/dev/null; then
        port="$(cat "$dir/port")"
    else
        # One started by another build: replaced.
        [ -f "$dir/pid" ] && kill "$(cat "$dir/pid")" 2>/dev/null && sleep 1
        local tries=0
        while (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
            port=$((port + 1)); tries=$((tries + 1))
            [ "$tries" -lt 50 ] || { echo "kafka.sh: no free port" >&2; return 1; }
        done
        # A fresh store each start: topics and groups of earlier runs would only slow it.
        rm -rf "$dir/store"
        mkdir -p "$dir/store"
        # tansu resolves the URL's path against its working directory.
        (cd "$dir" && nohup "$tansu" broker \
            --listener-url "tcp://127.0.0.1:$port" \
            --advertised-listener-url "tcp://127.0.0.1:$port" \
            --storage-engine "sqlite://store/tansu.db" >"$dir/broker.log" 2>&1 &
         echo $! >"$dir/pid")
        echo "$port" >"$dir/port"
        echo "$build_id" >"$dir/build"
        local v
        for v in $(seq 1 100); do
            (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
            kill -0 "$(cat "$dir/pid")" 2>/dev/null || { tail -n 30 "$dir/broker.log" >&2; return 1; }
            sleep 0.2
        done
        (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null \
            || { echo "kafka.sh: tansu did not answer on $port" >&2; tail -n 30 "$dir/broker.log" >&2; return 1; }
    fi
    export LUCILLE_TEST_KAFKA_BOOTSTRAP="127.0.0.1:$port"
    echo "kafka.sh: $LUCILLE_TEST_KAFKA_BOOTSTRAP ($build_id, SQLite engine)"
}

_lucille_kafka_main
unset -f _lucille_kafka_main _lucille_tansu_is_current _lucille_crate
